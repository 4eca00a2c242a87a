"""The platform's refusals, each with a stable id: what Codabench answers when it refuses an upload (the
``details`` of ``GET /api/competitions/<status_id>/creation_status/``, the text its upload page shows), and
which of this checker's findings predict it.

A client that uploads a bundle and gets ``Failed`` with some ``details`` calls :func:`refusal_of` to learn
which rule id covers that text; every error finding of ``check --platform-only`` carries such an id
(:attr:`Finding.rule_id <codascore.checker.schema.Finding.rule_id>`), so "the checker said so" is a
comparison of ids, not of wording. The ids never change meaning; a new refusal gets a new id.

Sources: Codabench's ``competitions/tasks.py`` (``unpack_competition``), its unpackers (``unpackers/v1.py``,
``v2.py``, ``base_unpacker.py``) and the serializers they call (``api/serializers/competitions.py``,
``leaderboards.py``), at the snapshot docs/bundles.md names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Refusal:
    """One refusal: its id, the platform's text (a regular expression searched in ``details``) and, when
    the checker's message does not quote that text, what the checker's message says instead."""

    id: str
    platform: str
    finding: str = ""

    def matches_details(self, details: str) -> bool:
        return re.search(self.platform, details) is not None

    def matches_finding(self, message: str) -> bool:
        return re.search(self.finding or self.platform, message) is not None


REFUSALS: tuple[Refusal, ...] = (
    # the upload itself, and the unpacker's dispatch on `version`
    Refusal("cb.zip.bad", r"Bad zip file uploaded"),
    Refusal("cb.zip.no-yaml", r"competition\.yaml is missing from zip"),
    Refusal("cb.version.unknown", r"A suitable version could not be found for this competition"),
    # Codabench's v1.5 parser (`version` missing, 1 or 1.5)
    Refusal("cb.v15.html", r"HTML pages could not be found in the yaml file"),
    Refusal("cb.v15.terms", r"A file containing the terms of the competition could not be located"),
    Refusal("cb.v15.page-file", r"Could not find file for page: "),
    Refusal("cb.v15.phases", r"No phases could be found for this competition"),
    Refusal("cb.v15.leaderboard", r"Could not find leaderboard in the competition yaml"),
    Refusal("cb.v15.leaderboards", r"Could not find leaderboards declared on the competition leaderboard"),
    Refusal("cb.v15.columns", r"Could not find columns declared on the competition leaderboard"),
    # the v2 parser
    Refusal("cb.v2.terms", r"A file containing the terms of this competition has not been supplied"),
    Refusal("cb.v2.page-file", r"Unable to find page: "),
    Refusal("cb.v2.page-empty", r"is empty, it must contain content"),
    Refusal("cb.v2.tasks", r"No tasks listed in this competition"),
    Refusal("cb.v2.task-index", r"Duplicate task indexes"),
    Refusal("cb.v2.task-scoring", r"does not have a scoring program", r"needs `scoring_program`"),
    Refusal("cb.v2.phases", r"Unable to find any phases for this competition"),
    Refusal("cb.v2.leaderboards", r"Could not find leaderboards in the competition yaml"),
    # both parsers (base_unpacker.py) and the serializers they call
    Refusal("cb.image.key", r"An image for this competition could not be found in the yaml"),
    Refusal("cb.image.file", r"Unable to find image: "),
    Refusal("cb.image.format", r"^logo: ", r"is not a PNG or JPEG image"),
    Refusal("cb.dataset", r'Cannot find dataset: "'),
    Refusal("cb.phase.end", r"must have an end time because it has a phase after it"),
    Refusal("cb.phase.order", r"Phases must be sequential"),
    Refusal("cb.phase.conflict", r"Phases dates conflict"),
    Refusal("cb.phase.auto-migrate", r"You cannot auto migrate to the first phase"),
    Refusal("cb.leaderboard.columns", r"Leaderboards require at least 1 column"),
    Refusal("cb.column.index", r"Columns must have unique indexes"),
    Refusal("cb.column.key", r"Columns must have unique keys"),
    Refusal("cb.column.negative-index", r"Ensure this value is greater than or equal to 0", r"is negative"),
    Refusal("cb.column.computation", r"Column with computation must have at least 1 column selected|Cannot add "
                                     r"computation columns without a computation function set|Cannot "
                                     r"self-reference"),
    Refusal("cb.column.computation-index", r"does not exist in available indexes",
            r"is not the index of any column"),
    Refusal("cb.field.length", r"Ensure this field has no more than \d+ characters", r"Codabench allows at most"),
    Refusal("cb.field.choice", r"is not a valid choice", r"is not one of"),
    Refusal("cb.field.null", r"This field may not be (null|blank)", r"may not be (null|blank)"),
    # anything else the unpacker did not foresee (a KeyError, a TypeError...): its generic message
    Refusal("cb.unpack.crash", r"^Unpacking the bundle failed", r"Unpacking the bundle failed"),
)
BY_ID = {refusal.id: refusal for refusal in REFUSALS}


def refusal_of(details: str) -> str | None:
    """The id of the refusal whose text the platform's ``details`` holds, or None (a refusal not modelled)."""
    return next((r.id for r in REFUSALS if r.matches_details(details or "")), None)


def rule_id_of(message: str) -> str | None:
    """The id of the refusal a checker message predicts (it quotes the platform's text, or says it in its
    own words), or None."""
    return next((r.id for r in REFUSALS if r.matches_finding(message)), None)
