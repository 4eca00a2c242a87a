"""Bundle checker: the invariants of a Codabench v2 bundle (docs/bundles.md, "The checker").

``codascore check BUNDLE`` takes a bundle zip, a bundle folder or a competition YAML file. Invariants 1-21,
28-29 and 31 are checked statically (:mod:`.static`); with ``run=True`` (``--run``) every sample submission of
the bundle's starting kits also goes through the local runner for invariants 14, 22-27 and 30 (:mod:`.runs`).

The rules are data (:mod:`.schema`): the schema of each YAML section, the keys the platform ignores and the
text of every invariant. Each finding carries its invariant number and the YAML path it concerns, e.g.
``leaderboards[0].columns[3].key``; the platform's own error text is quoted where it has one, so a finding
reads like the upload error it prevents.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import Callable

import yaml

from .. import bundle, zips
from ..competition import load_yaml, yaml_root_of
from ..errors import UnsafeArchiveError
from .runs import run_samples, samples_of
from .schema import RULES, CheckReport, Finding
from .refusals import refusal_of
from .static import BundleChecker
from .v15 import v15_refusals

__all__ = ["RULES", "BundleChecker", "CheckReport", "Finding", "check_bundle", "format_report", "refusal_of",
           "samples_of"]


# --------------------------------------------------------------------------- entry point

def _refused(path: str, message: str) -> Finding:
    """A rule-1 finding: Codabench refuses the upload itself (the rule ids of :mod:`.refusals`)."""
    return Finding(1, path, message, "error", platform=True)


def check_bundle(bundle_path: Path, run: bool = False, image: str | None = None,
                 progress: Callable[[str], None] = lambda message: None,
                 runs_dir: Path | None = None, platform_only: bool = False) -> CheckReport:
    """Check a bundle zip, a bundle folder or a competition YAML file; findings cover every invariant.
    With run, the sample runs go to runs_dir (kept) or to a temporary folder. With platform_only, only what
    Codabench itself would refuse at upload is reported (no house rule, no run), for any organiser's bundle."""
    bundle_path = Path(bundle_path)
    image = image or bundle.DOCKER_IMAGE
    report = CheckReport(str(bundle_path), [])
    with tempfile.TemporaryDirectory(prefix="codascore-check-") as tmp:
        tmp = Path(tmp)
        from_zip = bundle_path.is_file() and bundle_path.suffix.lower() == ".zip"
        if from_zip:
            if not zipfile.is_zipfile(bundle_path):
                report.findings.append(_refused(bundle_path.name, "Bad zip file uploaded."))
                return report
            with zipfile.ZipFile(bundle_path) as archive:
                names = archive.namelist()
            if "competition.yaml" not in names:
                nested = [n for n in names if n.endswith("/competition.yaml")]
                hint = f" (it is at {nested[0]}: zip the folder's contents, not the folder)" if nested else ""
                report.findings.append(_refused("competition.yaml", "competition.yaml is missing from zip, "
                                               "check your folder structure to make sure it is in the root "
                                               "directory" + hint))
                return report
            root = tmp / "bundle"
            try:
                zips.safe_extract(bundle_path, root)
            except (UnsafeArchiveError, zipfile.BadZipFile) as exc:
                report.findings.append(_refused(bundle_path.name, f"unsafe or broken archive: {exc}"))
                return report
            yaml_file = root / "competition.yaml"
        elif bundle_path.is_dir():
            root, yaml_file = bundle_path, bundle_path / "competition.yaml"
        elif bundle_path.is_file():
            root, yaml_file = yaml_root_of(bundle_path), bundle_path
        else:
            report.findings.append(_refused(str(bundle_path), "no such bundle (zip, folder or YAML file)"))
            return report
        if not yaml_file.is_file():
            report.findings.append(_refused("competition.yaml", f"competition.yaml is missing from "
                                                                  f"{bundle_path}"))
            return report
        try:
            competition, duplicates = load_yaml(yaml_file.read_text())
        except yaml.YAMLError as exc:
            report.findings.append(_refused("competition.yaml", f"not valid YAML: {exc}"))
            return report
        if not isinstance(competition, dict):
            report.findings.append(_refused("competition.yaml", "must be a YAML mapping"))
            return report
        checker = BundleChecker(root, competition, from_zip, image)
        if platform_only and checker.parser_version() == "1.5":
            checker.rule_version()  # rule 2, a platform error when the v1.5 parser refuses the bundle
            report.findings = [f for f in checker.findings if f.platform] + v15_refusals(root, competition)
            report.summary = "v1.5 bundle: Codabench's v1.5 parser's rules (rule 32)"
            return report
        for key, line in duplicates:
            checker.warn(1, f"line {line}", f"duplicated key {key!r}: PyYAML and Codabench silently keep the "
                                            "last one")
        checker.run_static()
        if run and not platform_only:
            run_samples(checker, Path(runs_dir) if runs_dir else tmp / "runs", progress)
        report.findings = [f for f in checker.findings if f.platform] if platform_only else checker.findings
        report.summary = checker.summary() + (" (Codabench's own rules only)" if platform_only else "")
    return report


def format_report(report: CheckReport) -> str:
    lines = report.messages()
    if report.ok:
        lines.append(f"OK {report.bundle}: {report.summary}; {len(report.warnings)} warning(s)")
    else:
        lines.append(f"FAILED {report.bundle}: {len(report.errors)} violation(s), {len(report.warnings)} "
                     "warning(s)")
    return "\n".join(lines)
