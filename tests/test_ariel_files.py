"""Ariel submission files: HDF5 / NPZ readers and the validator's messages (planet, dataset, index)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from codascore.ariel import files
from codascore.ariel.metrics import PRIOR_BOUNDS, SUM_TOLERANCE
from codascore.errors import SubmissionError

NAMES = [files.planet_name(i) for i in range(3)]


def _posteriors(m=20, seed=0):
    rng = np.random.default_rng(seed)
    traces = [PRIOR_BOUNDS.mean(axis=1) + rng.normal(size=(m, 7)) for _ in NAMES]
    weights = [np.full(m, 1.0 / m) for _ in NAMES]
    return traces, weights


def _validate(traces, weights, names=NAMES, tmp_path=None, fmt="hdf5", **limits):
    limits = {"min_samples": 10, "max_samples": 50, **limits}
    path = tmp_path / f"submission.{fmt}"
    if fmt == "hdf5":
        files.write_posteriors_hdf5(path, names, traces, weights)
    else:
        files.write_npz(path, files.posteriors_npz_arrays(names, traces, weights))
    return files.load_posteriors(tmp_path, NAMES, **limits)


@pytest.mark.parametrize("fmt", ["hdf5", "npz"])
def test_valid_file_round_trips_in_reference_order(tmp_path, fmt):
    traces, weights = _posteriors()
    out = _validate(traces, weights, names=NAMES[::-1], tmp_path=tmp_path, fmt=fmt)
    assert out.names == NAMES
    np.testing.assert_array_equal(out.traces[0], traces[2])
    assert out.warnings == []


def test_hdf5_has_official_layout(tmp_path):
    import h5py

    traces, weights = _posteriors()
    files.write_posteriors_hdf5(tmp_path / "s.hdf5", NAMES, traces, weights)
    with h5py.File(tmp_path / "s.hdf5") as handle:
        assert sorted(handle) == NAMES
        assert handle["Planet_public2"].attrs["ID"] == 1
        assert handle["Planet_public2/tracedata"].shape == (20, 7)


def _set(array, index, value):
    array[index] = value
    return array


CASES = {
    "missing planet": (lambda t, w: (t[:2], w[:2]), r"missing: Planet_public3"),
    "infinite trace": (lambda t, w: ([t[0], _set(t[1], (4, 2), np.inf), t[2]], w),
                       r"Planet_public2/tracedata\[4\]\[2\] = inf is not finite"),
    "nan weight": (lambda t, w: (t, [_set(w[0], 3, np.nan), w[1], w[2]]),
                   r"Planet_public1/weights\[3\] = nan is not finite"),
    "negative weight": (lambda t, w: (t, [w[0], np.r_[-0.05, w[1][1:] + 0.05 / 19], w[2]]),
                        r"Planet_public2/weights\[0\] = -0.05 is negative"),
    "sum": (lambda t, w: (t, [w[0], w[1], w[2] * 1.001]), r"Planet_public3/weights sum to 1.001"),
    "columns": (lambda t, w: ([t[0], t[1][:, :5], t[2]], w), r"Planet_public2/tracedata has shape \(20, 5\)"),
    "lengths": (lambda t, w: ([t[0], t[1], t[2][:19]], w), r"Planet_public3/weights has 20 values but .* 19 rows"),
    "too many": (lambda t, w: ([t[0], np.vstack([t[1]] * 3), t[2]], [w[0], np.full(60, 1 / 60), w[2]]),
                 r"Planet_public2/tracedata has M = 60 samples; allowed 10 <= M <= 50"),
    "2-D weights": (lambda t, w: (t, [w[0], w[1][:, None], w[2]]), r"Planet_public2/weights has shape \(20, 1\)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_problem_names_planet_dataset_and_index(tmp_path, case):
    mutate, message = CASES[case]
    traces, weights = mutate(*_posteriors())
    with pytest.raises(SubmissionError, match=message):
        _validate(traces, weights, tmp_path=tmp_path)


def test_all_problems_are_listed_at_once(tmp_path):
    traces, weights = _posteriors()
    traces[0][1, 1] = np.nan
    weights[2] = weights[2] * 2
    with pytest.raises(SubmissionError) as info:
        _validate(traces, weights, tmp_path=tmp_path)
    assert len(info.value.problems) == 2


def test_small_sum_error_is_renormalised_with_warning(tmp_path):
    traces, weights = _posteriors()
    weights[1] = weights[1] * (1 + 1e-7)
    out = _validate(traces, weights, tmp_path=tmp_path)
    assert abs(out.weights[1].sum() - 1) <= SUM_TOLERANCE
    assert "Planet_public2" in out.warnings[0]
    weights[1] = weights[1] / weights[1].sum() * (1 + 1e-10)  # within sqrt(eps): used as given
    out = _validate(traces, weights, tmp_path=tmp_path)
    np.testing.assert_array_equal(out.weights[1], weights[1])
    assert out.warnings == []


def test_extra_groups_are_ignored_with_a_warning(tmp_path):
    traces, weights = _posteriors()
    names = NAMES + ["Planet_public99"]
    out = _validate(traces + traces[:1], weights + weights[:1], names=names, tmp_path=tmp_path)
    assert "Planet_public99" in out.warnings[0]


def test_file_level_problems(tmp_path):
    with pytest.raises(SubmissionError, match="no submission file"):
        files.find_posterior_file(tmp_path)
    (tmp_path / "submission.hdf5").write_text("not hdf5")
    with pytest.raises(SubmissionError, match="not a readable HDF5 file"):
        files.load_posteriors(tmp_path, NAMES)
    (tmp_path / "submission.npz").write_text("x")
    with pytest.raises(SubmissionError, match="several submission files"):
        files.find_posterior_file(tmp_path)


def test_npz_with_strings_or_pickles_is_refused(tmp_path):
    traces, weights = _posteriors()
    arrays = files.posteriors_npz_arrays(NAMES, traces, weights)
    arrays["Planet_public1/weights"] = np.array(["a"] * 20)
    files.write_npz(tmp_path / "submission.npz", arrays)
    with pytest.raises(SubmissionError, match="Planet_public1/weights has dtype"):
        files.load_posteriors(tmp_path, NAMES, min_samples=10)
    np.savez(tmp_path / "submission.npz", **{**arrays, "Planet_public1/weights": np.array([object()] * 20)})
    # The header declares an object dtype: refused before anything is unpickled.
    with pytest.raises(SubmissionError, match="Planet_public1/weights has dtype object, not numbers"):
        files.load_posteriors(tmp_path, NAMES, min_samples=10)


def test_npz_writer_is_byte_deterministic_and_loadable(tmp_path):
    traces, weights = _posteriors()
    arrays = files.posteriors_npz_arrays(NAMES, traces, weights)
    files.write_npz(tmp_path / "a.npz", arrays)
    files.write_npz(tmp_path / "b.npz", arrays)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz") as loaded:
        np.testing.assert_array_equal(loaded["Planet_public3/tracedata"], traces[2])


def test_hdf5_to_npz_converter(tmp_path):
    traces, weights = _posteriors()
    files.write_posteriors_hdf5(tmp_path / "s.hdf5", NAMES, traces, weights)
    (tmp_path / "out").mkdir()
    files.hdf5_to_npz(tmp_path / "s.hdf5", tmp_path / "out" / "submission.npz")
    out = files.load_posteriors(tmp_path / "out", NAMES, min_samples=10)
    np.testing.assert_array_equal(out.traces[1], traces[1])


def test_submission_named_file_wins_over_other_data_files(tmp_path):
    traces, weights = _posteriors()
    files.write_posteriors_hdf5(tmp_path / "submission.hdf5", NAMES, traces, weights)
    files.write_npz(tmp_path / "model_weights.npz", {"coef": np.zeros(3)})
    assert files.find_posterior_file(tmp_path).name == "submission.hdf5"
    (tmp_path / "submission.hdf5").rename(tmp_path / "posterior.h5")
    with pytest.raises(SubmissionError, match="several submission files"):
        files.find_posterior_file(tmp_path)


def test_cli_validate_file_and_convert(tmp_path, capsys):
    from codascore.cli import main

    traces, weights = _posteriors(m=1000)
    files.write_posteriors_hdf5(tmp_path / "submission.hdf5", NAMES, traces, weights)
    assert main(["ariel", "to-npz", str(tmp_path / "submission.hdf5"), str(tmp_path / "s.npz")]) == 0
    assert main(["ariel", "validate-file", str(tmp_path / "s.npz"), "--planets", "3"]) == 0
    assert main(["ariel", "validate-file", str(tmp_path / "s.npz"), "--planets", "4"]) == 1
    err = capsys.readouterr().err
    assert "Planet_public4" in err and err.startswith("error: s.npz: 1 planet group(s) missing")
    assert "ERROR" not in err
    (tmp_path / "bad.hdf5").write_text("not hdf5")
    assert main(["ariel", "validate-file", str(tmp_path / "bad.hdf5"), "--planets", "3"]) == 1
    assert "bad.hdf5: not a readable HDF5 file" in capsys.readouterr().err


def test_hdf5_links_and_external_storage_are_refused(tmp_path):
    import h5py

    traces, weights = _posteriors()
    files.write_posteriors_hdf5(tmp_path / "other.hdf5", NAMES, traces, weights)
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "raw.bin").write_bytes(np.full(20, 0.05).tobytes())
    with h5py.File(sub / "submission.hdf5", "w") as handle:
        handle["Planet_public1"] = h5py.ExternalLink(str(tmp_path / "other.hdf5"), "Planet_public1")
        group = handle.create_group("Planet_public2")
        group.create_dataset("tracedata", data=traces[1])
        group.create_dataset("weights", shape=(20,), dtype="f8", external=[(str(tmp_path / "raw.bin"), 0, 160)])
        group = handle.create_group("Planet_public3")
        group.create_dataset("tracedata", data=traces[2])
        group["weights"] = h5py.SoftLink("/Planet_public2/weights")
    with pytest.raises(SubmissionError) as info:
        files.load_posteriors(sub, NAMES, min_samples=10)
    text = str(info.value)
    assert "Planet_public1 is a soft or external link" in text
    assert "Planet_public2/weights stores its data in other files" in text
    assert "Planet_public3/weights is a soft or external link" in text


def test_hdf5_without_h5py_asks_for_npz(tmp_path, monkeypatch):
    traces, weights = _posteriors()
    files.write_posteriors_hdf5(tmp_path / "submission.hdf5", NAMES, traces, weights)
    monkeypatch.setitem(sys.modules, "h5py", None)  # makes `import h5py` fail
    with pytest.raises(SubmissionError, match="HDF5 needs h5py.*submission.npz"):
        files.load_posteriors(tmp_path, NAMES, min_samples=10)
