"""codascore pack (codascore/pack.py): a code submission's wheels are downloaded with the image's packages
pinned, checked against their RECORD and vendor.lock, unpacked into vendor/ (what the image or the program
folders have left out), zipped deterministically under a size limit, and the import proved under the
image's interpreter as the ingestion imports it. The wheels here are made by the tests and found with
--find-links --no-index: no network. The test marked ``network`` packs gplearn from PyPI and scores the zip
under the image's Python (CODASCORE_NETWORK_TESTS=1; CODASCORE_IMAGE_PYTHON, default .venv-image)."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from codascore import bundle, pack, sandbox
from codascore.cli import main as cli_main
from codascore.competition import project_root
from codascore.errors import PackError
from codascore.outcomes import ExitCode

TASK = "srbench.qualification"
REGRESSOR = """\
from sklearn.linear_model import LinearRegression
import tinymeth

est = LinearRegression()


def model(est, X):
    return tinymeth.formula(est, list(X.columns))
"""
TINYMETH = {"tinymeth/__init__.py": b"import tinydep\n\n\ndef formula(est, names):\n"
                                    b"    return tinydep.join(est, names)\n"}
TINYDEP = {"tinydep/__init__.py": b"def join(est, names):\n    terms = [f'{c!r}*{n}' for c, n in "
                                  b"zip(est.coef_, names)]\n    return ' + '.join(terms + [repr(est.intercept_)])\n"}


def make_wheel(folder: Path, name: str, version: str, files: dict[str, bytes], requires: tuple[str, ...] = (),
               record: bool = True) -> Path:
    """A pure-Python wheel, as pip wheel would make it: METADATA, WHEEL and a RECORD of sha256s."""
    info = f"{name}-{version}.dist-info"
    files = {**files,
             f"{info}/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
                 name, version, "".join(f"Requires-Dist: {r}\n" for r in requires))).encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    rows = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
            f"{len(data)}" for path, data in files.items()]
    if record:
        files[f"{info}/RECORD"] = ("\n".join(rows + [f"{info}/RECORD,,"]) + "\n").encode()
    path = Path(folder) / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


@pytest.fixture()
def team(tmp_path) -> dict:
    """A submission folder, its requirements, and a wheel folder holding tinymeth (needing tinydep) and
    two versions of tinydep, the one the 'program folder' pins and a newer one."""
    links = tmp_path / "wheels"
    links.mkdir()
    make_wheel(links, "tinymeth", "0.1", TINYMETH, requires=("tinydep",))
    make_wheel(links, "tinydep", "1.0", TINYDEP)
    make_wheel(links, "tinydep", "2.0", TINYDEP)
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "regressor.py").write_text(REGRESSOR)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tinymeth==0.1\n")
    return {"folder": folder, "requirements": requirements, "links": links}


def run_pack(team: dict, **options) -> pack.Packed:
    """pack with the test's interpreter as the image's and tinydep 1.0 as a program folder's package."""
    options = {"pip_options": ["--no-index", f"--find-links={team['links']}"],
               "program_vendor": {"tinydep": "1.0"},
               "program_files": [(f"vendor/{name}", data) for name, data in TINYDEP.items()],
               "say": lambda line: None, **options}
    return pack.pack(TASK, team["folder"], team["requirements"], sys.executable, **options)


def test_pack_vendors_what_the_image_lacks_records_hashes_and_proves_the_import(team):
    packed = run_pack(team)
    wheel = team["links"] / "tinymeth-0.1-py3-none-any.whl"
    assert [(w.name, w.version, w.sha256) for w in packed.vendored] == [
        ("tinymeth", "0.1", hashlib.sha256(wheel.read_bytes()).hexdigest())]
    assert packed.from_image == ["tinydep 1.0"]  # pinned by the constraint, not the newer 2.0
    assert packed.imported_from_vendor == ["tinymeth"]
    lock = yaml.safe_load((team["folder"] / pack.VENDOR_LOCK).read_text())
    assert lock["wheels"][0]["file"] == wheel.name and lock["requirements"] == ["tinymeth==0.1"]
    with zipfile.ZipFile(packed.zip_path) as archive:
        names = set(archive.namelist())
    assert packed.zip_path == team["folder"].parent / "team.zip"
    assert {"regressor.py", "vendor.lock", "vendor/tinymeth/__init__.py",
            "vendor/tinymeth-0.1.dist-info/METADATA"} <= names
    assert not any(name.startswith("vendor/tinydep") for name in names)
    first = packed.zip_path.read_bytes()
    assert run_pack(team).zip_path.read_bytes() == first  # deterministic, and the lock's hashes still hold


def test_a_wheel_with_other_bytes_than_vendor_lock_records_is_refused(team):
    run_pack(team)
    make_wheel(team["links"], "tinymeth", "0.1", {**TINYMETH, "tinymeth/extra.py": b"import os\n"},
               requires=("tinydep",))
    with pytest.raises(PackError, match=r"tinymeth-0\.1-py3-none-any\.whl: sha256 .* vendor\.lock records"):
        run_pack(team)


def test_a_wheel_whose_files_differ_from_its_record_is_refused(team):
    wheel = team["links"] / "tinymeth-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    files["tinymeth/__init__.py"] += b"import os; os.system('true')\n"
    wheel.unlink()
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    with pytest.raises(PackError, match="tinymeth/__init__.py does not have the sha256 its RECORD gives"):
        run_pack(team)
    assert not (team["folder"] / "vendor").exists()


def test_a_zip_over_the_size_limit_is_refused_naming_size_and_limit(team):
    with pytest.raises(PackError, match=r"the packed zip is 0\.0 MB, over the limit of 0\.0001 MB"):
        run_pack(team, max_mb=0.0001)
    assert not (team["folder"].parent / "team.zip").exists()


def test_a_failing_import_is_reported_with_its_last_lines(team):
    (team["folder"] / "regressor.py").write_text("import tinymeth\nimport no_such_method\n")
    with pytest.raises(PackError) as caught:
        run_pack(team)
    assert "importing regressor.py as the ingestion does" in str(caught.value)
    assert "ModuleNotFoundError: No module named 'no_such_method'" in str(caught.value)
    (team["folder"] / "regressor.py").write_text("import tinymeth\nest = None\n")
    with pytest.raises(PackError, match="regressor.py defines no 'model'"):
        run_pack(team)


def test_pip_failure_and_unpacked_families_are_one_clear_error(team):
    team["requirements"].write_text("tinymeth==0.1\ntinydep==2.0\n")  # against the pinned tinydep 1.0
    with pytest.raises(PackError, match="pip download failed"):
        run_pack(team)
    with pytest.raises(PackError, match="solver.py or run.sh"):
        pack.pack("uai.pr", team["folder"], team["requirements"], sys.executable)


def test_a_vendor_folder_pack_did_not_make_is_left_alone(team):
    (team["folder"] / "vendor").mkdir()
    (team["folder"] / "vendor" / "mine.py").write_text("X = 1\n")
    with pytest.raises(PackError, match="no vendor.lock says pack made it"):
        run_pack(team)
    assert (team["folder"] / "vendor" / "mine.py").is_file()


def test_command_line(team, tmp_path, monkeypatch, capsys):
    lock = tmp_path / "wheels.lock"  # the program folders' pinned wheels: none here (no download)
    lock.write_text("wheels: []\n")
    monkeypatch.setattr(bundle, "WHEELS_LOCK", lock)
    (team["folder"] / "regressor.py").write_text(REGRESSOR.replace("import tinymeth", "import tinydep, tinymeth"))
    team["requirements"].write_text("tinymeth==0.1\n")
    out = tmp_path / "out.zip"
    argv = ["pack", TASK, str(team["folder"]), "-r", str(team["requirements"]), "--python", sys.executable,
            "--no-index", "--find-links", str(team["links"]), "--out", str(out)]
    assert cli_main(argv) == ExitCode.OK
    printed = capsys.readouterr().out
    assert "vendored: tinymeth 0.1" in printed and f"packed: {out}" in printed
    assert "from vendor/: tinydep, tinymeth" in printed  # tinydep: no program folder pins it here
    assert cli_main(argv + ["--max-mb", "0.0001"]) == ExitCode.INVALID
    assert "over the limit of 0.0001 MB" in capsys.readouterr().err


def test_without_an_image_interpreter_the_error_says_how_to_make_one(team, monkeypatch, tmp_path, capsys):
    from codascore.commands import pack as command

    monkeypatch.setattr(command, "IMAGE_VENV_PYTHON", tmp_path / "absent" / "python")
    assert cli_main(["pack", TASK, str(team["folder"]), "-r", str(team["requirements"])]) == ExitCode.ORGANISER_ERROR
    assert "make .venv-image/.installed" in capsys.readouterr().err


def _import_beside_vendor(entry: str) -> str:
    return sandbox.import_participant_module(Path(entry), "regressor").where


def test_the_ingestion_import_puts_the_submission_vendor_folder_after_its_own(tmp_path):
    (tmp_path / "vendor" / "helper").mkdir(parents=True)
    (tmp_path / "vendor" / "helper" / "__init__.py").write_text("WHERE = 'vendor'\n")
    (tmp_path / "regressor.py").write_text("import sys, helper\nwhere = [helper.WHERE, sys.path[:2]]\n")
    where, path = sandbox.call_with_time_limit(_import_beside_vendor, (str(tmp_path / "regressor.py"),))
    assert where == "vendor" and path == [str(tmp_path), str(tmp_path / "vendor")]


def image_python() -> Path:
    return Path(os.environ.get("CODASCORE_IMAGE_PYTHON") or project_root() / ".venv-image" / "bin" / "python")


@pytest.mark.network
@pytest.mark.skipif(os.environ.get("CODASCORE_NETWORK_TESTS") != "1", reason="needs PyPI: CODASCORE_NETWORK_TESTS=1")
def test_gplearn_from_pypi_packed_and_scored_under_the_image_python(tmp_path, project_data):
    """The worked example of docs/srbench.md#dependencies: gplearn packed, then the zip run through the
    extracted SRBench bundle (its program folders carry sympy) under the image's interpreter."""
    from codascore import runner

    if not image_python().exists():
        pytest.skip(f"no image interpreter at {image_python()}: make .venv-image/.installed")
    folder = tmp_path / "team"
    folder.mkdir()
    text = (project_root() / "docs" / "srbench.md").read_text().split("#### Worked example")[1]
    example = text.split("```python\n")[1].split("```")[0]
    assert "generations=10" in example
    (folder / "regressor.py").write_text(example.replace("generations=10", "generations=3"))
    (tmp_path / "requirements.txt").write_text("gplearn==0.4.2\n")
    assert cli_main(["pack", TASK, str(folder), "-r", str(tmp_path / "requirements.txt"),
                     "--python", str(image_python())]) == ExitCode.OK
    assert cli_main(["bundle", "srbench", "--root", str(project_data), "--data", str(project_data),
                     "--out", str(tmp_path / "dist")]) == ExitCode.OK
    with zipfile.ZipFile(tmp_path / "dist" / "srbench.zip") as archive:
        archive.extractall(tmp_path / "bundle")
    result = runner.run(TASK, tmp_path / "team.zip", tmp_path / "run", root=tmp_path / "bundle",
                        python=str(image_python()))
    assert result.scored, result
