"""How every file handed from one tool to another is written: into a temporary file beside it, then
renamed over it (``os.replace``), so that a reader, or a process killed meanwhile, never sees half a file
under the file's own name."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write text (UTF-8) or bytes to path via a temporary file in the same folder and a rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if isinstance(data, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; outputs are meant to be read
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Any, sort_keys: bool = True) -> None:
    """data as indented JSON, key-sorted unless sort_keys is False (a record read back must equal the object
    written, order included), atomically, its folder made first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1, sort_keys=sort_keys) + "\n")


def write_csv_atomic(path: Path, columns: list[str], rows: Iterable[dict]) -> None:
    """rows as a CSV with these columns (a missing value empty), atomically."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, columns, restval="")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(Path(path), text.getvalue())
