"""The bundle builder: deterministic zips laid out as Codabench expects, their data generated from a private
seed, accepted by the checker, and, once extracted, scoring every starting-kit sample below what only the
answers reach."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from codascore import bundle, bundle_data, checker, competition, errors, wheels, zips
from codascore.cli import main as cli_main
from codascore.competition import project_root
from codascore.registry import GENERATION_MODULES, all_tasks, get_task

REPO_ROOT = project_root()


NAMES = sorted(competition.competition_files(REPO_ROOT))
#: The tests' private seed. Public, as the demo's seeds are; an organiser's comes from bundle.seed. The
#: Makefile's test-image uses the same one, so both share one generation of the bundle data.
TEST_SEED = 271828182845904523536028747135266249775


@pytest.fixture(scope="session")
def data_root() -> Path:
    """Every task's bundle data from TEST_SEED, cached in build/bundle-data by seed and sources as
    `codascore bundle` caches an organiser's (minutes the first time: SRBench scores its reference pool)."""
    return bundle_data.generate(REPO_ROOT, TEST_SEED, sorted(all_tasks()), progress=lambda message: None)


@pytest.fixture(scope="session")
def built(data_root, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    return {name: bundle.build_bundle(name, REPO_ROOT, out, warn=lambda message: None, data_root=data_root)
            for name in NAMES}


def test_every_competition_of_the_project_is_built():
    assert NAMES == ["ariel", "srbench", "suite", "uai", "weak_lensing"]


def test_building_twice_with_the_same_seed_gives_byte_identical_zips(data_root, built, tmp_path):
    for name, first in built.items():
        again = bundle.build_bundle(name, REPO_ROOT, tmp_path, warn=lambda message: None, data_root=data_root)
        assert again.read_bytes() == first.read_bytes(), name


@pytest.mark.parametrize("name", NAMES)
def test_zip_layout_follows_the_yaml(built, data_root, name):
    with zipfile.ZipFile(built[name]) as archive:
        infos = archive.infolist()
        names = [i.filename for i in infos]
        source = competition.competition_files(REPO_ROOT)[name]
        assert archive.read("competition.yaml") == source.read_bytes()
    data = yaml.safe_load(source.read_text())
    assert names == sorted(names)
    assert all(i.date_time == zips.ZIP_DATE and (i.external_attr >> 16) == 0o100644 for i in infos)
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".DS_Store"))]
    assert data["image"] in names and data["terms"] in names
    for task in data["tasks"]:
        for program in ("scoring_program", "ingestion_program"):
            folder = task[program].rstrip("/")
            assert f"{folder}/metadata.yaml" in names
            # The library travels inside every program folder: Codabench mounts nothing else. Its
            # generation modules do not: participants may download program folders.
            assert f"{folder}/codascore/codabench.py" in names and f"{folder}/codascore/checker/__init__.py" in names
            assert not {f"{folder}/codascore/{module}" for module in GENERATION_MODULES} & set(names)
        reference = data_root / task["reference_data"]
        if reference.is_dir():
            expected = {f"{task['reference_data'].rstrip('/')}/{n}" for n, _ in zips.folder_entries(reference)}
            assert expected <= set(names)
            assert f"{task['reference_data'].rstrip('/')}/{bundle_data.PROVENANCE_FILE}" in names
    # Each program folder carries exactly the pinned packages its tasks need (wheels.lock), without tests.
    vendored = {n for n, _ in wheels.vendored_files(
        [Path(t["reference_data"]).name for t in data["tasks"]], bundle.WHEELS_LOCK, bundle.WHEELS_CACHE)}
    for folder in {task[key].rstrip("/") for task in data["tasks"] for key in competition.PROGRAM_KEYS}:
        assert {n[len(folder) + 1:] for n in names if n.startswith(f"{folder}/vendor/")} == vendored


#: Top-level modules of the stock image's packages (and their dependencies) that a program folder, first on
#: sys.path, must not shadow.
IMAGE_MODULES = {"numpy", "scipy", "sklearn", "pandas", "yaml", "matplotlib", "numba", "llvmlite", "psutil",
                 "joblib", "threadpoolctl", "dateutil", "pytz", "tzdata", "PIL", "contourpy", "cycler",
                 "fontTools", "kiwisolver", "packaging", "pyparsing", "six", "cloudpickle", "pip"}


def importable_names(names: list[str], folder: str) -> set[str]:
    """Top-level module names that entries below folder/ make importable."""
    tops = {n[len(folder) + 1:].split("/")[0] for n in names if n.startswith(folder + "/")}
    return {t.removesuffix(".py") for t in tops if "." not in t.removesuffix(".py")}


def test_the_suite_program_folders_hold_sympy_mpmath_and_h5py_without_tests_and_shadow_nothing(built):
    with zipfile.ZipFile(built["suite"]) as archive:
        names = archive.namelist()
    for folder in ("scoring_program", "ingestion_program"):
        vendor = f"{folder}/vendor"
        for package, version in (("sympy", "1.10.1"), ("mpmath", "1.3.0"), ("h5py", "3.12.1")):
            assert f"{vendor}/{package}/__init__.py" in names
            assert f"{vendor}/{package}-{version}.dist-info/METADATA" in names
            assert f"{vendor}/{package}-{version}.dist-info/LICENSE" in names
            assert not [n for n in names if n.startswith(f"{vendor}/{package}") and "/tests/" in n]
        assert f"{vendor}/sympy/core/basic.py" in names and f"{vendor}/h5py/_hl/files.py" in names
        assert any(n.startswith(f"{vendor}/h5py.libs/libhdf5") for n in names)
        assert not [n for n in names if n.startswith(vendor) and n.endswith("/RECORD")]
        # First on sys.path, neither folder may hide a standard or an image module.
        program, vendored = importable_names(names, folder), importable_names(names, vendor)
        assert program == {"codascore", "vendor", "score" if folder == "scoring_program" else "ingest"}
        assert vendored == {"sympy", "mpmath", "h5py", "isympy"}
        assert not (program | vendored) & (set(sys.stdlib_module_names) | IMAGE_MODULES)


@pytest.mark.parametrize("name", NAMES)
def test_the_checker_accepts_every_built_bundle(built, name):
    report = checker.check_bundle(built[name])
    assert report.ok, report.messages()


def test_cli_bundle_writes_dist_name_zip_from_the_private_data_and_checks_it(data_root, built, tmp_path, capsys,
                                                                                monkeypatch):
    monkeypatch.setenv(bundle_data.SEED_ENV, str(TEST_SEED))
    assert cli_main(["bundle", "weak_lensing", "--root", str(REPO_ROOT), "--out", str(tmp_path), "--check"]) == 0
    captured = capsys.readouterr()
    assert (tmp_path / "weak_lensing.zip").read_bytes() == built["weak_lensing"].read_bytes()
    assert "OK " in captured.out and "weak_lensing.zip" in captured.out
    assert "private bundle seed: from $CODASCORE_BUNDLE_SEED" in captured.err
    assert f"from the cache {data_root}" in captured.err and str(TEST_SEED) not in captured.err + captured.out


def test_cli_bundle_refuses_an_unknown_name(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(bundle_data.SEED_ENV, str(TEST_SEED))
    assert cli_main(["bundle", "nonesuch", "--root", str(REPO_ROOT), "--out", str(tmp_path)]) == 2  # a name the command line cannot carry out: a usage error
    assert "no competition named 'nonesuch'" in capsys.readouterr().err


def test_cli_bundle_without_a_seed_draws_one_into_bundle_seed(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(bundle_data.SEED_ENV, raising=False)
    root = tmp_path / "project"
    (root / "competitions").mkdir(parents=True)
    (root / "competitions" / "empty.yaml").write_text("version: 2\n")
    assert cli_main(["bundle", "empty", "--root", str(root), "--out", str(tmp_path / "dist")]) == 0
    assert bundle_data.parse_seed((root / "bundle.seed").read_text(), "bundle.seed") >= 0
    err = capsys.readouterr().err
    assert f"private bundle seed: none found, drew a new one into {root / 'bundle.seed'}" in err


def test_a_missing_folder_of_an_available_task_stops_the_build(tmp_path):
    root = tmp_path / "project"
    (root / "competitions").mkdir(parents=True)
    (root / "competitions" / "x.yaml").write_text(
        "version: 2\ntasks:\n  - index: 0\n    scoring_program: scoring_program\n"
        "    reference_data: reference_data/weak_lensing.phase1\n")
    with pytest.raises(errors.BundleError, match=r"tasks\[0\].scoring_program names 'scoring_program'"):
        bundle.build_bundle("x", root, tmp_path / "dist", data_root=root)


# ----- end to end: every built zip, extracted, holds the private data (its starting kits without the samples
# made from the answers) and the project's programs; every starting-kit sample scores through the local runner
# from the extracted suite zip, which holds every task (the family zips hold the same files), and none reaches
# what only the answers reach (the checker's --run: rules 14, 22-27 and 30).


@pytest.fixture(scope="session")
def extracted(built, tmp_path_factory) -> dict[str, Path]:
    roots = {}
    for name, archive in built.items():
        roots[name] = tmp_path_factory.mktemp(f"extracted-{name}")
        zips.safe_extract(archive, roots[name])
    return roots


def tree(folder: Path) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in zips.folder_entries(folder)}


def kit_samples(root: Path, task: str) -> dict[str, dict[str, bytes]]:
    folder = root / "sample_submissions" / task
    return {p.name: tree(p) for p in sorted(folder.iterdir()) if p.is_dir()} if folder.is_dir() else {}


def bundle_tasks(root: Path) -> list[str]:
    competition = yaml.safe_load((root / "competition.yaml").read_text())
    return sorted({Path(t["reference_data"]).name for t in competition["tasks"]
                   if (root / t["reference_data"] / "task.yaml").is_file()})


@pytest.mark.parametrize("name", NAMES)
def test_each_extracted_bundle_holds_the_private_data_and_the_projects_programs(extracted, data_root, name):
    root = extracted[name]
    assert bundle_tasks(root)
    for task in bundle_tasks(root):
        for folder in ("reference_data", "input_data"):
            assert tree(root / folder / task) == tree(data_root / folder / task), (name, folder, task)
        shipped, generated = kit_samples(root, task), kit_samples(data_root, task)
        assert shipped == {sample: files for sample, files in generated.items()
                           if sample not in get_task(task).answer_samples}, (name, task)
        assert shipped and set(generated) - set(shipped) == set(get_task(task).answer_samples)
    for program in ("scoring_program", "ingestion_program"):
        # The vendored packages, which only a bundle holds, are checked by the layout test.
        shipped = {n: data for n, data in tree(root / program).items() if not n.startswith("vendor/")}
        assert shipped == {n: p.read_bytes() for n, p in bundle.program_entries(REPO_ROOT / program)}


@pytest.mark.parametrize("name", NAMES)
def test_every_source_yaml_passes_the_checker_from_the_project_tree(project_data, name):
    """A family YAML in competitions/ is read with the repository root as its root, as the zip will be."""
    source = competition.competition_files(project_data)[name]
    assert competition.yaml_root_of(source) == project_data.resolve()
    report = checker.check_bundle(source)
    assert report.ok, report.messages()


def test_the_logo_script_draws_a_png_like_the_committed_one(tmp_path):
    """logo.png is committed (bundles must not depend on the plotting library); its script still draws a
    PNG of the same size. Bytes are not compared: they vary with the matplotlib version."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("draw_logo", REPO_ROOT / "pages" / "draw_logo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    drawn = module.main(tmp_path / "logo.png").read_bytes()
    committed = (REPO_ROOT / "logo.png").read_bytes()
    # PNG signature, then the IHDR chunk: width and height are bytes 16-24.
    assert drawn[:8] == committed[:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn[16:24] == committed[16:24]
