"""The rules that need runs (14, 22-27, 30): every sample submission of the starting kits through the local
runner, from the extracted bundle."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

from ..competition import read_task_config
from ..errors import ReferenceDataError, RunnerError
from ..formats.outputs import PAGE, SCORES
from ..formats.run_folder import scoring_output
from ..outcomes import Outcome, scoring_outcome
from ..registry import get_task
from ..runner import run
from .schema import PUBLIC_QUEUE_LIMIT, hashable
from .static import BundleChecker, samples_of

# --------------------------------------------------------------------------- rules 22-27: runs

def reference_strings(folder: Path, limit: int = 20000) -> set[str]:
    """Reference values at full precision (repr), for the rule-26 heuristic: a log line holding one of them
    echoes the ground truth. Only values with at least 6 significant digits count (no false alarms on 0.5).
    Read: .npy, HDF5 (when h5py is there) and numbers written with 5 or more decimals in text files."""
    import numpy as np

    values: list[float] = []
    for path in sorted(folder.rglob("*")):
        if len(values) >= limit or not path.is_file():
            continue
        try:
            if path.suffix == ".npy":
                values += _float_values(np.load(path, allow_pickle=False), limit)
            elif path.suffix in (".h5", ".hdf5"):
                values += _hdf5_values(path, limit)
            elif path.suffix in (".json", ".csv", ".txt", ".yaml", ".tsv") and path.stat().st_size < 20_000_000:
                values += [float(x) for x in re.findall(r"-?\d+\.\d{5,}(?:[eE][-+]?\d+)?", path.read_text())]
        except (OSError, ValueError, UnicodeDecodeError):
            continue
    found = set()
    for value in values[:limit]:
        if math.isfinite(value):
            text = repr(float(value))
            if len(text.lstrip("-").replace(".", "").lstrip("0").split("e")[0]) >= 6:
                found.add(text)
    return found


def _float_values(array, limit: int) -> list[float]:
    """Up to limit float entries of a numpy array (other dtypes hold no reference values to leak)."""
    if getattr(array, "dtype", None) is None or array.dtype.kind != "f":
        return []
    return array.ravel()[:limit].tolist()


def _hdf5_values(path: Path, limit: int) -> list[float]:
    try:
        import h5py
    except ImportError:
        return []
    values: list[float] = []
    with h5py.File(path, "r") as handle:
        def visit(_name, node):
            if isinstance(node, h5py.Dataset) and len(values) < limit:
                values.extend(_float_values(node[()], limit - len(values)))
        handle.visititems(visit)
    return values


def _log_text(run_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted((run_dir / "logs").glob("*.txt")))


def run_samples(checker: BundleChecker, work: Path, progress: Callable[[str], None]) -> None:
    detailed = bool(checker.yaml.get("enable_detailed_results"))
    done: set[tuple[Any, str]] = set()
    maxima: dict[Any, dict[str, tuple[float, str]]] = {}
    for p, phase in checker.items("phases"):
        if not isinstance(phase, dict) or not isinstance(phase.get("tasks"), list):
            continue
        limit = phase.get("execution_time_limit")
        limit = limit if isinstance(limit, (int, float)) and limit > 0 else PUBLIC_QUEUE_LIMIT
        budget = 0.5 * min(float(limit), PUBLIC_QUEUE_LIMIT)
        for index in phase["tasks"]:
            name = checker.task_names.get(index) if hashable(index) else None
            if name is None or index not in checker.task_keys or (index, str(phase.get("starting_kit"))) in done:
                continue
            done.add((index, str(phase.get("starting_kit"))))
            samples = samples_of(checker.root, phase, name)
            at = f"phases[{p}].starting_kit"
            if not samples:
                checker.warn(22, at, f"no sample submissions of {name} in the starting kit: rules 22-27 not run")
                continue
            folder = checker.references.get(index, checker.root / "reference_data" / name)
            reference = reference_strings(folder)
            repeated = False
            for sample in samples:
                progress(f"running {name} / {sample.name}")
                where = f"{at} ({name}/{sample.name})"
                try:
                    result = run(name, sample, work / name / sample.name, root=checker.root)
                except RunnerError as exc:
                    checker.error(22, where, f"the runner could not run it: {exc}")
                    continue
                output = scoring_output(result.run_dir)
                for violation in result.violations:
                    rule = 23 if "metadata" in violation else 25 if "detailed_results" in violation else 22
                    checker.error(rule, where, violation)
                if get_task(name).expected_to_fail(sample.name):
                    if result.exit_code is None or scoring_outcome(result.exit_code) is Outcome.SCORED:
                        checker.error(24, where, "an invalid sample must exit non-zero; exit code "
                                                 f"{result.exit_code}")
                    elif not any(line.startswith("ERROR:") for line in result.error.splitlines()):
                        checker.error(24, where, "stderr has no line starting with 'ERROR:'")
                else:
                    if scoring_outcome(result.exit_code) is not Outcome.SCORED:
                        lines = result.error.splitlines()
                        first = next((line for line in lines if line.startswith("ERROR")), "")
                        checker.error(22, where, f"exit code {result.exit_code} on a valid sample {first}")
                        continue
                    if result.elapsed >= budget:
                        checker.error(14, where, f"took {result.elapsed:.1f} s, not below half of "
                                                 f"min(execution_time_limit, 600) = {budget:g} s")
                    if detailed and not (output / PAGE).is_file():
                        checker.error(25, where, "enable_detailed_results is true but no detailed_results.html")
                    if index not in maxima:
                        maxima[index] = answers_only_scores(checker, index, name, work, progress)
                    check_maximum(checker, where, name, sample.name, result.scores, maxima[index])
                    if not repeated:
                        repeated = True
                        again = run(name, sample, work / name / (sample.name + ".again"), root=checker.root)
                        first_bytes = (output / SCORES).read_bytes()
                        second = scoring_output(again.run_dir) / SCORES
                        if not second.is_file() or second.read_bytes() != first_bytes:
                            checker.error(27, where, "scoring it twice gave different scores.json")
                logged = set(re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", _log_text(result.run_dir)))
                leaked = sorted(reference & logged)
                if leaked:
                    # The values themselves are not repeated: this report may be shared.
                    checker.error(26, where, f"the logs echo {len(leaked)} reference value(s) at full precision "
                                             f"(logs in {result.run_dir / 'logs'} with --runs)")


# --------------------------------------------------------------------------- rule 30: the maximum

def answers_only_scores(checker: BundleChecker, index: Any, name: str, work: Path,
                        progress: Callable[[str], None]) -> dict[str, tuple[float, str]]:
    """Score key -> (the value only the answers reach, where it comes from): the task's documented bounds
    (Task.max_scores), and for keys without one what its perfect submission, written from the bundle's
    reference data, scores through the runner."""
    task = get_task(name)
    found = {key: (float(top), "a documented bound") for key, top in task.max_scores.items() if top is not None}
    measured = [key for key, top in task.max_scores.items() if top is None]
    folder = checker.references.get(index, checker.root / "reference_data" / name)
    if not measured:
        return found
    at = f"tasks[{checker.task_positions().get(index)}].reference_data"
    try:
        _, config = read_task_config(folder, "reference data")
        perfect = work / ".perfect" / name / "submission"
        if not task.write_perfect_submission(folder, perfect, config):
            return found
        progress(f"running {name} / the perfect submission (rule 30)")
        result = run(name, perfect, work / ".perfect" / name / "run", root=checker.root)
    except (ReferenceDataError, RunnerError, OSError) as exc:
        checker.warn(30, at, f"{name}: the perfect submission could not be made ({exc}); only documented "
                             "bounds are checked")
        return found
    if not result.scored:
        checker.warn(30, at, f"{name}: the perfect submission did not score (exit {result.exit_code}); only "
                             "documented bounds are checked")
        return found
    found.update((key, (float(result.scores[key]), "the perfect submission's score")) for key in measured
                 if isinstance(result.scores.get(key), (int, float)))
    return found


def check_maximum(checker: BundleChecker, where: str, name: str, sample: str, scores: dict,
                  maxima: dict[str, tuple[float, str]]) -> None:
    """Rule 30 for one scored sample. In a source folder a sample its task declares made from the answers
    is skipped: `codascore bundle` leaves it out (rule 29 warns)."""

    if not checker.from_zip and sample in get_task(name).answer_samples:
        return
    for key, (top, origin) in sorted(maxima.items()):
        value = scores.get(key)
        if isinstance(value, (int, float)) and value >= top - 1e-9 * max(1.0, abs(top)):
            checker.error(30, where, f"{key} = {value:.10g} reaches {top:.10g} ({origin}), which only the answers "
                                     "reach: keep this sample out of the starting kit")
