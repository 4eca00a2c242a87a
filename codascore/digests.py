"""Fingerprints of files and folders (sha256): whether a submission or the reference data changed since a
unit was judged (``codascore judge``), and which reference data a team was scored on (``reference_sha256``
of details.json, compared by ``codascore leaderboard``). One definition, so that a judgement's store and a
details.json downloaded from Codabench give the same digest for the same reference data."""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def folder_sha256(folder: Path) -> str:
    """The sha256 of a folder's sorted relative paths and contents (a link's target text, not what it
    points to), so that a renamed, added, removed or edited file changes it and nothing else does."""
    digest = hashlib.sha256()
    folder = Path(folder)
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        relative = path.relative_to(folder).as_posix().encode()
        if path.is_symlink():
            digest.update(b"L" + relative + b"\0" + str(path.readlink()).encode() + b"\0")
        elif path.is_file():
            digest.update(b"F" + relative + b"\0" + bytes.fromhex(file_sha256(path)))
        elif path.is_dir():
            digest.update(b"D" + relative + b"\0")
    return digest.hexdigest()
