"""``codascore check --platform-only`` agrees with the real platform's unpacker (marker codabench).

Every zip here goes both through the live site's upload (tests/codabench_site.py: the unmodified snapshot's
unpacker, v2 and v1.5 parsers), with ``codascore upload --force`` (once per zip in the session), and
through ``check --platform-only``: the platform finishes exactly the
zips the checker passes, and for every zip it refuses, the rule id of the platform's own text
(``refusal_of(details)``) is among the ids of the checker's errors, so the checker's rule covers it.

The zips: the platform's own test bundles; every zip of ``make bundle``; each broken fixture of
tests/test_checker.py (house rules the platform accepts, platform rules it refuses); and v1.5 bundles made
from the platform's own ``competition_15.zip``, one v1.5 parser rule broken each.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import yaml

from codascore import checker
from codascore.checker import refusal_of

from bundle_fixture import zip_folder
from codabench_fixture import codabench_site  # noqa: F401  (the fixture)
from test_checker import YAML_CASES, broken_bundle
from test_codabench_site import BUNDLE_NAMES, made_bundles, platform_bundle, platform_bundle_names  # noqa: F401

pytestmark = pytest.mark.codabench


def assert_agreement(site, bundle: Path) -> None:
    """The zip uploaded with codascore upload --force (once in the session), its outcome against the
    checker's."""
    report = checker.check_bundle(bundle, platform_only=True)
    upload = site.upload_bundle_once(bundle, force=True)
    assert upload.status in ("Finished", "Failed"), upload.status
    refused = upload.status == "Failed"
    assert refused == (not report.ok), (f"{bundle.name}: the platform says {upload.status} "
                                        f"({upload.details!r}); the checker says:\n"
                                        + "\n".join(str(f) for f in report.findings))
    if refused:
        rule = refusal_of(upload.details)
        assert rule is not None, f"the platform's text is not a known refusal: {upload.details!r}"
        assert rule in {f.rule_id for f in report.errors}, (rule, [f.rule_id for f in report.errors])


@pytest.mark.parametrize("name", platform_bundle_names())
def test_the_platforms_own_bundles(codabench_site, tmp_path, name):
    assert_agreement(codabench_site, platform_bundle(name, tmp_path))


@pytest.mark.parametrize("name", BUNDLE_NAMES)
def test_the_bundles_of_make_bundle(codabench_site, made_bundles, name):
    assert_agreement(codabench_site, made_bundles / f"{name}.zip")


@pytest.mark.parametrize("case", YAML_CASES, ids=[case[0] for case in YAML_CASES])
def test_each_broken_fixture_of_the_checker(codabench_site, tmp_path, case):
    _, mutate, files, *_ = case
    folder = broken_bundle(tmp_path, mutate, files)
    assert_agreement(codabench_site, zip_folder(folder, tmp_path / "bundle.zip"))


def _drop(*keys):
    def mutate(data):
        node = data
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]
    return mutate


def _set(value, *keys):
    def mutate(data):
        node = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return mutate


#: One v1.5 parser rule broken each, on the platform's competition_15.zip (id, YAML change, file removed).
V15_CASES = [
    ("valid", None, None),
    ("no html", _drop("html"), None),
    ("no terms page", _drop("html", "terms"), None),
    ("page file missing", None, "data.html"),
    ("no image", _drop("image"), None),
    ("image file missing", None, "logo.jpg"),
    ("no phases", _drop("phases"), None),
    ("phase without label", _drop("phases", 1, "label"), None),
    ("phase without start_date", _drop("phases", 2, "start_date"), None),
    ("phase file missing", _set("nowhere.zip", "phases", 1, "input_data"), None),
    ("no leaderboard", _drop("leaderboard"), None),
    ("no leaderboards", _drop("leaderboard", "leaderboards"), None),
    ("no columns", _drop("leaderboard", "columns"), None),
    ("column key too long", _set({"leaderboard": {"label": "RESULTS"}, "label": "x"}, "leaderboard", "columns",
                                 "k" * 40), None),
    ("version 1 said", _set(1, "version"), None),
]


@pytest.mark.parametrize("change, removed", [c[1:] for c in V15_CASES], ids=[c[0] for c in V15_CASES])
def test_v15_bundles_one_rule_broken_each(codabench_site, tmp_path, change, removed):
    source = platform_bundle("competition_15.zip", tmp_path)
    with zipfile.ZipFile(source) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    data = yaml.safe_load(entries["competition.yaml"])
    if change:
        change(data)
    entries["competition.yaml"] = yaml.safe_dump(data, sort_keys=False).encode()
    target = tmp_path / "v15.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in entries.items():
            if name != removed:
                archive.writestr(name, content)
    assert_agreement(codabench_site, target)
