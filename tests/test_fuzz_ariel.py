"""Fuzz test of the Ariel scorer: 1,000 seeded malformed posterior files (HDF5 and NPZ) made from the
sample submissions, each held to the scoring contract of tests/fuzzing.py.

The reference and the samples are cut to three planets (the first the only spectral one) and 100 samples
per planet, with min_samples lowered to 20 in the cut reference's task.yaml, so that a case that is still
valid stays cheap to score and a byte-level mutation lands in the files' structure as often as in their
values. The files are written with the project's writers, in the samples' own layout.
"""

from __future__ import annotations

import io
import random
import shutil
import zipfile
from pathlib import Path

import h5py
import numpy as np
import yaml

from codascore.ariel import files as ariel_files
from fuzzing import Campaign, case_count, mutate_bytes, mutate_structure, pick

SEED = 15_002
CASES = case_count()
TASK = "ariel.retrieval"
N_PLANETS, N_ROWS = 3, 100
NAMES = [ariel_files.planet_name(i) for i in range(N_PLANETS)]


def cut_task(project: Path, out: Path) -> tuple[Path, dict[str, tuple[list, list]]]:
    """The cut reference folder and the samples' posteriors {sample: (traces, weights)}."""
    ref = out / "ref" / TASK
    shutil.copytree(project / "reference_data" / TASK, ref)
    planets = (ref / ariel_files.PLANETS_FILE).read_text().splitlines()
    rows = [row.split(",") for row in planets[1:N_PLANETS + 1]]
    flag = planets[0].split(",").index("in_spectral_subset")
    for i, row in enumerate(rows):
        row[flag] = "1" if i == 0 else "0"
    (ref / ariel_files.PLANETS_FILE).write_text("\n".join([planets[0]] + [",".join(r) for r in rows]) + "\n")
    gt = ariel_files.read_posterior_file(ref / "ground_truth.npz", set(NAMES))
    ariel_files.write_npz(ref / "ground_truth.npz", {f"{name}/{d}": gt[name][d] for name in NAMES
                                                      for d in ariel_files.DATASETS})
    with np.load(ref / ariel_files.SPECTRAL_TRUTH_FILE) as archive:
        frozen = {key: archive[key][:1] if not key.startswith("meta/") else archive[key] for key in archive.files}
    ariel_files.write_npz(ref / ariel_files.SPECTRAL_TRUTH_FILE, frozen)
    config = yaml.safe_load((ref / "task.yaml").read_text())
    (ref / "task.yaml").write_text(yaml.safe_dump({**config, "min_samples": 20, "max_samples": 200},
                                                  sort_keys=False))
    samples = {}
    for folder in sorted((project / "sample_submissions" / TASK).iterdir()):
        found = [p for p in folder.iterdir() if p.suffix in (".hdf5", ".npz")] if folder.is_dir() else []
        if folder.name.startswith("invalid") or len(found) != 1 or (folder / "model.py").is_file():
            continue
        groups = ariel_files.read_posterior_file(found[0], set(NAMES))
        traces = [groups[n]["tracedata"][:N_ROWS] for n in NAMES]
        weights = [groups[n]["weights"][:N_ROWS] / groups[n]["weights"][:N_ROWS].sum() for n in NAMES]
        samples[folder.name] = (traces, weights)
    return ref, samples


def hdf5_bytes(datasets: dict[str, dict[str, object]], path: Path) -> bytes:
    """An HDF5 file of {group: {dataset: array, or a callable(group, name) that makes it}}."""
    with h5py.File(path, "w") as handle:
        for group_name, entries in datasets.items():
            group = handle.create_group(group_name)
            for name, value in entries.items():
                if callable(value):
                    value(group, name)
                else:
                    group.create_dataset(name, data=value)
    return path.read_bytes()


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def npz_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def posterior_members(traces, weights) -> dict[str, np.ndarray]:
    return {f"{n}/{d}": a for n, t, w in zip(NAMES, traces, weights) for d, a in (("tracedata", t), ("weights", w))}


# --------------------------------------------------------------------------- HDF5 internals

def _huge_chunked(group, name):  # tens of millions of rows declared, a few KB on disk
    group.create_dataset(name, shape=(30_000_000, 7) if name == "tracedata" else (30_000_000,), dtype="f8",
                         chunks=True, fillvalue=0.5)


HDF5_ODDITIES = {
    "null dataspace": lambda group, name: group.create_dataset(name, data=h5py.Empty("f8")),
    "scalar": lambda group, name: group.create_dataset(name, data=np.float64(0.5)),
    "huge declared shape": _huge_chunked,
    "strings": lambda group, name: group.create_dataset(name, data=np.array([b"a"] * N_ROWS)),
    "compound": lambda group, name: group.create_dataset(name, data=np.zeros(N_ROWS, dtype=[("a", "f8"), ("b", "i4")])),
    "complex": lambda group, name: group.create_dataset(name, data=np.zeros(N_ROWS, dtype="c16")),
    "bool": lambda group, name: group.create_dataset(name, data=np.ones(N_ROWS, dtype=bool)),
    "float16": lambda group, name: group.create_dataset(name, data=np.full((N_ROWS, 7) if name == "tracedata"
                                                                           else N_ROWS, 0.01, dtype="f2")),
    "soft link": lambda group, name: group.__setitem__(name, h5py.SoftLink("/nowhere")),
    "external link": lambda group, name: group.__setitem__(name, h5py.ExternalLink("ground_truth.npz", "/x")),
    "group": lambda group, name: group.create_group(name),
    "empty rows": lambda group, name: group.create_dataset(name, shape=(0, 7) if name == "tracedata" else (0,),
                                                           dtype="f8"),
    "transposed": lambda group, name: group.create_dataset(name, data=np.zeros((7, N_ROWS))),
}


def mutate_hdf5_internals(traces, weights, rng: random.Random, work: Path) -> tuple[bytes, str]:
    datasets = {n: {"tracedata": t, "weights": w} for n, t, w in zip(NAMES, traces, weights)}
    oddity = rng.choice(sorted(HDF5_ODDITIES))
    for _ in range(rng.randint(1, 2)):
        datasets[rng.choice(NAMES)][rng.choice(ariel_files.DATASETS)] = HDF5_ODDITIES[oddity]
    if rng.random() < 0.2:
        datasets[rng.choice(NAMES)] = {}
    data = hdf5_bytes(datasets, work / "case.hdf5")
    if rng.random() < 0.3:  # and then damaged, most often in its superblock and object headers
        data, _ = mutate_bytes(data, rng, region=(0, min(len(data), 4096)))
    return data, f"hdf5 internals: {oddity}"


# --------------------------------------------------------------------------- NPZ internals

def _patched_header(array: np.ndarray, rng: random.Random) -> tuple[bytes, str]:
    """An .npy member whose header was edited: a huge or negative shape, another version, a bad magic."""
    data = npy_bytes(array)
    header_end = data.index(b"\n") + 1
    header = data[:header_end]
    kind = rng.choice(("huge shape", "negative shape", "version 3", "version 9", "bad magic", "object dtype",
                       "fortran", "header length", "truncated"))
    if kind == "huge shape":
        shape = f"({rng.choice((10**9, 10**13, 2**62))}, 7)" if array.ndim == 2 else f"({10**12},)"
        header = header.replace(repr(array.shape).encode(), shape.encode())
    elif kind == "negative shape":
        header = header.replace(repr(array.shape).encode(), b"(-5, 7)" if array.ndim == 2 else b"(-5,)")
    elif kind == "version 3":
        header = header[:6] + b"\x03\x00" + header[8:]
    elif kind == "version 9":
        header = header[:6] + b"\x09\x00" + header[8:]
    elif kind == "bad magic":
        header = b"\x93NUMPX" + header[6:]
    elif kind == "object dtype":
        header = header.replace(b"'<f8'", b"'|O'")
    elif kind == "fortran":
        header = header.replace(b"False", b"True ")
    elif kind == "header length":
        header = header[:8] + b"\xff\xff" + header[10:]
    else:
        return data[:header_end + rng.randrange(len(data) - header_end)], f"npy: {kind}"
    return header + data[header_end:], f"npy: {kind}"


def mutate_npz_internals(traces, weights, rng: random.Random) -> tuple[bytes, str]:
    arrays = posterior_members(traces, weights)
    members = {f"{key}.npy": npy_bytes(value) for key, value in arrays.items()}
    key = rng.choice(sorted(arrays))
    kind = rng.choice(("header", "header", "no suffix", "other suffix", "not npy", "deflate damaged",
                       "crc", "strings", "objects", "directory damaged"))
    compression = zipfile.ZIP_STORED
    if kind == "header":
        members[f"{key}.npy"], kind = _patched_header(arrays[key], rng)
    elif kind == "no suffix":
        members[key] = members.pop(f"{key}.npy")
    elif kind == "other suffix":
        members[f"{key}.txt"] = members.pop(f"{key}.npy")
    elif kind == "not npy":
        members[f"{key}.npy"] = b"0.5 0.5 0.5\n" * 10
    elif kind == "strings":
        members[f"{key}.npy"] = npy_bytes(np.array(["a"] * N_ROWS))
    elif kind == "objects":
        members[f"{key}.npy"] = npy_bytes(np.array([None] * N_ROWS, dtype=object))
    elif kind == "deflate damaged":
        compression = zipfile.ZIP_DEFLATED
    data = npz_bytes(members, compression)
    if kind == "deflate damaged" or kind == "crc":
        data, _ = mutate_bytes(data, rng, region=(len(data) // 4, len(data) // 2))
    elif kind == "directory damaged":
        data, _ = mutate_bytes(data, rng, region=(max(0, len(data) - 1024), len(data)))
    return data, f"npz internals: {kind}"


# --------------------------------------------------------------------------- values

EXTREME_TRACE_VALUES = (1e308, -1e308, 1e-308, 5e-324, 0.0, -0.0, 1e150, -1e150, 1e10, 7.0)


def extreme_values(traces, weights, rng: random.Random) -> tuple[list, list, str]:
    """Valid but extreme posteriors: huge or tiny parameters, a point mass, weights of 0 but one."""
    traces, weights = [t.copy() for t in traces], [w.copy() for w in weights]
    p = rng.randrange(N_PLANETS)
    kind = rng.choice(("values", "column", "point mass", "one weight", "subnormal weights"))
    if kind == "values":
        for _ in range(rng.randint(1, 20)):
            traces[p][rng.randrange(len(traces[p])), rng.randrange(7)] = rng.choice(EXTREME_TRACE_VALUES)
    elif kind == "column":
        traces[p][:, rng.randrange(7)] = rng.choice(EXTREME_TRACE_VALUES)
    elif kind == "point mass":
        traces[p][:] = traces[p][0]
    elif kind == "one weight":
        weights[p][:] = 0.0
        weights[p][rng.randrange(len(weights[p]))] = 1.0
    else:
        weights[p][:] = 5e-324
        weights[p][0] = 1.0 - 5e-324 * (len(weights[p]) - 1)
    return traces, weights, f"values: {kind}"


def test_fuzz_ariel(project_data, tmp_path, capsys):
    rng = random.Random(SEED)
    ref, samples = cut_task(project_data, tmp_path)
    campaign = Campaign("ariel", tmp_path / "runs")
    clean = {}
    for name, (traces, weights) in samples.items():
        clean[name, ".hdf5"] = hdf5_bytes({n: {"tracedata": t, "weights": w}
                                          for n, t, w in zip(NAMES, traces, weights)}, tmp_path / "clean.hdf5")
        members = posterior_members(traces, weights)
        clean[name, ".npz"] = npz_bytes({f"{k}.npy": npy_bytes(v) for k, v in members.items()})
    for _ in range(CASES):
        name = rng.choice(sorted(samples))
        suffix = rng.choice((".hdf5", ".npz"))
        traces, weights = samples[name]
        raw = clean[name, suffix]
        choice = pick(rng, [(0.4, "bytes"), (0.25, "internals"), (0.1, "structure"), (0.05, "values")])
        draw = False
        if choice == "bytes":
            # most often in the structure: HDF5's superblock and object headers, a zip's directory
            region = rng.choice((None, (0, 4096), (max(0, len(raw) - 2048), len(raw))))
            data, description = mutate_bytes(raw, rng, region)
        elif choice == "internals" and suffix == ".hdf5":
            data, description = mutate_hdf5_internals(traces, weights, rng, tmp_path)
        elif choice == "internals":
            data, description = mutate_npz_internals(traces, weights, rng)
        elif choice == "values":
            traces, weights, description = extreme_values(traces, weights, rng)
            members = posterior_members(traces, weights)
            data = (hdf5_bytes({n: {"tracedata": t, "weights": w} for n, t, w in zip(NAMES, traces, weights)},
                               tmp_path / "values.hdf5") if suffix == ".hdf5"
                    else npz_bytes({f"{k}.npy": npy_bytes(v) for k, v in members.items()}))
            draw = rng.random() < 0.3  # drawing Ariel's page costs a second or more: a sample of them
        else:
            files, description = mutate_structure({f"submission{suffix}": raw}, rng)
            campaign.run(ref, files, f"{description} [{suffix}]")
            continue
        campaign.run(ref, {f"submission{suffix}": data}, f"{description} [{suffix}]", draw=draw)
    campaign.assert_contract(capsys)
