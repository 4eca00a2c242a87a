"""``make bench``: run every benchmarks/bench_*.py (each prints its own table of median times)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    for path in sorted(HERE.glob("bench_*.py")):
        if names and path.stem.removeprefix("bench_") not in names:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module  # what dataclasses look their module up in
        spec.loader.exec_module(module)
        print(f"\n== {path.stem} ==", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
