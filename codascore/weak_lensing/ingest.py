"""Code submissions of both weak lensing phases: run the participant's ``model.py`` and write the
``result.json`` a result submission would hold (docs/weak_lensing.md#code-submissions-modelpy).

The participant's ``model.py`` defines ``Model`` in one of two interfaces
(docs/weak_lensing.md#code-submissions-modelpy):

- the project's: ``Model()``, an optional ``fit(train_maps, train_labels)`` and ``predict(maps)``, with
  train_maps (M, 48, 48) float32 noiseless maps (add the shape noise yourself, as in the challenge),
  train_labels (M, 5) float64 [Omega_m, S_8, T_AGN, f_0, Delta_z] grouped by cosmology, maps (N, 48, 48)
  float32 noisy test maps;
- the official repository's (FAIR-Universe/Cosmology_Challenge ``ingestion_program/ingestion.py``):
  ``Model()``, ``fit()`` with no argument, ``predict({"data": maps})``. It is recognised by a ``fit`` that
  takes no argument and cannot take the two of the project's interface.

Either way predict returns a dict holding the phase's result.json keys (other keys are ignored), or the
values in the order of those keys (Phase 1: means, errorbars, as the official ingestion unpacks them;
Phase 2: p_ind and optionally ood_scores), or one array (the phase's single needed key).

Everything runs in a child process under the task's ``time_limit`` (codascore.sandbox); the child writes
result.json itself, so nothing built by participant code is unpickled here.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np

from ..errors import ParticipantCodeError, ReferenceDataError, SubmissionError, TimeLimitExceeded
from ..sandbox import call_with_time_limit, find_entry, import_participant_module
from ..task import log
from .files import MODEL_FILE, TEST_MAPS, TRAIN_LABELS, TRAIN_MAPS, load_npy, write_result


def read_inputs(input_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train_maps float32, train_labels float64, test_maps float32) from input_data/."""
    train_maps, train_labels, test_maps = (load_npy(Path(input_dir) / name)
                                           for name in (TRAIN_MAPS, TRAIN_LABELS, TEST_MAPS))
    if train_maps.ndim != 3 or test_maps.ndim != 3 or train_labels.shape != (len(train_maps), 5):
        raise ReferenceDataError(f"input data: expected maps (M, H, W), labels (M, 5) and test maps (N, H, W), "
                                 f"found {train_maps.shape}, {train_labels.shape}, {test_maps.shape}")
    return (train_maps.astype(np.float32), train_labels.astype(np.float64), test_maps.astype(np.float32))


def is_flat(values) -> bool:
    """A plain sequence of numbers (one array), not a sequence of arrays."""
    return all(isinstance(v, (int, float, np.number)) for v in values)


def result_from_predictions(predictions, required: tuple[str, ...], optional: tuple[str, ...],
                            bare: str | None = None) -> dict:
    """The result.json content from what Model.predict returned (TypeError explains a wrong shape of
    answer; the values themselves are validated by the scorer exactly as a result submission's).

    ``bare`` is the key a single array fills (default: the one required key). With no required key, at
    least one of the optional ones must be given."""
    keys = required + optional
    bare = bare or (required[0] if len(required) == 1 else None)
    if isinstance(predictions, dict):
        missing = [k for k in required if k not in predictions]
        if missing:
            raise TypeError(f"Model.predict returned a dict without {missing}; expected the keys {list(keys)}")
        chosen = {k: predictions[k] for k in keys if k in predictions and predictions[k] is not None}
    elif isinstance(predictions, (tuple, list)) and not (bare and is_flat(predictions)):
        if not max(len(required), 1) <= len(predictions) <= len(keys):
            raise TypeError(f"Model.predict returned {len(predictions)} values; expected {list(keys)}")
        chosen = {k: v for k, v in zip(keys, predictions) if v is not None}
    elif bare and predictions is not None:
        chosen = {bare: predictions}
    else:
        raise TypeError(f"Model.predict returned {type(predictions).__name__}; expected a dict with the "
                        f"keys {list(keys)}")
    if not chosen:
        raise TypeError(f"Model.predict returned none of the keys {list(keys)}")
    result = {}
    for key, value in chosen.items():
        try:
            result[key] = np.asarray(value, dtype=np.float64).tolist()
        except (TypeError, ValueError) as exc:
            raise TypeError(f"Model.predict: {key!r} is not an array of numbers: {exc}") from exc
    return result


def accepts(function, n_arguments: int) -> bool:
    """Whether function can be called with n positional arguments. A callable without a readable signature
    (some builtins and extension types) counts as the project's two-argument fit."""
    try:
        inspect.signature(function).bind(*range(n_arguments))
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): assume the project's interface
        return n_arguments == 2
    return True


def is_official_interface(model) -> bool:
    """The official ingestion's Model: a fit() that takes no argument and cannot take (train_maps,
    train_labels). Its ingestion calls fit() on every model, so every official model has one
    (docs/weak_lensing.md#code-submissions-modelpy)."""
    fit = getattr(model, "fit", None)
    return callable(fit) and accepts(fit, 0) and not accepts(fit, 2)


def _fit_predict_write(model_path: Path, train_maps, train_labels, test_maps, output_dir: Path,
                       required: tuple[str, ...], optional: tuple[str, ...], bare: str | None) -> None:
    """Runs in the child process: import model.py, fit, predict, write result.json."""
    module = import_participant_module(model_path, "model")
    if not hasattr(module, "Model"):
        raise AttributeError(f"{MODEL_FILE} defines no class Model")
    model = module.Model()
    if is_official_interface(model):
        # As the official ingestion: fit() without data, then predict on {"data": test maps}.
        print("ingestion: Model follows the official interface: fit(), predict({'data': maps})", flush=True)
        model.fit()
        predictions = model.predict({"data": test_maps})
    else:
        if callable(getattr(model, "fit", None)):
            model.fit(train_maps, train_labels)
        predictions = model.predict(test_maps)
    write_result(output_dir, result_from_predictions(predictions, required, optional, bare))


def find_model(submission_dir: Path) -> Path | None:
    """model.py at the submission's root, or in its single wrapper folder (with a warning, as for
    result files); None for a results submission."""
    entry, warnings = find_entry(submission_dir, (MODEL_FILE,))
    for warning in warnings:
        log(f"WARNING: {warning}")
    return entry


def ingest(input_dir: Path, output_dir: Path, submission_dir: Path, config: dict,
           required: tuple[str, ...], optional: tuple[str, ...] = (), bare: str | None = None) -> None:
    """Run submission_dir/model.py under config['time_limit'] seconds and write output_dir/result.json.

    A results submission (no model.py) needs nothing: the worker has copied its files into the output.
    Failures of the participant's code raise SubmissionError carrying its traceback."""
    model_path = find_model(Path(submission_dir).resolve())
    if model_path is None:
        return
    train_maps, train_labels, test_maps = read_inputs(Path(input_dir))
    timeout = float(config["time_limit"])
    try:
        call_with_time_limit(_fit_predict_write, (model_path, train_maps, train_labels, test_maps,
                                                  Path(output_dir).resolve(), required, optional, bare),
                             timeout=timeout, label=MODEL_FILE)
    except TimeLimitExceeded as exc:
        raise SubmissionError(f"{exc} (time_limit of this task: fit and predict together)") from exc
    except ParticipantCodeError as exc:
        raise SubmissionError(str(exc).splitlines()) from exc
