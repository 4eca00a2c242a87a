"""The verbs of the command line, one :class:`~codascore.commands.base.Command` class each, its options
beside its ``run`` (docs/architecture.md#the-layers). A family's own verbs live in its ``cli.py``, as a
:class:`~codascore.commands.base.Group` in its ``COMMANDS``.

As pip's ``commands_dict`` does, :data:`VERBS` names each verb's module and class with its summary, so that
the help lists every verb and a command line imports only the verb it runs (docs/architecture.md#commands).
"""

from __future__ import annotations

import dataclasses
import importlib

from .base import Command


@dataclasses.dataclass(frozen=True)
class Verb:
    """A verb as the top-level help lists it: its name, its summary, and where its Command is (module and
    class; a module alone is a family's cli.py, whose COMMANDS hold a Group of the verb's name)."""

    name: str
    summary: str
    where: str

    def load(self) -> type[Command]:
        module_name, _, attribute = self.where.partition(":")
        module = importlib.import_module(module_name)
        if attribute:
            return getattr(module, attribute)
        return next(command for command in module.COMMANDS if command.name == self.name)


#: The core verbs, in the order the help lists them.
VERBS: tuple[Verb, ...] = (
    Verb("score", "the scoring program: read INPUT/ref and INPUT/res, write OUTPUT",
         "codascore.commands.programs:Score"),
    Verb("ingest", "the ingestion program: run a code submission", "codascore.commands.programs:Ingest"),
    Verb("run", "score one submission (zip or folder) like Codabench's worker", "codascore.commands.run:Run"),
    Verb("validate", "check a submission's format without the reference data",
         "codascore.commands.validate:Validate"),
    Verb("pack", "zip a code submission with the wheels it needs beyond the image, and prove its import",
         "codascore.commands.pack:Pack"),
    Verb("reference", "generate the demo's reference data and sample submissions (all tasks if none)",
         "codascore.commands.reference:Reference"),
    Verb("build-reference", "build a task's reference data from your own files (docs/hosting.md)",
         "codascore.commands.reference:BuildReference"),
    Verb("demo", "score every sample submission through the local runner", "codascore.commands.demo:Demo"),
    Verb("bundle", "build dist/NAME.zip for the suite and/or families (all if none)",
         "codascore.commands.bundles:Bundle"),
    Verb("check", "check Codabench bundles (zip, folder or competition YAML)", "codascore.commands.bundles:Check"),
    Verb("judge", "judge every team again on the private data, on a Dask cluster, resumably (docs/judge.md)",
         "codascore.commands.judge:Judge"),
    Verb("leaderboard", "the final leaderboard with confidence intervals of scores and ranks (docs/leaderboard.md)",
         "codascore.commands.leaderboard:Leaderboard"),
    Verb("upload", "upload a competition bundle to a Codabench site, as its upload page does",
         "codascore.commands.platform:Upload"),
    Verb("fetch", "download every submission of a phase (or a competition) with its results, resumably",
         "codascore.commands.platform:Fetch"),
    Verb("site-leaderboard", "a Codabench phase's leaderboard as the site keeps it, as CSV",
         "codascore.commands.platform:SiteLeaderboard"),
    Verb("rerun", "ask a Codabench site to run a phase's submissions (or the ones named) again, and wait",
         "codascore.commands.platform:Rerun"),
    Verb("worker", "serve a Codabench queue as its compute worker, without Docker, here or on a cluster "
                   "(docs/worker.md)", "codascore.commands.worker:Worker"),
)


def family_verbs() -> tuple[Verb, ...]:
    """The verbs of the families that have some (registry.FAMILY_VERBS), under each family's name."""
    from ..registry import FAMILIES, FAMILY_VERBS

    return tuple(Verb(family, summary, f"{FAMILIES[family]}.cli") for family, summary in FAMILY_VERBS.items())


__all__ = ["VERBS", "Verb", "family_verbs"]
