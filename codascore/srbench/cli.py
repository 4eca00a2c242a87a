"""``codascore srbench ...``: organiser commands of the SRBench family.

``codascore srbench rank RESULTS...`` computes the all-against-all final ranking
(docs/srbench.md#all-against-all-ranking: the 2022 procedure, with the real pool of participants) from the
details.json files the scorer wrote for each submission (the method is named after the folder holding
details.json, or its ``--names``), or from CSV files with one row per run (algorithm, dataset, run,
r2_test, simplicity, property).
"""

from __future__ import annotations

from pathlib import Path

from ..commands.base import Command, Group
from ..errors import ReferenceDataError, UsageError
from ..outcomes import ExitCode
from . import files


def details_rows(path: Path, algorithm: str) -> list[dict]:
    """Per-run ranking rows of one submission, from the details.json its scoring wrote."""
    from .evaluation import run_rows

    records = files.read_details_runs(path)
    seeds: dict = {}
    for record in records:
        seeds.setdefault(record["dataset"], set()).add(record["seed"])
    order = {dataset: sorted(values) for dataset, values in seeds.items()}
    return run_rows(records, algorithm, order, "worst")


def load_results(paths: list[str], names: list[str] | None):
    """One per-run table of every method: details.json files (named by --names or their folder) and CSVs."""
    import pandas as pd

    frames = []
    json_paths = [Path(p) for p in paths if p.endswith(".json")]
    if names and len(names) != len(json_paths):
        raise UsageError(f"--names has {len(names)} names for {len(json_paths)} details.json files")
    json_index = 0
    for path in map(Path, paths):
        if path.suffix == ".json":
            name = names[json_index] if names else path.resolve().parent.name
            json_index += 1
            frames.append(pd.DataFrame(details_rows(path, name)))
        else:
            frames.append(files.read_results_csv(path))
    return pd.concat(frames, ignore_index=True)


class Rank(Command):
    name = "rank"
    help = "rank all methods against each other (the 2022 final ranking)"

    @classmethod
    def add_options(cls, parser):
        parser.add_argument("results", nargs="+", help="details.json files of scored submissions, or per-run CSVs")
        parser.add_argument("--names", nargs="*", help="method names for the details.json files, in order")
        parser.add_argument("--aggregate", choices=("median", "mean"), default="median",
                            help="per-dataset aggregate over runs: median (written rules, default) or mean "
                                 "(2022 code)")
        parser.add_argument("--profile", choices=("seed", "official2022"), default=None,
                            help="missing-value rules (default: official2022 with mean, seed with median)")
        parser.add_argument("--per-dataset", help="also write the per-dataset ranks to this CSV")
        parser.add_argument("--out", help="write the final ranking to this CSV (default: print it)")

    def run(self, args) -> ExitCode:
        from .metrics import final_scores, rank_per_dataset

        results = load_results(args.results, args.names)
        try:
            per_dataset = rank_per_dataset(results, aggregate=args.aggregate, profile=args.profile)
        except (ValueError, KeyError) as exc:
            raise ReferenceDataError(f"the results cannot be ranked: {exc}") from None
        final = final_scores(per_dataset)
        if args.per_dataset:
            per_dataset.to_csv(args.per_dataset, index=False)
        if args.out:
            final.to_csv(args.out)
        else:
            print(final.to_string(float_format=lambda v: f"{v:.4f}"))
        return ExitCode.OK


class Srbench(Group):
    name = "srbench"
    commands = (Rank,)


COMMANDS = (Srbench,)
