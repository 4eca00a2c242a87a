"""Pinned wheels in program folders (codascore.wheels, wheels.lock): hashes are enforced, a wheel is
unpacked as pip would install it minus its test suites, failures are one clear line, and the entry scripts'
vendor/ goes first on sys.path only where the wheels load and are needed."""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from codascore import bundle, codabench, errors, wheels
from codascore.cli import main as cli_main
from codascore.competition import project_root
from codascore.registry import FAMILIES

REPO_ROOT = project_root()


WHEEL_FILES = {
    "demo_pkg/__init__.py": b"VALUE = 1\n",
    "demo_pkg/core.py": b"def f():\n    return 2\n",
    "demo_pkg/conftest.py": b"# pytest set-up\n",
    "demo_pkg/tests/test_core.py": b"def test_f():\n    pass\n",
    "demo_pkg/sub/tests/__init__.py": b"",
    "demo_pkg/sub/mod.py": b"X = 3\n",
    "demo_pkg/benchmarks/bench_core.py": b"# timing\n",
    "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
    "demo_pkg-1.0.dist-info/LICENSE": b"BSD\n",
    "demo_pkg-1.0.dist-info/top_level.txt": b"demo_pkg\n",
    "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\n",
    "demo_pkg-1.0.dist-info/RECORD": b"demo_pkg/tests/test_core.py,sha256=x,1\n",
    "demo_pkg-1.0.data/data/share/man/man1/demo.1": b".TH demo\n",
    "demo_pkg-1.0.data/purelib/demo_extra.py": b"Y = 4\n",
}
INSTALLED = {"demo_pkg/__init__.py", "demo_pkg/core.py", "demo_pkg/sub/mod.py", "demo_extra.py",
             "demo_pkg-1.0.dist-info/METADATA", "demo_pkg-1.0.dist-info/LICENSE",
             "demo_pkg-1.0.dist-info/top_level.txt"}
FILE = "demo_pkg-1.0-py3-none-any.whl"


def wheel_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def write_lock(path: Path, url: str, sha256: str, file: str = FILE, name: str = "demo_pkg",
               families: tuple[str, ...] = ("srbench",)) -> Path:
    path.write_text(yaml.safe_dump({"wheels": [{"name": name, "version": "1.0", "families": list(families),
                                                "file": file, "url": url, "sha256": sha256}]}))
    return path


@pytest.fixture
def served(tmp_path) -> tuple[Path, Path, bytes]:
    """(lock, empty cache folder, wheel bytes): a wheel 'published' at a file:// URL, locked by its hash."""
    data = wheel_bytes(WHEEL_FILES)
    published = tmp_path / "index" / FILE
    published.parent.mkdir()
    published.write_bytes(data)
    lock = write_lock(tmp_path / "wheels.lock", published.as_uri(), hashlib.sha256(data).hexdigest())
    return lock, tmp_path / "cache", data


def test_a_locked_wheel_is_unpacked_as_pip_installs_it_without_tests_and_then_served_from_the_cache(served):
    lock, cache, data = served
    files = dict(wheels.vendored_files(["srbench.synthetic"], lock, cache))
    assert set(files) == {f"vendor/{name}" for name in INSTALLED}
    assert files["vendor/demo_pkg/core.py"] == WHEEL_FILES["demo_pkg/core.py"]
    assert (cache / FILE).read_bytes() == data
    # Offline now: the cached file, checked again, is enough.
    (lock.parent / "index" / FILE).unlink()
    assert dict(wheels.vendored_files(["srbench.synthetic"], lock, cache)) == files
    # A competition of other families needs none of it, and downloads nothing.
    assert wheels.vendored_files(["uai.pr", "weak_lensing.phase1"], lock, cache / "unused") == []
    assert not (cache / "unused").exists()


def test_downloaded_bytes_other_than_the_locked_hash_are_refused_in_one_line(served, tmp_path):
    lock, cache, data = served
    other = hashlib.sha256(data + b"x").hexdigest()
    write_lock(lock, (tmp_path / "index" / FILE).as_uri(), other)
    with pytest.raises(errors.WheelError) as caught:
        wheels.vendored_files(["srbench.qualification"], lock, cache)
    message = str(caught.value)
    assert "\n" not in message
    assert f"have sha256 {hashlib.sha256(data).hexdigest()}, but wheels.lock records {other}; refused" in message
    assert not (cache / FILE).exists()


def test_a_cached_wheel_with_other_bytes_is_refused_and_left_for_the_user(served):
    lock, cache, data = served
    cache.mkdir()
    (cache / FILE).write_bytes(b"X" + data[1:])
    with pytest.raises(errors.WheelError, match=r"demo_pkg-1\.0-py3-none-any\.whl: sha256 [0-9a-f]{64}, but "
                                                r"wheels\.lock records .*; refused \(delete the file to download it again"):
        wheels.vendored_files(["srbench.synthetic"], lock, cache)
    assert (cache / FILE).read_bytes() == b"X" + data[1:]


def test_an_unreachable_wheel_with_an_empty_cache_is_one_clear_line(tmp_path):
    lock = write_lock(tmp_path / "wheels.lock", (tmp_path / "nowhere" / FILE).as_uri(), "0" * 64)
    with pytest.raises(errors.WheelError) as caught:
        wheels.vendored_files(["srbench.synthetic"], lock, tmp_path / "cache")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{FILE} is not in {tmp_path / 'cache'} and cannot be downloaded from file://")
    assert "put the file there by hand (sha256 " + "0" * 64 + ")" in message


@pytest.mark.parametrize("file, problem", [
    ("demo_pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "not a wheel for cp312"),
    ("demo_pkg-1.0-cp312-cp312-macosx_11_0_arm64.whl", "not a wheel for manylinux x86_64"),
    ("demo_pkg-1.0-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl", "not a wheel for manylinux x86_64"),
    ("demo_pkg-1.0-cp312-cp312-win_amd64.whl", "not a wheel for manylinux x86_64"),
    ("other_pkg-1.0-py3-none-any.whl", "not demo_pkg 1.0"),
    ("demo_pkg-1.0.tar.gz", "not a wheel file name"),
])
def test_a_lock_entry_for_another_interpreter_or_package_is_refused(tmp_path, file, problem):
    lock = write_lock(tmp_path / "wheels.lock", f"https://files.example/{file}", "0" * 64, file=file)
    with pytest.raises(errors.WheelError, match=f"wheels.lock: wheels\\[0\\].file '{file}': {problem}"):
        wheels.read_lock(lock)


@pytest.mark.parametrize("text, message", [
    ("- sympy\n", "must be a mapping whose `wheels` is a list"),
    ("wheels: sympy\n", "must be a mapping whose `wheels` is a list"),
    ("wheels:\n  - name: sympy\n", "wheels[0]: needs name, version, families, file, url and sha256"),
    ("wheels:\n  - just a string\n", "wheels[0]: needs name, version, families, file, url and sha256"),
    ("wheels: [\n", "not valid YAML"),
])
def test_a_malformed_lock_file_is_one_clear_error(tmp_path, text, message):
    (tmp_path / "wheels.lock").write_text(text)
    with pytest.raises(errors.WheelError) as caught:
        wheels.read_lock(tmp_path / "wheels.lock")
    assert str(caught.value).startswith("wheels.lock: ") and message in str(caught.value)


def test_the_project_lock_pins_exactly_what_the_stock_image_lacks():
    locked = {w.name: w for w in wheels.read_lock(bundle.WHEELS_LOCK)}
    assert {name: w.version for name, w in locked.items()} == {"sympy": "1.10.1", "mpmath": "1.3.0",
                                                                "h5py": "3.12.1"}
    assert all(set(w.families) <= set(FAMILIES) for w in locked.values())
    assert all(w.url.startswith("https://files.pythonhosted.org/packages/") for w in locked.values())
    assert [w.name for w in wheels.wheels_for(["srbench.synthetic"], bundle.WHEELS_LOCK)] == ["sympy", "mpmath"]
    assert [w.name for w in wheels.wheels_for(["ariel.retrieval"], bundle.WHEELS_LOCK)] == ["h5py"]
    assert wheels.wheels_for(["uai.pr", "weak_lensing.phase2"], bundle.WHEELS_LOCK) == []


def test_the_bundle_command_reports_a_wheel_it_cannot_get_in_one_line(tmp_path, monkeypatch, capsys):
    lock = write_lock(tmp_path / "wheels.lock", (tmp_path / "nowhere" / FILE).as_uri(), "0" * 64)
    monkeypatch.setattr(bundle, "WHEELS_LOCK", lock)
    monkeypatch.setattr(bundle, "WHEELS_CACHE", tmp_path / "cache")
    monkeypatch.setenv("CODASCORE_BUNDLE_SEED", "1")  # never a bundle.seed drawn into the repository
    assert cli_main(["bundle", "srbench", "--root", str(REPO_ROOT), "--out", str(tmp_path / "dist")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"downloading {FILE} into {tmp_path / 'cache'}"
    assert err.splitlines()[1].startswith(f"error: {FILE} is not in ") and len(err.splitlines()) == 2
    assert not (tmp_path / "dist" / "srbench.zip").exists()


segment = st.sampled_from(["pkg", "sub", "tests", "benchmarks", "testing", "core.py", "conftest.py", "tests.py"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(segment, min_size=1, max_size=4), min_size=1, max_size=12))
def test_unpacking_drops_exactly_the_test_suites(paths):
    names = {"/".join(["pkg", *parts, "f.py"]) for parts in paths}
    wheel = wheels.PinnedWheel("pkg", "1.0", ("srbench",), "pkg-1.0-py3-none-any.whl", "https://x/pkg-1.0-py3-none-any.whl",
                               "0" * 64)
    kept = {name for name, _ in wheels.unpacked(wheel, wheel_bytes({name: b"" for name in names}))}
    dropped = {name for name in names
               if {"tests", "benchmarks"} & set(name.split("/")[:-1])}
    assert kept == names - dropped


# ----- where vendor/ goes on sys.path

def vendor_folder(tmp_path: Path, name: str, version: str) -> Path:
    program = tmp_path / "program"
    info = program / "vendor" / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return program


@pytest.fixture
def this_interpreter_is_the_target(monkeypatch):
    """Let the running interpreter stand for the image's, whatever it is."""
    monkeypatch.setattr(codabench, "VENDOR_PYTHON", sys.version_info[:2])
    monkeypatch.setattr(codabench, "VENDOR_PLATFORM", sysconfig.get_platform())
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_vendor_goes_right_after_the_program_folder_where_it_is_needed(tmp_path, this_interpreter_is_the_target):
    program = str(vendor_folder(tmp_path, "codascore-absent-package", "1.0"))
    sys.path.insert(0, program)
    assert codabench.use_vendored_packages(program) == "first"
    assert sys.path[:2] == [program, str(Path(program) / "vendor")]


def test_vendor_goes_last_where_every_pinned_version_is_installed(tmp_path, this_interpreter_is_the_target):
    program = str(vendor_folder(tmp_path, "PyYAML", importlib.metadata.version("PyYAML")))
    assert codabench.use_vendored_packages(program) == "last"
    assert sys.path[-1] == str(Path(program) / "vendor")


def test_vendor_goes_last_under_another_interpreter(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(codabench, "VENDOR_PYTHON", (2, 7))
    program = str(vendor_folder(tmp_path, "codascore-absent-package", "1.0"))
    assert codabench.use_vendored_packages(program) == "last"
    assert sys.path[-1] == str(Path(program) / "vendor")


def test_a_program_without_vendor_leaves_sys_path_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = list(sys.path)
    assert codabench.use_vendored_packages(str(tmp_path)) == ""
    assert sys.path == before
