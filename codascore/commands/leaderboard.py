"""``codascore leaderboard INPUT... --out DIR``: a task's final leaderboard with how sure each rank is, from
a judgement's output folder or the teams' details.json files (docs/leaderboard.md). A Codabench phase's
leaderboard as the site keeps it is a verb of its own, ``codascore site-leaderboard`` (commands/platform.py):
it shares no input, option or output with this one (docs/architecture.md#commands)."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from ..progress import DISPLAY
from .base import Command, Moved, existing_path

#: The old form's options -> the new form, with {} for the option's value.
SITE_FORMS = {"--site": "codascore site-leaderboard --site {} --phase ID",
              "--phase": "codascore site-leaderboard --site URL --phase {}",
              "--competition": "codascore site-leaderboard --site URL --phase ID --competition {}"}


class Leaderboard(Command):
    name = "leaderboard"
    description = ("Rank the teams of one task by its official final formula and tell how sure each rank is: "
                   "a paired bootstrap over the task's units of evidence reruns the formula (and its alternative "
                   "rules) on every replicate. INPUT is the output folder of `codascore judge`, or one "
                   "details.json file or folder of them per team (named by the folder, or by --names). Writes "
                   "OUT/ranking.csv, OUT/pairwise.csv and OUT/leaderboard.html; the same seed gives the same bytes. "
                   "A Codabench phase's leaderboard as the site keeps it: codascore site-leaderboard.")
    epilog = ("examples: codascore leaderboard judgement --out final\n"
              "          codascore leaderboard alice/details.json bob/details.json --task uai.pr --out final\n"
              "          codascore leaderboard downloads/* --names A B C --replicates 2000 --seed 7 --out final")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("inputs", nargs="+", metavar="INPUT", type=existing_path,
                            help="a judgement's output folder, or a details.json (or a folder of them) per team")
        parser.add_argument("--names", nargs="+", metavar="NAME",
                            help="the teams' names, one per INPUT (default: each INPUT's folder name)")
        parser.add_argument("--task", metavar="T", help="the task to rank (default: the one every file names)")
        parser.add_argument("--reference", metavar="DIR", type=existing_path,
                            help="the task's reference data: its task.yaml's parameters, and its digest checked "
                                 "against the teams' (default: the task's default parameters)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                            help="a value of the board's configuration (a YAML value) over the task's "
                                 "parameters; repeatable, e.g. --set trust_ratings=ratings.csv")
        parser.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates (default 1000)")
        parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
        parser.add_argument("--out", default="leaderboard", help="the output folder (default: leaderboard)")
        # The form before site-leaderboard was a verb of its own: it says the new form and exits.
        for option, new_form in SITE_FORMS.items():
            parser.add_argument(option, action=Moved, new_form=new_form)

    def run(self, args) -> ExitCode:
        if args.replicates < 1:
            raise UsageError("--replicates must be 1 or more")
        if args.seed < 0:
            raise UsageError("--seed must be 0 or more")
        from ..leaderboard import leaderboard
        from .reference import parameters

        analysis, paths = leaderboard([Path(p) for p in args.inputs], Path(args.out),
                                      names=args.names,
                                      task=args.task, replicates=args.replicates, seed=args.seed,
                                      reference=Path(args.reference) if args.reference else None,
                                      settings=parameters(args.settings), progress=DISPLAY.say)
        official = analysis.rankings[analysis.official]
        winners = [team for team, rank in zip(analysis.evidence.teams, official.rank) if rank == 1]
        tied = [team for team, flag in zip(analysis.evidence.teams, official.tied_with_winner) if flag]
        print(f"{analysis.evidence.task}: {len(analysis.evidence.teams)} teams, {analysis.replicates.count} "
              f"replicates (seed {analysis.replicates.seed}); winner {', '.join(winners)}; cannot be told apart "
              f"from the winner: {', '.join(t for t in tied if t not in winners) or 'none'}")
        for path in paths:
            print(path)
        return ExitCode.OK
