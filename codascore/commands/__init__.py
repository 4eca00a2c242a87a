"""The verbs of the command line, one :class:`~codascore.commands.base.Command` class each, its options
beside its ``run`` (docs/architecture.md#the-layers). A family's own verbs live in its ``cli.py``, as a
:class:`~codascore.commands.base.Group` in its ``COMMANDS``."""

from __future__ import annotations

from .base import Command, Group, Parser
from .bundles import Bundle, Check
from .demo import Demo
from .judge import Judge
from .leaderboard import Leaderboard
from .pack import Pack
from .platform import Fetch, Rerun, Upload
from .programs import Ingest, Score
from .reference import BuildReference, Reference
from .run import Run
from .validate import Validate
from .worker import Worker

#: The core verbs, in the order the help lists them.
COMMANDS: tuple[type[Command], ...] = (Score, Ingest, Run, Validate, Pack, Reference, BuildReference, Demo,
                                       Bundle, Check, Judge, Leaderboard, Upload, Fetch, Rerun, Worker)

__all__ = ["COMMANDS", "Command", "Group", "Parser"]
