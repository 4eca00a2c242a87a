"""Deterministic zips of program and data folders, as the bundle holds them.

A program folder in the bundle is self-contained: the ``codascore`` library is copied into it, so that
``score.py`` imports it from beside itself on Codabench (which mounts nothing else). Entries are sorted
and carry a fixed timestamp, so the same source always gives the same bytes.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Iterable

import codascore

LIBRARY_DIR = Path(codascore.__file__).resolve().parent
#: Fixed timestamp of every zip entry (the earliest a zip can store).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".git", ".venv"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}
_SKIPPED_NAMES = {".DS_Store"}


def project_root() -> Path:
    """The source tree the library was installed from (editable install or a checkout)."""
    return LIBRARY_DIR.parent


def folder_entries(folder: Path, prefix: str = "") -> list[tuple[str, Path]]:
    """(archive name, file) for every file below folder, sorted, caches left out. Links are refused."""
    folder = Path(folder)
    entries = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in _SKIPPED_DIRS for part in relative.parts):
            continue
        if path.is_symlink():
            raise ValueError(f"{path} is a symbolic link; bundles hold plain files only")
        if path.is_file() and path.suffix not in _SKIPPED_SUFFIXES and path.name not in _SKIPPED_NAMES:
            entries.append((prefix + relative.as_posix(), path))
    return entries


def program_entries(folder: Path) -> list[tuple[str, Path]]:
    """The files of a program folder as the bundle holds it: its own files plus the library."""
    entries = dict(folder_entries(folder))
    for name, path in folder_entries(LIBRARY_DIR, "codascore/"):
        entries.setdefault(name, path)
    return sorted(entries.items())


def zip_bytes(entries: Iterable[tuple[str, Path | bytes]]) -> bytes:
    """A deterministic zip: sorted names, fixed timestamps, mode 0644, deflate level 9."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, source in sorted(entries, key=lambda item: item[0]):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            data = source if isinstance(source, bytes) else Path(source).read_bytes()
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buffer.getvalue()


def program_zip(folder: Path) -> bytes:
    return zip_bytes(program_entries(folder))


def folder_zip(folder: Path) -> bytes:
    return zip_bytes(folder_entries(folder))
