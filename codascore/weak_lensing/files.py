"""The weak lensing tasks' files: their names, the readers and validators of the reference data and of a
participant's ``result.json``, the writer of ``result.json``, and the constants every part shares.

Scoring, ingestion and generation all import this module and nothing else of the family's, so that the
scoring and ingestion programs of a bundle run without the generators (which a bundle leaves out). The
validators report every problem with its file, field, index and value; the metrics receive only the
arrays they return (docs/weak_lensing.md#submission-formats).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError, SubmissionError
from ..validate import Problems, is_number, read_participant_json, shown
from .metrics import PARAMETERS

#: input_data/<task>/: noiseless training maps and their labels, noisy test maps.
TRAIN_MAPS, TRAIN_LABELS, TEST_MAPS = "train_maps.npy", "train_labels.npy", "test_maps.npy"
#: A result submission (both phases).
RESULT_FILE = "result.json"
#: A code submission (both phases).
MODEL_FILE = "model.py"
#: reference_data/<task>/: Phase 1 truths (N, >=2), the training labels' scaler (or the labels themselves),
#: Phase 2 labels (N,) with 1 = OoD.
PHASE1_LABELS, SCALER_FILE, TRAINING_LABELS = "label_test.npy", "scaler.json", "label.npy"
PHASE2_LABELS = "label_test_phase2.npy"

#: Prior ranges of the challenge's training cosmologies (docs/weak_lensing.md#the-challenges-data).
PRIOR = {"Omega_m": (0.0913, 0.619), "S_8": (0.680, 0.955)}


def write_result(folder: Path, data: dict) -> None:
    """A result.json, deterministic (repr of floats, fixed key order)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RESULT_FILE).write_text(json.dumps(data, allow_nan=True, separators=(",", ":")) + "\n")


# --------------------------------------------------------------------------- reference data

def load_npy(path: Path) -> np.ndarray:
    """An organiser's .npy file (never pickled objects), or ReferenceDataError naming it."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{path.name}: cannot be read: {exc}") from exc


def npy_shape(path: Path) -> tuple[int, ...]:
    """The shape a .npy file declares, read from its header alone (memory-mapped, nothing loaded)."""
    try:
        return tuple(np.load(path, mmap_mode="r", allow_pickle=False).shape)
    except (OSError, ValueError) as exc:
        raise ReferenceDataError(f"{path.name}: cannot be read: {exc}") from exc


def read_phase1_truth(ref_dir: Path) -> np.ndarray:
    """The (N, 2) float64 truths (Omega_m, S_8): the first two columns of label_test.npy, as the official
    scorer reads them."""
    labels = load_npy(Path(ref_dir) / PHASE1_LABELS)
    if labels.ndim != 2 or labels.shape[1] < 2 or len(labels) == 0:
        raise ReferenceDataError(f"{PHASE1_LABELS}: expected shape (N, >=2), found {labels.shape}")
    truth = np.ascontiguousarray(labels[:, :2], dtype=np.float64)
    if not np.all(np.isfinite(truth)):
        raise ReferenceDataError(f"{PHASE1_LABELS}: non-finite values in the first two columns")
    return truth


def read_scaler(ref_dir: Path):
    """(mean, scale) of the training labels' first two columns from scaler.json, else from label.npy
    (StandardScaler statistics: mean and population std), else None (MSE is then omitted).
    docs/weak_lensing.md#mse-and-its-scaler"""
    json_path, npy_path = Path(ref_dir) / SCALER_FILE, Path(ref_dir) / TRAINING_LABELS
    if json_path.is_file():
        try:
            data = json.loads(json_path.read_text())
            mean = np.asarray(data["mean"], dtype=np.float64).reshape(2)
            scale = np.asarray(data["scale"], dtype=np.float64).reshape(2)
        except (ValueError, KeyError, TypeError) as exc:
            raise ReferenceDataError(f"{SCALER_FILE}: expected {{'mean': [2 numbers], 'scale': [2 numbers]}}: "
                                     f"{exc}") from exc
    elif npy_path.is_file():
        labels = load_npy(npy_path)
        labels = labels.reshape(-1, labels.shape[-1])
        mean, scale = labels[:, :2].mean(axis=0), labels[:, :2].std(axis=0)
    else:
        return None
    if not (np.all(np.isfinite(mean)) and np.all(scale > 0)):
        raise ReferenceDataError(f"scaler: mean {mean.tolist()} and scale {scale.tolist()} must be finite, "
                                 f"scale > 0")
    return mean, scale


def read_phase2_labels(ref_dir: Path) -> np.ndarray:
    """The N labels (1 = OoD, the official orientation) as an int8 vector, or ReferenceDataError."""
    labels = load_npy(Path(ref_dir) / PHASE2_LABELS)
    if labels.ndim != 1 or len(labels) == 0:
        raise ReferenceDataError(f"{PHASE2_LABELS}: expected shape (N,), found {labels.shape}")
    if not np.all((labels == 0) | (labels == 1)):
        raise ReferenceDataError(f"{PHASE2_LABELS}: labels must be 0 (InD) or 1 (OoD)")
    return labels.astype(np.int8)


# --------------------------------------------------------------------------- result.json

def read_json_object(path: Path) -> dict:
    """A JSON object from a participant's file, or SubmissionError naming the file and the position."""
    data = read_participant_json(path)
    if not isinstance(data, dict):
        raise SubmissionError(f"{Path(path).name}: expected a JSON object with keys, found {type(data).__name__}")
    return data


def count(n: int | None) -> str:
    """``"<n> "`` for a message, or nothing when the number is not known (the reference-free check)."""
    return "" if n is None else f"{n} "


def same_length(problems: Problems, **arrays: np.ndarray) -> None:
    """Without the reference, the fields must at least agree with each other: one entry per test map."""
    lengths = {field: len(array) for field, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        problems.add(f"{RESULT_FILE}: " + " but ".join(f"'{field}' has {length}" for field, length in lengths.items())
                     + " entries; each field holds one per test map")


def sized_list(data: dict, field: str, n: int | None, problems: Problems, what: str, unit: str):
    """data[field] when it is a list of n entries (one per test map; any number when n is None, as the
    reference-free check does not know it); else a problem is added, None."""
    value = data[field]
    if not isinstance(value, list):
        problems.add(f"{RESULT_FILE}: '{field}' must be a list of {what}, found {type(value).__name__}")
        return None
    if n is not None and len(value) != n:
        problems.add(f"{RESULT_FILE}: '{field}' has {len(value)} {unit}, expected {n} (one per test map)")
        return None
    return value


def pairs_array(data: dict, field: str, n_rows: int | None, problems: Problems):
    """data[field] as an (n_rows, 2) float64 array; every structural problem is added to problems
    (file, field, index and value named). Returns None when the structure is unusable."""
    if field not in data:
        problems.add(f"{RESULT_FILE}: missing key '{field}' (expected a list of {count(n_rows)}[Omega_m, S_8] "
                     f"pairs)")
        return None
    rows = sized_list(data, field, n_rows, problems, "[Omega_m, S_8] pairs", "rows")
    if rows is None:
        return None
    usable = True
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 2:
            width = len(row) if isinstance(row, list) else type(row).__name__
            problems.add(f"{RESULT_FILE}: {field}[{i}] must be a pair [Omega_m, S_8], found {width!s:.40}"
                         + (" values" if isinstance(row, list) else ""))
            usable = False
            continue
        for j, value in enumerate(row):
            if not is_number(value):
                problems.add(f"{RESULT_FILE}: {field}[{i}][{j}] ({PARAMETERS[j]}) is {json.dumps(value)[:40]}, "
                             f"not a number")
                usable = False
    return np.array(rows, dtype=np.float64) if usable else None


def check_finite_pairs(array: np.ndarray, field: str, problems: Problems) -> None:
    for i, j in np.argwhere(~np.isfinite(array)):
        problems.add(f"{RESULT_FILE}: {field}[{i}][{j}] ({PARAMETERS[j]}) is {array[i, j]}, must be finite")


def check_errorbars(errorbars: np.ndarray, problems: Problems) -> None:
    """sigma must be > 0 and large enough that sigma**2 does not underflow to 0 (the score would be
    infinite). Non-finite values are reported by check_finite_pairs.
    docs/weak_lensing.md#what-the-project-refuses-that-the-official-code-scores"""
    with np.errstate(all="ignore"):
        bad = np.isfinite(errorbars) & ((errorbars <= 0) | (errorbars ** 2 == 0))
    for i, j in np.argwhere(bad):
        value = errorbars[i, j]
        why = "must be > 0" if value <= 0 else "is so small that its square underflows to 0"
        problems.add(f"{RESULT_FILE}: errorbars[{i}][{j}] ({PARAMETERS[j]}) = {shown(value)} {why}")


def read_phase1_result(res_dir: Path, n_rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Read and validate Phase 1's result.json; return (means, errorbars) or raise SubmissionError.
    n_rows None (no reference): any number of rows, the same in both fields."""
    data = read_json_object(Path(res_dir) / RESULT_FILE)
    problems = Problems()
    means = pairs_array(data, "means", n_rows, problems)
    errorbars = pairs_array(data, "errorbars", n_rows, problems)
    if means is not None:
        check_finite_pairs(means, "means", problems)
    if errorbars is not None:
        check_finite_pairs(errorbars, "errorbars", problems)
        check_errorbars(errorbars, problems)
    if means is not None and errorbars is not None:
        same_length(problems, means=means, errorbars=errorbars)
    problems.raise_if_any()
    return means, errorbars


def number_vector(data: dict, field: str, n: int | None, problems: Problems):
    """data[field] as a float64 vector of length n; structural problems (list, length, non-numbers) and
    non-finite values are added to problems with file, field, index and value. None when unusable."""
    values = sized_list(data, field, n, problems, f"{count(n)}numbers", "values")
    if values is None:
        return None
    usable = True
    for i, value in enumerate(values):
        if not is_number(value):
            problems.add(f"{RESULT_FILE}: {field}[{i}] is {json.dumps(value)[:40]}, not a number")
            usable = False
    if not usable:
        return None
    array = np.array(values, dtype=np.float64)
    for i in np.flatnonzero(~np.isfinite(array)):
        problems.add(f"{RESULT_FILE}: {field}[{i}] is {array[i]}, must be finite")
    return array


#: Phase 2 rankings (task.yaml ``ranking``): the seed's log-likelihood of p_ind, or the deployed mean TPR at
#: low FPR (docs/weak_lensing.md#phase-2-two-rankings).
RANKINGS = ("seed", "deployed")


def read_phase2_result(res_dir: Path, n: int | None, ranking: str = "seed") -> tuple[np.ndarray | None, np.ndarray | None]:
    """Read and validate Phase 2's result.json; return (p_ind or None, ood_scores or None) or raise
    SubmissionError. ``seed`` needs p_ind; ``deployed`` needs ood_scores or p_ind (the official starting
    kits write ``{"ood_scores": [...]}`` alone). docs/weak_lensing.md#phase-2-resultjson"""
    data = read_json_object(Path(res_dir) / RESULT_FILE)
    problems = Problems()
    p_ind = ood_scores = None
    if "p_ind" in data:
        p_ind = number_vector(data, "p_ind", n, problems)
        if p_ind is not None:
            for i in np.flatnonzero((p_ind < 0) | (p_ind > 1)):
                problems.add(f"{RESULT_FILE}: p_ind[{i}] = {shown(p_ind[i])} is outside [0, 1]")
    elif ranking == "deployed":
        if "ood_scores" not in data:
            problems.add(f"{RESULT_FILE}: missing key 'ood_scores', the list of {count(n)}out-of-distribution "
                         f"scores (higher = more likely OoD; or 'p_ind', the probabilities of being in-distribution)")
    else:
        hint = (" (the official format with only 'ood_scores' is not enough: this phase ranks by the "
                "log-likelihood of probabilities)" if "ood_scores" in data else "")
        problems.add(f"{RESULT_FILE}: missing key 'p_ind', the list of {count(n)}probabilities that each map is "
                     f"in-distribution{hint}")
    if "ood_scores" in data:
        ood_scores = number_vector(data, "ood_scores", n, problems)
    if p_ind is not None and ood_scores is not None:
        same_length(problems, p_ind=p_ind, ood_scores=ood_scores)
    problems.raise_if_any()
    return p_ind, ood_scores
