"""The code's citations of the project's docs: every ``docs/<page>.md#<anchor>`` named in ``codascore/`` or
``tests/`` is a heading of that page (GitHub's anchor rule), and nothing cites a file outside the
repository."""

from __future__ import annotations

import re

import pytest

from codascore.competition import project_root

REPO_ROOT = project_root()
CITATION = re.compile(r"docs/([a-z_]+)\.md#([a-z0-9_-]+)")
SOURCES = sorted([*REPO_ROOT.joinpath("codascore").rglob("*.py"), *REPO_ROOT.joinpath("tests").glob("*.py")])


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def anchors(page: str) -> set[str]:
    path = REPO_ROOT / "docs" / f"{page}.md"
    if not path.is_file():
        return set()
    return {github_anchor(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def citations() -> list[tuple[str, str, str]]:
    found = []
    for path in SOURCES:
        for page, anchor in CITATION.findall(path.read_text()):
            found.append((str(path.relative_to(REPO_ROOT)), page, anchor))
    return found


@pytest.mark.parametrize("source, page, anchor", citations() or [("(none)", "", "")])
def test_every_cited_docs_anchor_exists(source, page, anchor):
    if source == "(none)":
        return
    assert anchor in anchors(page), f"{source} cites docs/{page}.md#{anchor}, which that page does not have"


@pytest.mark.parametrize("heading, anchor", [
    ("Phase 1: the inference score", "phase-1-the-inference-score"),
    ("`tpr_low_fpr` (the deployed metric)", "tpr_low_fpr-the-deployed-metric"),
    ("KS on 7 targets, 0.8/0.2", "ks-on-7-targets-0802"),
])
def test_anchors_follow_githubs_rule(heading, anchor):
    assert github_anchor(heading) == anchor


#: ../shared/uai2014 and ../shared/codabench are inputs of tests (a corpus, the platform's source snapshot),
#: named where they are read; nothing else outside the repository is cited.
OUTSIDE = re.compile(r"\bspec (section |§|\d|[a-z_]+\.md)|shared/spec|\.\./shared/(?!uai2014|codabench)|§")


@pytest.mark.parametrize("path", [p for p in SOURCES if p.name != "test_docs.py"],
                         ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_nothing_cites_a_file_outside_the_repository(path):
    cited = [f"line {n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
             if OUTSIDE.search(line)]
    assert not cited, cited
