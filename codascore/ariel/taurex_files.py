"""Synthetic TauREx 3 input files, made from the builtin model's band table, to smoke-test a TauREx set-up.

The official ADC2023 forward model reads molecular cross-sections and HITRAN collision-induced absorption
(CIA) tables from the organisers' line-list download. That download cannot be shipped or fetched here, so
this module writes small stand-ins in the same two formats, with values generated from
:data:`~codascore.ariel.forward_model.MOLECULAR_BANDS` and
:data:`~codascore.ariel.forward_model.CIA_BANDS`. TauREx runs on them exactly as on real files; the
spectra are then comparable with the builtin model, not official.

Formats (as TauREx 3.3 reads them):

* Cross-sections, one HDF5 file per molecule (``*.h5``; the ExoMolOP "TauREx" layout): ``mol_name``
  (a 1-array of bytes: how TauREx finds the molecule, whatever the file name), ``p`` (pressures, attribute
  ``units``), ``t`` (temperatures in K), ``bin_edges`` (ascending wavenumbers in cm^-1, one per sample
  despite the name) and ``xsecarr`` of shape (len(p), len(t), len(bin_edges)) in cm^2 per molecule.
* CIA, one text file per pair named ``<pair>_<anything>.cia``: for each temperature a header line
  (pair, wavenumber min and max, number of points, temperature, maximum value, resolution, comment)
  followed by that many lines "wavenumber  value", values in cm^5 per molecule^2.

Temperature dependence: each band widens as sqrt(T / 1000 K) at constant integrated strength, so the
files equal the builtin table at 1000 K. Cross-sections do not depend on pressure (smooth low-resolution
bands); the pressure axis only spans the model atmosphere (1e-5 Pa to 1e6 Pa).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .forward_model import CIA_BANDS, CIA_PAIRS, MOLECULAR_BANDS, MOLECULES, P_SURFACE, P_TOP, band_cross_section

#: Temperature grid of the synthetic files (K); TauREx holds values beyond the ends constant.
TEMPERATURES_K = (200.0, 400.0, 700.0, 1000.0, 1500.0, 2000.0, 3000.0, 4500.0, 7000.0)
#: Pressure grid of the cross-sections (bar, one per decade), covering the model atmosphere.
PRESSURES_BAR = np.logspace(np.log10(P_TOP / 1e5), np.log10(P_SURFACE / 1e5), 12)
#: Wavenumber range of the cross-sections (cm^-1): 0.45 to 8.5 um, beyond the Ariel bins' edges.
XSEC_WAVENUMBER_RANGE = (1e4 / 8.5, 1e4 / 0.45)
#: CIA tables run on a uniform grid like HITRAN's, here 20 cm^-1 steps from 20 to 22500 cm^-1.
CIA_WAVENUMBERS = np.arange(20.0, 22500.0 + 1.0, 20.0)


def broadening(temperature_k: float) -> float:
    """Band widening factor of the synthetic files at ``temperature_k``: sqrt(T / 1000 K)."""
    return float(np.sqrt(temperature_k / 1000.0))


def xsec_wavenumbers(resolution: float = 500.0) -> np.ndarray:
    """Ascending wavenumber grid (cm^-1) of constant resolving power ``resolution`` = nu / d(nu)."""
    if not resolution > 0:
        raise ValueError(f"resolution = {resolution!r} must be positive")
    lo, hi = XSEC_WAVENUMBER_RANGE
    n = int(np.ceil(resolution * np.log(hi / lo))) + 1
    return np.geomspace(lo, hi, n)


def write_xsec_file(path, molecule: str, resolution: float = 500.0) -> Path:
    """Write one synthetic cross-section file for ``molecule`` (a key of MOLECULAR_BANDS)."""
    import h5py

    if molecule not in MOLECULAR_BANDS:
        raise ValueError(f"molecule = {molecule!r}: no band table (known: {', '.join(MOLECULAR_BANDS)})")
    wavenumber = xsec_wavenumbers(resolution)
    per_temperature = np.stack([band_cross_section(MOLECULAR_BANDS[molecule], wavenumber, broadening(t))
                                for t in TEMPERATURES_K])
    xsec = np.broadcast_to(per_temperature, (len(PRESSURES_BAR),) + per_temperature.shape)
    path = Path(path)
    with h5py.File(path, "w") as f:
        f.attrs["description"] = ("codascore synthetic cross-sections from the builtin band table; "
                                  "for smoke tests only, not line-list data")
        f.create_dataset("mol_name", data=np.array([molecule.encode()]))  # a 1-array, as TauREx indexes it
        f.create_dataset("p", data=PRESSURES_BAR).attrs["units"] = "bar"
        f.create_dataset("t", data=np.asarray(TEMPERATURES_K))
        f.create_dataset("bin_edges", data=wavenumber)
        f.create_dataset("xsecarr", data=xsec)
    return path


def write_cia_file(path, pair: str) -> Path:
    """Write one synthetic HITRAN-format CIA file for ``pair`` ('H2-H2' or 'H2-He')."""
    if pair not in CIA_BANDS:
        raise ValueError(f"pair = {pair!r}: no band table (known: {', '.join(CIA_BANDS)})")
    nu = CIA_WAVENUMBERS
    lines = []
    for t in TEMPERATURES_K:
        values = band_cross_section(CIA_BANDS[pair], nu, broadening(t))
        lines.append(f"{pair:>20}{nu[0]:10.3f}{nu[-1]:10.3f}{nu.size:7d}{t:7.1f}{values.max():10.3E}"
                     f"{nu[1] - nu[0]:6.1f} codascore synthetic")
        lines.extend(f"{w:10.3f} {v:10.3E}" for w, v in zip(nu, values))
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


def write_synthetic_opacities(xsec_dir, cia_dir, molecules=MOLECULES, resolution: float = 500.0):
    """Write synthetic cross-sections for ``molecules`` into ``xsec_dir`` and H2-H2 / H2-He CIA tables
    into ``cia_dir`` (both created if needed), ready for ``forward_model: taurex`` with
    ``taurex_opacity_path: xsec_dir`` and ``taurex_cia_path: cia_dir``. Returns the written paths.
    Deterministic: the same arguments give byte-identical CIA files and identical HDF5 datasets."""
    xsec_dir, cia_dir = Path(xsec_dir), Path(cia_dir)
    xsec_dir.mkdir(parents=True, exist_ok=True)
    cia_dir.mkdir(parents=True, exist_ok=True)
    written = [write_xsec_file(xsec_dir / f"{m}__codascore_synthetic.xsec.TauREx.h5", m, resolution)
               for m in molecules]
    written += [write_cia_file(cia_dir / f"{pair}_codascore_synthetic.cia", pair) for pair in CIA_PAIRS]
    return written
