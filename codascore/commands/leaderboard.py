"""``codascore leaderboard INPUT... --out DIR``: a task's final leaderboard with how sure each rank is, from
a judgement's output folder or the teams' details.json files (docs/leaderboard.md); ``codascore leaderboard
--site URL --phase ID``: a Codabench phase's leaderboard as the site keeps it (docs/end_of_competition.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from ..outcomes import ExitCode
from .base import Command, existing_path
from .platform import add_site_options, site_leaderboard


class Leaderboard(Command):
    name = "leaderboard"
    help = "the final leaderboard with confidence intervals of scores and ranks (docs/leaderboard.md)"
    description = ("Rank the teams of one task by its official final formula and tell how sure each rank is: "
                   "a paired bootstrap over the task's units of evidence reruns the formula (and its alternative "
                   "rules) on every replicate. INPUT is the output folder of `codascore judge`, or one "
                   "details.json file or folder of them per team (named by the folder, or by --names). Writes "
                   "OUT/ranking.csv, OUT/pairwise.csv and OUT/leaderboard.html; the same seed gives the same bytes. "
                   "With --site instead of INPUTs: a Codabench phase's leaderboard as CSV, the exact values of "
                   "the competition's results export when you organise it, else the public view's rounded ones "
                   "(a column and a printed line say which).")
    epilog = ("examples: codascore leaderboard judgement --out final\n"
              "          codascore leaderboard alice/details.json bob/details.json --task uai.pr --out final\n"
              "          codascore leaderboard downloads/* --names A B C --replicates 2000 --seed 7 --out final\n"
              "          codascore leaderboard --site https://www.codabench.org --phase 1234 --out board.csv")

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("inputs", nargs="*", metavar="INPUT", type=existing_path,
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
        parser.add_argument("--out", help="the output folder (default: leaderboard); with --site, the CSV file "
                                          "(default: the standard output)")
        site = parser.add_argument_group("a Codabench phase's leaderboard, instead of INPUTs")
        add_site_options(site, required=False)
        site.add_argument("--phase", type=int, metavar="ID", help="the phase's id (with --site)")
        site.add_argument("--competition", type=int, metavar="ID",
                          help="the phase's competition (default: found among those you organise)")

    def run(self, args) -> ExitCode:
        if args.site:
            if args.inputs:
                raise UsageError("give INPUTs or --site, not both")
            return site_leaderboard(args)
        if not args.inputs:
            raise UsageError("give the INPUTs to rank (a judgement's output folder, or details.json files), or "
                             "--site URL --phase ID")
        if args.phase is not None or args.competition is not None:
            raise UsageError("--phase and --competition name a phase of a Codabench site: give --site URL too")
        if args.replicates < 1:
            raise UsageError("--replicates must be 1 or more")
        if args.seed < 0:
            raise UsageError("--seed must be 0 or more")
        from ..leaderboard import leaderboard
        from .reference import parameters

        say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
        analysis, paths = leaderboard([Path(p) for p in args.inputs], Path(args.out or "leaderboard"),
                                      names=args.names,
                                      task=args.task, replicates=args.replicates, seed=args.seed,
                                      reference=Path(args.reference) if args.reference else None,
                                      settings=parameters(args.settings), progress=say)
        official = analysis.rankings[analysis.official]
        winners = [team for team, rank in zip(analysis.evidence.teams, official.rank) if rank == 1]
        tied = [team for team, flag in zip(analysis.evidence.teams, official.tied_with_winner) if flag]
        print(f"{analysis.evidence.task}: {len(analysis.evidence.teams)} teams, {analysis.replicates.count} "
              f"replicates (seed {analysis.replicates.seed}); winner {', '.join(winners)}; cannot be told apart "
              f"from the winner: {', '.join(t for t in tied if t not in winners) or 'none'}")
        for path in paths:
            print(path)
        return ExitCode.OK
