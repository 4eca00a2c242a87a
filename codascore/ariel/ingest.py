"""Ingestion of ``ariel.retrieval`` code submissions: run ``model.py``'s ``predict`` and write the HDF5 file.

The participant's ``predict(spectra, noise, aux)`` gets the observed spectra (P x 52), their noise
(P x 52) and the auxiliary table (pandas DataFrame: planet_ID, star_radius_m, planet_mass_kg) and returns
``(traces, weights)``: per planet an M x 7 trace and M weights. It runs in a child process under
task.yaml's ``time_limit``; the output is ``submission.hdf5`` in the official layout, exactly what a
result submission holds, so the scorer validates both the same way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ParticipantCodeError, SubmissionError, TimeLimitExceeded
from ..sandbox import call_with_time_limit, find_entry, import_participant_module
from ..task import log
from . import files

ENTRY_FILE = files.ENTRY_FILE


def _run_predict(entry: Path, spectra, noise, aux):
    """Child-process body: import the participant's model.py from its folder and call predict."""
    module = import_participant_module(entry, "model")
    if not hasattr(module, "predict"):
        raise AttributeError(f"{ENTRY_FILE} defines no function predict(spectra, noise, aux)")
    traces, weights = module.predict(spectra, noise, aux)
    # Plain float arrays only cross the process boundary.
    return ([np.asarray(t, dtype=np.float64) for t in traces], [np.asarray(w, dtype=np.float64) for w in weights])


def ingest(input_dir: Path, output_dir: Path, submission_dir: Path, config: dict) -> None:
    entry, warnings = find_entry(submission_dir, (ENTRY_FILE,))
    if entry is None:
        return  # a result submission: the compute worker copies its files itself
    for warning in warnings:
        log(f"WARNING: {warning}")
    spectra, noise, aux = files.read_code_inputs(input_dir)
    try:
        traces, weights = call_with_time_limit(_run_predict, (entry.resolve(), spectra, noise, aux),
                                               timeout=float(config["time_limit"]), label=f"{ENTRY_FILE} predict()")
    except (TimeLimitExceeded, ParticipantCodeError) as exc:
        raise SubmissionError(str(exc)) from exc
    if len(traces) != len(spectra) or len(weights) != len(spectra):
        raise SubmissionError(f"{ENTRY_FILE} predict() returned {len(traces)} traces and {len(weights)} weight "
                              f"arrays for {len(spectra)} planets")
    names = [files.planet_name(i) for i in range(len(spectra))]
    output_dir.mkdir(parents=True, exist_ok=True)
    files.write_posteriors_hdf5(output_dir / files.SUBMISSION_FILE, names, traces, weights)
