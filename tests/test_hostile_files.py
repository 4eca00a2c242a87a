"""One deterministic test per class of hostile participant file of issue 15 ("Ariel HDF5", "Ariel NPZ",
"JSON everywhere", "Extreme but valid values"): each becomes a SubmissionError (exit 1) or an instance's
reason naming file, member or field, index and value, or, for a valid file, a scored submission with a
page that still draws; never an exception of a library or an allocation of what the file declares."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import struct
import tracemalloc
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from codascore.ariel import files as ariel_files
from codascore.codabench import score_main
from codascore.errors import AnswerError, SubmissionError
from codascore.registry import get_task
from codascore.uai import result_files
from codascore.uai.files import read_model
from codascore.weak_lensing import files as wl_files

NAMES = [ariel_files.planet_name(i) for i in range(2)]
M = 20


def posteriors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(15)
    arrays = {}
    for name in NAMES:
        arrays[f"{name}/tracedata"] = rng.normal(size=(M, 7))
        arrays[f"{name}/weights"] = np.full(M, 1 / M)
    return arrays


def write_hdf5(path: Path, replace: dict | None = None) -> Path:
    """The official layout; replace maps "group/dataset" to a callable(group, dataset_name) making it."""
    replace = replace or {}
    with h5py.File(path, "w") as handle:
        for key, value in posteriors().items():
            group_name, dataset = key.split("/")
            group = handle.require_group(group_name)
            if key in replace:
                replace[key](group, dataset)
            else:
                group.create_dataset(dataset, data=value)
    return path


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


def write_npz(path: Path, members: dict[str, bytes] | None = None, compression=zipfile.ZIP_STORED) -> Path:
    members = members if members is not None else {f"{k}.npy": npy(v) for k, v in posteriors().items()}
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def member_data_offset(path: Path, name: str) -> int:
    """Where a zip member's (compressed) data starts in the file."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    raw = path.read_bytes()
    name_length, extra_length = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
    return info.header_offset + 30 + name_length + extra_length


def load(folder: Path):
    return ariel_files.load_posteriors(folder, NAMES, min_samples=10, max_samples=50)


# --------------------------------------------------------------------------- Ariel HDF5

def test_hdf5_with_corrupted_bytes_is_refused_naming_the_file(tmp_path):
    path = write_hdf5(tmp_path / "submission.hdf5")
    raw = path.read_bytes()
    assert b"SNOD" in raw  # the symbol table nodes of the groups
    path.write_bytes(raw.replace(b"SNOD", b"XNOD"))
    with pytest.raises(SubmissionError, match=r"submission\.hdf5: not a readable HDF5 file"):
        load(tmp_path)


def test_hdf5_null_dataspace_is_refused_naming_planet_and_dataset(tmp_path):
    write_hdf5(tmp_path / "submission.hdf5",
               {"Planet_public2/weights": lambda g, n: g.create_dataset(n, data=h5py.Empty("f8"))})
    with pytest.raises(SubmissionError, match=r"Planet_public2/weights has a null dataspace"):
        load(tmp_path)


def test_hdf5_declared_shape_is_bounded_before_anything_is_read(tmp_path):
    # 49 million numbers declared (374 MiB as float64) in a file of a few kilobytes
    huge = lambda g, n: g.create_dataset(n, shape=(7_000_000, 7), dtype="f8", chunks=(10_000, 7), fillvalue=0.5)
    write_hdf5(tmp_path / "submission.hdf5", {"Planet_public1/tracedata": huge})
    assert (tmp_path / "submission.hdf5").stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(SubmissionError, match=r"Planet_public1/tracedata has M = 7000000 samples; "
                                                  r"allowed 10 <= M <= 50"):
            load(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024**2


# --------------------------------------------------------------------------- Ariel NPZ

def test_npz_with_a_damaged_crc_is_refused_naming_the_member(tmp_path):
    path = write_npz(tmp_path / "submission.npz")
    at = member_data_offset(path, "Planet_public1/tracedata.npy") + 200  # inside the values
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(SubmissionError, match=r"Planet_public1/tracedata cannot be read \(BadZipFile: .*CRC"):
        load(tmp_path)


def test_npz_with_a_damaged_deflate_stream_is_refused_naming_the_member(tmp_path):
    path = write_npz(tmp_path / "submission.npz", compression=zipfile.ZIP_DEFLATED)
    at = member_data_offset(path, "Planet_public2/weights.npy")
    raw = bytearray(path.read_bytes())
    raw[at:at + 8] = b"\xff" * 8  # block type 3 does not exist
    path.write_bytes(bytes(raw))
    with pytest.raises(SubmissionError, match=r"Planet_public2/weights cannot be read \(error: .*invalid"):
        load(tmp_path)


def test_npz_with_a_damaged_central_directory_is_refused(tmp_path):
    path = write_npz(tmp_path / "submission.npz")
    raw = bytearray(path.read_bytes())
    entry = raw.index(b"PK\x01\x02")  # the first central directory record
    raw[entry + 42:entry + 46] = struct.pack("<I", 7)  # its local header offset now points into nothing
    path.write_bytes(bytes(raw))
    with pytest.raises(SubmissionError, match=r"Planet_public1/tracedata cannot be read \(BadZipFile"):
        load(tmp_path)


def test_npz_member_that_is_not_npy_is_refused(tmp_path):
    members = {f"{k}.npy": npy(v) for k, v in posteriors().items()}
    members["Planet_public1/weights.npy"] = b"0.05 " * 20
    write_npz(tmp_path / "submission.npz", members)
    with pytest.raises(SubmissionError, match=r"Planet_public1/weights cannot be read \(ValueError"):
        load(tmp_path)


def test_npz_member_without_npy_suffix_is_refused(tmp_path):
    members = {f"{k}.npy": npy(v) for k, v in posteriors().items()}
    members["Planet_public2/tracedata"] = members.pop("Planet_public2/tracedata.npy")
    write_npz(tmp_path / "submission.npz", members)
    with pytest.raises(SubmissionError, match=r"Planet_public2/tracedata is the member 'Planet_public2/tracedata',"
                                              r" not an \.npy array"):
        load(tmp_path)


def test_npy_header_declaring_a_huge_shape_is_refused_before_allocating(tmp_path):
    members = {f"{k}.npy": npy(v) for k, v in posteriors().items()}
    data = members["Planet_public1/tracedata.npy"]
    # (10**12, 7) float64 would be 51 TiB; the header keeps its length (numpy pads it with spaces)
    members["Planet_public1/tracedata.npy"] = data.replace(b"(20, 7)", b"(1000000000000, 7)".ljust(7), 1)
    assert b"1000000000000" in members["Planet_public1/tracedata.npy"]
    write_npz(tmp_path / "submission.npz", members)
    with pytest.raises(SubmissionError, match=r"Planet_public1/tracedata has M = 1000000000000 samples"):
        load(tmp_path)


# --------------------------------------------------------------------------- JSON everywhere

def result_json(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(text)
    return folder


PAIRS = "[[0.3, 0.8], [0.3, 0.8]]"


def test_integer_literal_over_4300_digits_is_refused_naming_the_field(tmp_path):
    folder = result_json(tmp_path, '{"means": [[' + "7" * 5000 + ', 0.8], [0.3, 0.8]], "errorbars": ' + PAIRS + "}")
    with pytest.raises(SubmissionError, match=r"result\.json: means\[0\]\[0\] = 7{30}\.\.\. has 5000 characters"):
        wl_files.read_phase1_result(folder, 2)


def test_srbench_integer_literal_over_4300_digits_is_refused(tmp_path):
    from codascore.srbench.files import read_models

    (tmp_path / "models.json").write_text('{"d/1": ' + "1" * 4400 + "}")
    with pytest.raises(SubmissionError, match=r"models\.json: \[\"d/1\"\]|models\.json: d/1 = 1{30}\.\.\. has 4400"):
        read_models(tmp_path, {"d/1": ("d", 1)}, {"d": ["x"]}, 10000)


def test_integer_beyond_float64_in_means_is_refused_naming_the_field(tmp_path):
    folder = result_json(tmp_path, '{"means": [[0.3, 0.8], [0.3, 1' + "0" * 320 + ']], "errorbars": ' + PAIRS + "}")
    with pytest.raises(SubmissionError, match=r"means\[1\]\[1\] = 10{29}\.\.\. is beyond the range of a float64"):
        wl_files.read_phase1_result(folder, 2)


def test_integer_beyond_float64_in_p_ind_is_refused_naming_the_field(tmp_path):
    folder = result_json(tmp_path, '{"p_ind": [0.5, -' + "9" * 320 + "]}")
    with pytest.raises(SubmissionError, match=r"p_ind\[1\] = -9{29}\.\.\. is beyond the range of a float64"):
        wl_files.read_phase2_result(folder, 2)


def test_float_literal_beyond_float64_is_refused_not_read_as_infinity(tmp_path):
    folder = result_json(tmp_path, '{"means": ' + PAIRS + ', "errorbars": [[0.1, 1e999], [0.1, 0.1]]}')
    with pytest.raises(SubmissionError, match=r"errorbars\[0\]\[1\] = 1e999 is beyond the range of a float64"):
        wl_files.read_phase1_result(folder, 2)


def test_json_nested_too_deeply_is_refused_before_parsing(tmp_path):
    folder = result_json(tmp_path, "[" * 100_000 + "]" * 100_000)
    with pytest.raises(SubmissionError, match=r"result\.json: arrays and objects nested 100000 deep, more than 64"):
        wl_files.read_phase1_result(folder, 2)


def test_mpe_value_beyond_int64_is_an_answer_error_naming_line_and_token(project_data):
    models = project_data / "reference_data" / "uai.mpe" / "models"
    model = read_model(models / "bn_1.uai")
    values = ["0"] * model.n_vars
    values[3] = "9" * 30
    text = "MPE\n-BEGIN-\n" + " ".join([str(model.n_vars), *values]) + "\n"
    with pytest.raises(AnswerError, match=r"line 3: token '9{30}' in the MPE solution is not an integer of at most "
                                          r"64 bits"):
        result_files.parse_mpe(text, model, {})


def test_mar_probability_of_1e308_is_renormalised_not_an_overflow(project_data, tmp_path):
    task = get_task("uai.mar")
    ref = project_data / "reference_data" / "uai.mar"
    config = task.load_config({})
    reference = task.load_reference(ref, config)
    res = tmp_path / "res"
    shutil.copytree(project_data / "sample_submissions" / "uai.mar" / "exact", res)
    path = res / "bn_1.uai.MAR"
    lines = path.read_text().splitlines()
    tokens = lines[-1].split()
    tokens[2:4] = ["1e308", "1e308"]  # variable 0: two probabilities whose sum overflows
    path.write_text("\n".join(lines[:-1] + [" ".join(tokens)]) + "\n")
    result = task.score(reference, task.load_submission(res, reference, config), config)
    record = next(r for r in result.instances if r["id"] == "bn_1")
    assert record["status"] == "ok"
    assert 0 <= record["score"] <= 100
    assert all(np.isfinite(v) for v in result.scores.values())


# --------------------------------------------------------------------------- extreme but valid values

def test_a_figure_that_cannot_be_drawn_becomes_a_note_and_the_scores_stand(project_data, tmp_path):
    ref = project_data / "reference_data" / "weak_lensing.phase1"
    n = len(np.load(ref / "label_test.npy"))
    (tmp_path / "input" / "res").mkdir(parents=True)
    os.symlink(ref, tmp_path / "input" / "ref")
    result_json(tmp_path / "input" / "res", json.dumps({"means": [[1.7e308, 1.7e308]] * n,
                                                        "errorbars": [[1.0, 1.0]] * n}))
    log = io.StringIO()
    with contextlib.redirect_stderr(log):
        code = score_main([str(tmp_path / "input"), str(tmp_path / "output")])
    assert code == 0
    assert "Traceback" not in log.getvalue()
    assert "could not be drawn" in log.getvalue()
    page = (tmp_path / "output" / "detailed_results.html").read_text()
    assert "The figure predicted against true Omega_m could not be drawn" in page
    assert page.count("<img") >= 1  # the figures that can be drawn still are
    scores = json.loads((tmp_path / "output" / "scores.json").read_text())
    assert scores["R_squared"] == -9999999999.0
