"""The files of ``ariel.retrieval``: their names, readers, validators and writers.

Posterior files (submissions and the ground truth), docs/ariel.md#submission-files: one group per test
planet, ``Planet_public{n}`` in planet order, each holding ``tracedata`` (M x 7, in the targets' order)
and ``weights`` (M); in an NPZ file the keys are ``Planet_public{n}/tracedata`` and
``Planet_public{n}/weights``. Reference folder: ``planets.csv``, the ground truth and the frozen
ground-truth spectra ``spectral_truth.npz``; input folder (code submissions): ``spectra.npz`` and
``AuxillaryTable.csv``. Readers only read; :func:`validate_posteriors` checks every rule and names
planet, dataset and index; nothing here computes a score.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError, SubmissionError
from ..validate import Problems
from .metrics import N_TARGETS, SUM_TOLERANCE

#: The entry file of a code submission: its predict(spectra, noise, aux) (ariel/ingest.py).
ENTRY_FILE = "model.py"

DATASETS = ("tracedata", "weights")
#: What ingestion writes and the official helper names a submission.
SUBMISSION_FILE = "submission.hdf5"
GROUND_TRUTH_FILES = ("ground_truth.hdf5", "ground_truth.h5", "ground_truth.npz")
PLANETS_FILE = "planets.csv"
PLANETS_COLUMNS = ("planet", "star_radius_m", "planet_mass_kg", "in_spectral_subset")
SPECTRAL_TRUTH_FILE = "spectral_truth.npz"
SPECTRA_FILE = "spectra.npz"
#: The ADC2023 spelling of the auxiliary table's name.
AUX_FILE = "AuxillaryTable.csv"
AUX_COLUMNS = ("planet_ID", "star_radius_m", "planet_mass_kg")
QUARTILES = ("q1", "q2", "q3")
#: task.yaml settings the frozen ground-truth spectra depend on (with TauREx, also its two folders).
FROZEN_KEYS = ("seed", "spectral_samples", "argsort_compat", "forward_model")
TAUREX_KEYS = ("taurex_opacity_path", "taurex_cia_path")
HDF5_SUFFIXES = (".hdf5", ".h5")
NPZ_SUFFIX = ".npz"
#: Arrays larger than this many elements are refused before they are read (memory guard; a submission's
#: own limit, max_samples rows, is far smaller).
MAX_ELEMENTS = 50_000_000
#: The rows a posterior file's datasets may declare when no task limit applies (the ground truth).
ALL_ROWS = (0, MAX_ELEMENTS // N_TARGETS)


@dataclasses.dataclass
class Posteriors:
    """Validated weighted samples, one per expected planet, in reference order."""

    names: list[str]
    traces: list[np.ndarray]
    weights: list[np.ndarray]
    warnings: list[str] = dataclasses.field(default_factory=list)


def planet_name(index: int) -> str:
    """Group name of the index-th test planet (0-based), as the official helper writes it."""
    return f"Planet_public{index + 1}"


# -------------------------------------------------------------------------------------------- finding
def find_posterior_file(folder: Path) -> Path:
    """The submission file in folder: ``submission.hdf5`` / ``submission.h5`` / ``submission.npz`` when
    exactly one of these is present (code submissions also leave their own files beside it), else the
    single *.hdf5 / *.h5 / *.npz file. SubmissionError when there is none or the choice is ambiguous."""
    folder = Path(folder)
    candidates = sorted(p for p in folder.iterdir() if p.is_file()
                        and p.suffix.lower() in HDF5_SUFFIXES + (NPZ_SUFFIX,))
    preferred = [p for p in candidates if p.stem == "submission"]
    if len(preferred) == 1:
        return preferred[0]
    if not candidates:
        present = sorted(p.name for p in folder.iterdir())[:10]
        raise SubmissionError(f"no submission file: expected submission.hdf5 (or submission.npz) at the "
                              f"top of the zip, found {present}")
    if len(candidates) > 1:
        names = [p.name for p in (preferred or candidates)]
        raise SubmissionError(f"several submission files {names}: submit exactly one")
    return candidates[0]


# -------------------------------------------------------------------------------------------- reading
def read_posterior_file(path: Path, only: set[str] | None = None,
                        rows: tuple[int, int] = ALL_ROWS) -> dict[str, dict[str, object]]:
    """{group: {dataset: array or a string describing what was found instead}} from HDF5 or NPZ.
    Groups not in ``only`` (when given) are listed with no datasets and never read. What a dataset
    declares (dataspace, shape, dtype) is checked before any of it is read: (M, 7) tracedata and (M,)
    weights with rows[0] <= M <= rows[1], numbers only (docs/ariel.md#limits-of-a-posterior-file).

    Raises SubmissionError when the file cannot be opened or walked at all."""
    path = Path(path)
    if path.suffix.lower() in HDF5_SUFFIXES:
        return _read_hdf5(path, only, rows)
    return _read_npz(path, only, rows)


def declared_problem(dataset: str, shape, dtype, rows: tuple[int, int]) -> str | None:
    """Why a dataset is refused from what it declares alone (before its values are read), or None."""
    if shape is None:
        return "has a null dataspace (it holds no values)"
    width = (N_TARGETS,) if dataset == "tracedata" else ()
    wanted = f"(M, {N_TARGETS})" if width else "(M,)"
    if len(shape) != 1 + len(width) or tuple(shape[1:]) != width:
        return f"has shape {tuple(shape)}, expected {wanted}"
    if not rows[0] <= shape[0] <= rows[1]:
        return f"has M = {shape[0]} samples; allowed {rows[0]} <= M <= {rows[1]}"
    if dtype.kind not in "fiu" or dtype.hasobject:
        return f"has dtype {dtype}, not numbers"
    return None


def _read_hdf5(path: Path, only: set[str] | None = None, rows: tuple[int, int] = ALL_ROWS) -> dict:
    try:
        import h5py
    except ImportError:
        raise SubmissionError(f"{path.name}: HDF5 needs h5py, which this scorer lacks; submit submission.npz")
    groups: dict[str, dict[str, object]] = {}
    where = ""
    # A damaged file makes h5py raise almost anything (OSError, RuntimeError, KeyError, TypeError,
    # ValueError) from its C library: every failure inside it is the participant's file.
    try:
        with h5py.File(path, "r") as handle:
            for key in handle:
                # h5py gives a name that is not UTF-8 as bytes
                name = key if isinstance(key, str) else key.decode("utf-8", "backslashreplace")
                where = f"group {name[:80]!r}"
                if only is not None and name not in only:
                    groups[name] = {}
                    continue
                # Links could make the scorer read other files (e.g. the reference): only hard links count.
                if not isinstance(handle.get(key, getlink=True), h5py.HardLink):
                    groups[name] = {"": "is a soft or external link; only plain groups are accepted"}
                    continue
                group = handle[key]
                if not isinstance(group, h5py.Group):
                    groups[name] = {"": f"is a {type(group).__name__}, not a group"}
                    continue
                entry: dict[str, object] = {}
                for dataset in DATASETS:
                    where = f"{name}/{dataset}"
                    if dataset in group:
                        entry[dataset] = _read_dataset(h5py, group, dataset, rows)
                groups[name] = entry
    except Exception as exc:  # noqa: BLE001 (see above)
        raise SubmissionError(f"{path.name}: not a readable HDF5 file ({where + ': ' if where else ''}"
                              f"{type(exc).__name__}: {str(exc)[:200]})") from None
    return groups


def _read_dataset(h5py, group, dataset: str, rows: tuple[int, int]):
    """The dataset as float64, or a string saying why it is refused."""
    if not isinstance(group.get(dataset, getlink=True), h5py.HardLink):
        return "is a soft or external link; only plain datasets are accepted"
    item = group[dataset]
    if not isinstance(item, h5py.Dataset):
        return "is not a dataset"
    if item.external or item.is_virtual:
        return "stores its data in other files; only self-contained datasets are accepted"
    problem = declared_problem(dataset, item.shape, item.dtype, rows)
    if problem:
        return problem
    return np.asarray(item[()], dtype=np.float64)


#: What reading a damaged zip or .npy member raises (zipfile, zlib, numpy.lib.format, which tokenizes the
#: header and builds a dtype from it).
_NPZ_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError,
               RuntimeError, struct.error, tokenize.TokenError, SyntaxError, TypeError)


def _read_npz(path: Path, only: set[str] | None = None, rows: tuple[int, int] = ALL_ROWS) -> dict:
    groups: dict[str, dict[str, object]] = {}
    try:
        archive = zipfile.ZipFile(path)
    except _NPZ_ERRORS as exc:
        raise SubmissionError(f"{path.name}: not a readable NPZ file ({type(exc).__name__}: {str(exc)[:200]})")
    with archive:
        for info in archive.infolist():
            member = info.filename
            key = member[:-len(".npy")] if member.endswith(".npy") else member
            group, _, dataset = key.rpartition("/")
            entry = groups.setdefault(group or key, {})
            if dataset not in DATASETS or not group or (only is not None and group not in only):
                continue
            if not member.endswith(".npy"):
                entry[dataset] = f"is the member {member[:80]!r}, not an .npy array"
                continue
            try:
                entry[dataset] = _read_npy_member(archive, info, dataset, rows)
            except _NPZ_ERRORS as exc:
                entry[dataset] = f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
    return groups


def _read_npy_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dataset: str, rows: tuple[int, int]):
    """One .npy member as float64, its header checked before its values are read; or why it is refused."""
    with archive.open(info) as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            return f"is an .npy file of format version {version}; versions 1.0 and 2.0 are read"
        problem = declared_problem(dataset, shape, dtype, rows)
        if problem:
            return problem
        size = int(np.prod(shape)) * dtype.itemsize
        data = handle.read(size)
        if len(data) != size:
            return f"is truncated: its header declares {size} bytes of values, the member holds {len(data)}"
        if handle.read(1):  # reading to the end also checks the member's CRC
            return "holds more bytes than its header declares"
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran_order else "C").astype(np.float64)


# ----------------------------------------------------------------------------------------- validating
def _check_groups(groups: dict, expected: list[str], file_label: str, problems: Problems,
                  warnings: list[str]) -> None:
    """The planets the file lacks (a problem) and the groups it holds beyond them (a warning, ignored)."""
    missing = [name for name in expected if name not in groups]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        problems.add(f"{file_label}: {len(missing)} planet group(s) missing: {shown} "
                     f"(expected {expected[0]} ... {expected[-1]})")
    extra = sorted(set(groups) - set(expected))
    if extra:
        warnings.append(f"{file_label}: {len(extra)} unexpected group(s) ignored: {', '.join(extra[:5])}"
                        + (" ..." if len(extra) > 5 else ""))


def _planet_arrays(entry: dict, name: str, file_label: str, problems: Problems):
    """A planet's (tracedata, weights) when both were read with the shapes (M, N_TARGETS) and (M,); else None,
    the problems added."""
    trace, w = entry.get("tracedata"), entry.get("weights")
    ok = True
    for dataset, value in (("tracedata", trace), ("weights", w)):
        if "" in entry:
            problems.add(f"{file_label}: {name} {entry['']}")
            ok = False
            break
        if value is None:
            problems.add(f"{file_label}: {name}/{dataset} is missing")
            ok = False
        elif isinstance(value, str):
            problems.add(f"{file_label}: {name}/{dataset} {value}")
            ok = False
    if not ok:
        return None
    if trace.ndim != 2 or trace.shape[1] != N_TARGETS:
        problems.add(f"{file_label}: {name}/tracedata has shape {trace.shape}, expected (M, {N_TARGETS})")
        ok = False
    if w.ndim != 1:
        problems.add(f"{file_label}: {name}/weights has shape {w.shape}, expected (M,)")
        ok = False
    if not ok:
        return None
    m = trace.shape[0]
    if w.shape[0] != m:
        problems.add(f"{file_label}: {name}/weights has {w.shape[0]} values but {name}/tracedata has "
                     f"{m} rows")
        return None
    return trace, w


def _planet_values_ok(trace: np.ndarray, w: np.ndarray, name: str, file_label: str, min_samples: int,
                      max_samples: int, problems: Problems) -> bool:
    """Whether the sample count is allowed, every value finite and every weight >= 0; each problem added."""
    ok = True
    m = trace.shape[0]
    if not min_samples <= m <= max_samples:
        problems.add(f"{file_label}: {name}/tracedata has M = {m} samples; allowed "
                     f"{min_samples} <= M <= {max_samples}")
        ok = False
    bad = np.argwhere(~np.isfinite(trace))
    if bad.size:
        i, j = bad[0]
        problems.add(f"{file_label}: {name}/tracedata[{i}][{j}] = {trace[i, j]} is not finite"
                     + (f" ({len(bad)} such values)" if len(bad) > 1 else ""))
        ok = False
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        problems.add(f"{file_label}: {name}/weights[{bad[0]}] = {w[bad[0]]} is not finite"
                     + (f" ({bad.size} such values)" if bad.size > 1 else ""))
        ok = False
    negative = np.flatnonzero(w < 0)
    if negative.size:
        problems.add(f"{file_label}: {name}/weights[{negative[0]}] = {float(w[negative[0]])!r} is negative"
                     + (f" ({negative.size} such values)" if negative.size > 1 else ""))
        ok = False
    return ok


def validate_posteriors(groups: dict, expected: list[str], file_label: str, min_samples: int = 1000,
                        max_samples: int = 5000, sum_tolerance: float = 1e-5) -> Posteriors:
    """Check every expected planet (shapes, finite values, weights >= 0 summing to 1, sample count) and
    return them in expected order, weights renormalised when |sum - 1| is within sum_tolerance but above
    the official scorer's sqrt(eps) (docs/ariel.md#renormalised-weights); negative weights are refused
    (docs/ariel.md#negative-weights-are-rejected). Raises SubmissionError listing every problem."""
    problems = Problems()
    warnings: list[str] = []
    traces, weights = [], []
    renormalised = []
    _check_groups(groups, expected, file_label, problems, warnings)
    for name in expected:
        if name not in groups:
            continue
        arrays = _planet_arrays(groups[name], name, file_label, problems)
        if arrays is None:
            continue
        trace, w = arrays
        if not _planet_values_ok(trace, w, name, file_label, min_samples, max_samples, problems):
            continue
        total = float(np.sum(w))
        if not abs(total - 1.0) <= sum_tolerance:
            problems.add(f"{file_label}: {name}/weights sum to {total!r}, not 1 within {sum_tolerance:g}")
            continue
        if abs(total - 1.0) > SUM_TOLERANCE:
            w = w / total
            renormalised.append(name)
        traces.append(trace)
        weights.append(w)
    problems.raise_if_any()
    if renormalised:
        warnings.append(f"{file_label}: weights of {len(renormalised)} planet(s) (first {renormalised[0]}) "
                        f"summed to 1 only within {sum_tolerance:g}, not {SUM_TOLERANCE:.3g} as the official "
                        "scorer requires; they were divided by their sum")
    return Posteriors(list(expected), traces, weights, warnings)


def load_posteriors(folder: Path, expected: list[str], min_samples: int = 1000, max_samples: int = 5000,
                    sum_tolerance: float = 1e-5) -> Posteriors:
    """Find, read and validate the single posterior file in folder."""
    path = find_posterior_file(folder)
    groups = read_posterior_file(path, set(expected), rows=(min_samples, max_samples))
    return validate_posteriors(groups, expected, path.name, min_samples, max_samples, sum_tolerance)


def check_posterior_format(folder: Path, min_samples: int = 1000, max_samples: int = 5000,
                           sum_tolerance: float = 1e-5) -> str:
    """The reference-free check (``codascore validate``): every planet group the file holds is validated as
    scoring validates it, one group read at a time (so no more is held than scoring holds); which planets
    must be there is known only to the reference. A one-line summary."""
    path = find_posterior_file(folder)
    names = sorted(read_posterior_file(path, set()))  # the group names alone: no dataset is read
    if not names:
        raise SubmissionError(f"{path.name}: holds no planet group (expected one group per test planet, e.g. "
                              f"{planet_name(0)}, each with tracedata and weights)")
    problems = Problems()
    for name in names:
        try:
            groups = read_posterior_file(path, {name}, rows=(min_samples, max_samples))
            validate_posteriors(groups, [name], path.name, min_samples, max_samples, sum_tolerance)
        except SubmissionError as exc:
            for problem in exc.problems:
                problems.add(problem)
    problems.raise_if_any()
    return (f"{path.name}: {len(names)} planet groups, each with finite tracedata (M, {N_TARGETS}) and weights "
            f">= 0 summing to 1; scoring checks that every test planet is there")


# -------------------------------------------------------------------------------------------- writing
def write_posteriors_hdf5(path: Path, names, traces, weights) -> None:
    """The official layout: group per planet with attribute ID = index, datasets tracedata, weights."""
    import h5py

    with h5py.File(path, "w") as handle:
        for index, (name, trace, w) in enumerate(zip(names, traces, weights)):
            group = handle.create_group(name)
            group.attrs["ID"] = index
            group.create_dataset("tracedata", data=np.asarray(trace, dtype=np.float64))
            group.create_dataset("weights", data=np.asarray(w, dtype=np.float64))


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez equivalent with fixed zip timestamps, so that generated files are byte-identical."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for key, value in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, buffer.getvalue())


def posteriors_npz_arrays(names, traces, weights) -> dict[str, np.ndarray]:
    out = {}
    for name, trace, w in zip(names, traces, weights):
        out[f"{name}/tracedata"] = np.asarray(trace, dtype=np.float64)
        out[f"{name}/weights"] = np.asarray(w, dtype=np.float64)
    return out


def hdf5_to_npz(source: Path, target: Path) -> None:
    """Starting-kit converter: an official-layout HDF5 file to the equivalent NPZ (no validation)."""
    groups = _read_hdf5(Path(source))
    arrays = {f"{g}/{d}": v for g, entry in groups.items() for d, v in entry.items()
              if isinstance(v, np.ndarray)}
    write_npz(Path(target), arrays)



# ---------------------------------------------------------------------------------- reference data
def read_planets(ref_dir: Path):
    """planets.csv as a pandas DataFrame (one row per scored planet, in scoring order) and the planet
    names; ReferenceDataError when the file, a column or a unique non-empty name is missing."""
    import pandas as pd

    path = Path(ref_dir) / PLANETS_FILE
    if not path.is_file():
        raise ReferenceDataError(f"reference data: {PLANETS_FILE} is missing")
    planets = pd.read_csv(path)
    for column in PLANETS_COLUMNS:
        if column not in planets.columns:
            raise ReferenceDataError(f"reference {PLANETS_FILE}: column {column!r} is missing")
    names = [str(n) for n in planets["planet"]]
    if len(set(names)) != len(names) or not names:
        raise ReferenceDataError(f"reference {PLANETS_FILE}: planet names must be unique and non-empty")
    return planets, names


def read_ground_truth(ref_dir: Path, names: list[str], sum_tolerance: float) -> Posteriors:
    """The ground-truth posteriors of the named planets. The ground truth obeys the official scorer's
    rules (any M, weights summing to 1), not the submission's M limits."""
    ref_dir = Path(ref_dir)
    path = next((ref_dir / name for name in GROUND_TRUTH_FILES if (ref_dir / name).is_file()), None)
    if path is None:
        raise ReferenceDataError(f"reference data: none of {GROUND_TRUTH_FILES} found")
    try:
        return validate_posteriors(read_posterior_file(path, set(names)), names, path.name, 1, 10 ** 9,
                                   sum_tolerance)
    except SubmissionError as exc:
        raise ReferenceDataError(f"reference ground truth is invalid: {exc}") from exc


def frozen_meta(config: dict) -> dict:
    """The settings the frozen ground-truth spectra depend on (stored beside them, compared at scoring
    time). With TauREx they also depend on the line-list folders; builtin references keep their meta
    unchanged."""
    keys = FROZEN_KEYS + (TAUREX_KEYS if config["forward_model"] == "taurex" else ())
    return {key: config[key] for key in keys}


def write_spectral_truth(path: Path, quartiles: dict[str, list[tuple]], config: dict) -> None:
    """spectral_truth.npz: for each spectral method, the (q1, q2, q3) spectra of every spectral-subset
    planet stacked under ``<method>/q1|q2|q3``, and the settings they were made with under ``meta/*``."""
    arrays = {}
    for method, per_planet in quartiles.items():
        for k, key in enumerate(QUARTILES):
            arrays[f"{method}/{key}"] = np.stack([q[k] for q in per_planet])
    for key, value in frozen_meta(config).items():
        arrays[f"meta/{key}"] = np.array(str(value) if value is None else value)
    write_npz(path, arrays)


def read_spectral_truth(path: Path, config: dict, n_spectral: int) -> dict | None:
    """The frozen {q1, q2, q3} (each n_spectral x 52) of config's spectral method, or None when the file
    is absent or was made with other settings (the scorer then computes the ground-truth side)."""
    path = Path(path)
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as archive:
        stored = {key: archive[key] for key in archive.files}
    meta = {key[len("meta/"):]: stored[key].item() for key in stored if key.startswith("meta/")}
    wanted = frozen_meta(config)
    if {k: str(v) for k, v in meta.items()} != {k: str(v) for k, v in wanted.items()}:
        return None
    method = config["spectral_method"]
    try:
        frozen = {k: stored[f"{method}/{k}"] for k in QUARTILES}
    except KeyError:
        return None
    if any(v.shape[0] != n_spectral for v in frozen.values()):
        raise ReferenceDataError(f"{path.name}: {method} spectra do not match the spectral subset size")
    return frozen


# ------------------------------------------------------------------------- input data (code submissions)
def write_code_inputs(folder: Path, spectra, noise, wavelength_um, width_um, aux) -> None:
    """What a code submission's predict() reads: spectra.npz and AuxillaryTable.csv (aux: a DataFrame
    holding at least AUX_COLUMNS)."""
    write_npz(Path(folder) / SPECTRA_FILE, {"spectra": spectra, "noise": noise, "wavelength_um": wavelength_um,
                                           "width_um": width_um})
    aux[list(AUX_COLUMNS)].to_csv(Path(folder) / AUX_FILE, index=False, float_format="%.17g")


def read_code_inputs(folder: Path):
    """(spectra (P, 52), noise (P, 52), auxiliary DataFrame) from the input folder; ReferenceDataError
    when they cannot be read."""
    import pandas as pd

    folder = Path(folder)
    try:
        with np.load(folder / SPECTRA_FILE, allow_pickle=False) as archive:
            spectra, noise = archive["spectra"], archive["noise"]
        aux = pd.read_csv(folder / AUX_FILE)
    except (OSError, KeyError, ValueError) as exc:
        raise ReferenceDataError(f"input data: cannot read {SPECTRA_FILE} / {AUX_FILE} ({exc})") from exc
    return spectra, noise, aux
