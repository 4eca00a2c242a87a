"""The participant's wheel (``make wheel``) leaves out the modules that only generate data, as the bundle's
program folders do: nothing a participant installs rebuilds the reference data (docs/bundles.md#no-answers-reach-participants).
Everything else is in pyproject.toml; an editable install (``make install``) keeps the whole source tree.

The list is read from codascore/registry.py's GENERATION_MODULES as text: the build runs before the
package's own dependencies exist.
"""

import ast
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def generation_modules() -> set[str]:
    tree = ast.parse(Path(__file__).with_name("codascore").joinpath("registry.py").read_text())
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(getattr(target, "id", None) == "GENERATION_MODULES" for target in targets):
            return {f"codascore/{name}" for name in ast.literal_eval(node.value)}
    raise SystemExit("codascore/registry.py: GENERATION_MODULES not found")


class BuildWithoutGenerators(build_py):
    def find_package_modules(self, package, package_dir):
        left_out = generation_modules()
        return [(pkg, module, path) for pkg, module, path in super().find_package_modules(package, package_dir)
                if Path(path).as_posix() not in left_out]


setup(cmdclass={"build_py": BuildWithoutGenerators})
