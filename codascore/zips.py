"""Zip archives, written once: deterministic zips of folders (the bundle's and the runner's), and the safe
extraction of a zip a participant or an organiser gave (nothing escapes its folder, a size limit).
"""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import Iterable

from .errors import UnsafeArchiveError

#: Default limits for a submission archive (Codabench's own upload limit is in the hundreds of MB).
MAX_ARCHIVE_BYTES = 2 * 1024**3
MAX_ARCHIVE_MEMBERS = 100_000


#: Fixed timestamp of every zip entry (the earliest a zip can store).
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".git", ".venv"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}
_SKIPPED_NAMES = {".DS_Store"}


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


def zip_bytes(entries: Iterable[tuple[str, Path | bytes]], compress: bool = True) -> bytes:
    """A deterministic zip: sorted names, fixed timestamps, mode 0644, deflate level 9 (or stored)."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method, compresslevel=9) as archive:
        for name, source in sorted(entries, key=lambda item: item[0]):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o100644 << 16
            info.compress_type = method
            data = source if isinstance(source, bytes) else Path(source).read_bytes()
            archive.writestr(info, data, compress_type=method, compresslevel=9)
    return buffer.getvalue()


def folder_zip(folder: Path) -> bytes:
    return zip_bytes(folder_entries(folder), compress=False)


#: The longest name of one path component that Linux file systems create (NAME_MAX, in bytes).
MAX_NAME_BYTES = 255


def check_archive(archive: zipfile.ZipFile, max_bytes: int = MAX_ARCHIVE_BYTES,
                  max_members: int = MAX_ARCHIVE_MEMBERS) -> list[zipfile.ZipInfo]:
    """Validate every member of a zip before anything is written; return the members.

    Refused, each with a one-line reason: max_members entries or more; absolute paths, drive letters,
    ``..`` components, backslashes used as separators; entries that cannot be created (a file named ``.``
    or with no name, a component over 255 bytes, a name that is both a file and a folder); symbolic links
    and other non-regular entries (Unix mode in external_attr); a total uncompressed size over max_bytes
    (zip bombs).
    """
    members = archive.infolist()
    if len(members) >= max_members:
        raise UnsafeArchiveError(f"archive has {len(members)} entries, at or over the limit of {max_members}")
    total = 0
    files, folders = set(), set()
    for info in members:
        name = info.filename
        path = PurePosixPath(name)
        if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
            raise UnsafeArchiveError(f"archive entry {name!r} has an absolute or non-POSIX path")
        if any(part == ".." for part in path.parts):
            raise UnsafeArchiveError(f"archive entry {name!r} escapes the destination folder ('..')")
        long = next((part for part in path.parts if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES),
                    None)
        if long is not None:
            raise UnsafeArchiveError(f"archive entry {name[:60]!r}... has a name component of "
                                     f"{len(long.encode('utf-8', 'surrogateescape'))} bytes, over the "
                                     f"{MAX_NAME_BYTES} a file system allows")
        file_type = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip tool stored no type
        if file_type not in (0, stat.S_IFREG, stat.S_IFDIR):
            kind = "symbolic link" if file_type == stat.S_IFLNK else "special file"
            raise UnsafeArchiveError(f"archive entry {name!r} is a {kind}; only files and folders are allowed")
        parts = tuple(part for part in path.parts if part != ".")
        if not info.is_dir():
            if not parts:
                raise UnsafeArchiveError(f"archive entry {name!r} is a file without a name")
            files.add(parts)
        folders.update(parts[:end] for end in range(1, len(parts) + info.is_dir()))
        total += info.file_size
        if total > max_bytes:
            raise UnsafeArchiveError(f"archive expands to more than {max_bytes} bytes")
    clash = min(files & folders, default=None)
    if clash is not None:
        raise UnsafeArchiveError(f"archive holds '{'/'.join(clash)}' both as a file and as a folder")
    return members


def safe_extract(zip_path: Path, dest: Path, max_bytes: int = MAX_ARCHIVE_BYTES,
                 max_members: int = MAX_ARCHIVE_MEMBERS) -> None:
    """Extract zip_path into dest like Codabench's worker (ZipFile.extractall: no permission bits), after
    check_archive. The resolved path of every member is verified to stay inside dest."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with zipfile.ZipFile(zip_path) as archive:
        members = check_archive(archive, max_bytes, max_members)
        for info in members:
            target = (root / info.filename).resolve()
            if target != root and root not in target.parents:
                raise UnsafeArchiveError(f"archive entry {info.filename!r} escapes the destination folder")
        written = 0
        for info in members:
            target = root / info.filename
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "wb") as out:
                # Count real bytes too: file_size in the header can lie.
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > max_bytes:
                        raise UnsafeArchiveError(f"archive expands to more than {max_bytes} bytes")
                    out.write(chunk)
