"""Forward models: 7 retrieval parameters (+ star radius, planet mass) -> 52 transit depths on the Ariel grid.

``BuiltinForwardModel`` is the project's own vectorised analytic isothermal transmission model. It is an
*approximation* of the official TauREx 3 set-up (isothermal profile, H2/He fill gas with He/H2 = 0.17,
five constant-abundance trace gases, absorption + Rayleigh + CIA, 1e-5 Pa to 1e6 Pa), not a replacement:
its opacities are smooth band shapes from :data:`MOLECULAR_BANDS`, not line lists.

Physics. The slant optical depth of a chord through an isothermal, hydrostatic atmosphere whose number
density at the chord's closest point is n is

    tau(n) = sqrt(2 pi R0 H) * a * n + sqrt(pi R0 H) * b * n^2

with a = sum_i X_i sigma_i + Rayleigh (cross-sections per molecule, linear in density) and
b = X_H2^2 k_H2H2 + X_H2 X_He k_H2He (collision-induced absorption, quadratic in density). The apparent
radius is where tau = tau_eq = exp(-gamma_Euler) ~ 0.56 (Lecavelier des Etangs et al. 2008; de Wit &
Seager 2013), i.e. n_eq = 2 tau_eq / (A + sqrt(A^2 + 4 B tau_eq)) and

    z = H ln(n_surface / n_eq),  clipped to [0, H ln(P_surface / P_top)],   depth = ((R0 + z) / Rs)^2

where R0 = Rp is the radius at P_surface = 1e6 Pa, H = k T / (mu m_u g), g = G Mp / R0^2. Everything is a
handful of (K, 52) array operations, hence >1e5 spectra per second on one core.

``TaurexForwardModel`` runs the official TauREx 3 set-up when taurex and the opacity files are available.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ReferenceDataError
from .metrics import N_BINS, N_TARGETS, clip_to_prior

# Ariel spectral grid (instrument facts; FM_utils ``ariel_resolution``): bin centres and widths in um,
# ascending wavelength. The builtin model returns depths in this order.
WAVELENGTH_UM = np.array([
    0.55, 0.7, 0.95, 1.156375, 1.27490344, 1.40558104, 1.5496531, 1.70849254, 1.88361302, 1.9695975,
    2.00918641, 2.04957106, 2.09076743, 2.13279186, 2.17566098, 2.21939176, 2.26400154, 2.30950797,
    2.35592908, 2.40328325, 2.45158925, 2.50086619, 2.5511336, 2.60241139, 2.65471985, 2.70807972,
    2.76251213, 2.81803862, 2.8746812, 2.93246229, 2.99140478, 3.05153202, 3.11286781, 3.17543645,
    3.23926272, 3.30437191, 3.37078978, 3.43854266, 3.50765736, 3.57816128, 3.65008232, 3.72344897,
    4.03216667, 4.30545796, 4.59727234, 4.90886524, 5.24157722, 5.59683967, 5.97618103, 6.3812333,
    6.81373911, 7.2755592])
WIDTH_UM = np.array([
    0.10083333, 0.20416667, 0.30767045, 0.11301861, 0.12460302, 0.13737483, 0.15145575, 0.16697996,
    0.18409541, 0.03919888, 0.03998678, 0.04079051, 0.0416104, 0.04244677, 0.04329995, 0.04417028,
    0.0450581, 0.04596377, 0.04688764, 0.04783008, 0.04879147, 0.04977218, 0.0507726, 0.05179313,
    0.05283417, 0.05389614, 0.05497945, 0.05608453, 0.05721183, 0.05836179, 0.05953486, 0.06073151,
    0.06195222, 0.06319746, 0.06446773, 0.06576353, 0.06708537, 0.06843379, 0.06980931, 0.07121248,
    0.07264385, 0.07410399, 0.26461764, 0.28255283, 0.30170364, 0.32215244, 0.34398722, 0.36730191,
    0.39219681, 0.41877904, 0.44716295, 0.47747067])

# Constants (SI). RJUP, MJUP, RSOL as TauREx uses them (astropy values).
K_BOLTZMANN = 1.380649e-23
G_NEWTON = 6.67430e-11
AMU = 1.66053906660e-27
RJUP = 7.1492e7
MJUP = 1.898e27
RSOL_TAUREX = 6.957e8
#: The official code divides the auxiliary table's star radius by this before TauREx multiplies by RSOL.
RSOL_AUX = 696_340_000.0
P_SURFACE = 1e6
P_TOP = 1e-5
HE_H2_RATIO = 0.17
TAU_EQ = float(np.exp(-np.euler_gamma))
T_MIN = 1.0  # K; the prior allows T = 0, where the atmosphere has no height

MOLECULES = ("H2O", "CO2", "CO", "CH4", "NH3")
CIA_PAIRS = ("H2-H2", "H2-He")
N_LAYERS = 100
MOLAR_MASS = {"H2O": 18.015, "CO2": 44.01, "CO": 28.01, "CH4": 16.04, "NH3": 17.031, "H2": 2.016,
              "He": 4.0026}

#: Band table the opacity table is generated from: molecule -> (continuum floor in cm^2, bands), each
#: band (centre in um, band-averaged peak cross-section in cm^2/molecule, Gaussian sigma in cm^-1).
#: Centres are the molecules' known vibrational bands; strengths are order-of-magnitude values for
#: ~1000 K, chosen so that the relative band strengths look like low-resolution line-list spectra.
#: They are illustrative, not line-list data.
MOLECULAR_BANDS = {
    "H2O": (3e-27, [(0.94, 3e-23, 150), (1.14, 1e-22, 180), (1.38, 6e-22, 220), (1.87, 1.5e-21, 250),
                    (2.7, 8e-21, 300), (6.3, 5e-21, 250)]),
    "CO2": (1e-26, [(1.43, 2e-23, 60), (1.6, 3e-23, 60), (2.0, 2e-22, 80), (2.7, 2e-20, 120),
                    (4.3, 4e-19, 100)]),
    "CO": (1e-27, [(1.57, 3e-24, 60), (2.35, 2e-21, 100), (4.67, 4e-20, 130)]),
    "CH4": (1e-26, [(1.15, 5e-23, 120), (1.4, 1e-22, 150), (1.7, 8e-22, 150), (2.3, 3e-21, 180),
                    (3.3, 3e-20, 200), (7.7, 1e-20, 150)]),
    "NH3": (1e-26, [(1.5, 2e-22, 150), (2.0, 5e-22, 130), (2.25, 4e-22, 120), (3.0, 6e-21, 200),
                    (6.1, 4e-21, 200)]),
}
#: Collision-induced absorption, same layout, in cm^5 molecule^-2: H2-H2 fundamental (2.4 um) and first
#: overtone (1.2 um) and the roto-translational band's short-wavelength tail; H2-He scaled by 0.4.
CIA_BANDS = {
    "H2-H2": (1e-49, [(2.4, 1e-46, 600), (1.2, 8e-48, 500), (17.0, 3e-46, 400)]),
    "H2-He": (4e-50, [(2.4, 4e-47, 600), (1.2, 3.2e-48, 500), (17.0, 1.2e-46, 400)]),
}


def band_cross_section(floor_and_bands, wavenumber, broadening=1.0) -> np.ndarray:
    """A band model of :data:`MOLECULAR_BANDS` / :data:`CIA_BANDS` (floor + Gaussians in wavenumber)
    at ``wavenumber`` (cm^-1, any shape), in the table's units (cm^2 or cm^5). ``broadening`` widens every
    band by that factor at constant band-integrated strength (peak divided by it); 1 is the table."""
    floor, bands = floor_and_bands
    nu = np.asarray(wavenumber, dtype=np.float64)
    total = np.full(nu.shape, floor)
    for centre_um, peak, sigma_cm in bands:
        width = sigma_cm * broadening
        total += peak / broadening * np.exp(-0.5 * ((nu - 1e4 / centre_um) / width) ** 2)
    return total


def _bin_average(floor_and_bands, samples_per_bin: int = 64) -> np.ndarray:
    """Average a band model over each Ariel bin, on a fine wavenumber grid spanning the bin."""
    offsets = (np.arange(samples_per_bin) + 0.5) / samples_per_bin - 0.5
    wl = WAVELENGTH_UM[:, None] + offsets[None, :] * WIDTH_UM[:, None]
    return band_cross_section(floor_and_bands, 1e4 / wl).mean(axis=1)


def opacity_table() -> dict[str, np.ndarray]:
    """The generated per-bin table, in SI (m^2 per molecule; m^5 per molecule^2 for CIA): one 52-array
    per molecule, 'Rayleigh_H2', 'Rayleigh_He', 'CIA_H2-H2', 'CIA_H2-He'."""
    table = {m: _bin_average(MOLECULAR_BANDS[m]) * 1e-4 for m in MOLECULES}
    wl_angstrom = WAVELENGTH_UM * 1e4
    # Dalgarno & Williams (1962) for H2; Chan & Dalgarno (1965) form for He; cm^2 -> m^2.
    table["Rayleigh_H2"] = (8.14e-13 / wl_angstrom ** 4 + 1.28e-6 / wl_angstrom ** 6
                            + 1.61 / wl_angstrom ** 8) * 1e-4
    table["Rayleigh_He"] = 5.484e-14 / wl_angstrom ** 4 * (1 + 2.44e5 / wl_angstrom ** 2) * 1e-4
    for pair, bands in CIA_BANDS.items():
        table["CIA_" + pair] = _bin_average(bands) * 1e-10
    return table


def _as_params(params) -> np.ndarray:
    arr = np.asarray(params, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != N_TARGETS:
        raise ValueError(f"params: expected shape (K, {N_TARGETS}), got {arr.shape}")
    return arr


def _positive_column(name: str, value, n_rows: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n_rows):
        raise ValueError(f"{name}: expected a scalar or {n_rows} values, got shape {arr.shape}")
    bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0)).reshape(-1))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] = {float(arr.reshape(-1)[bad[0]])!r} is not a positive number")
    return arr.reshape(-1, 1) if arr.ndim else arr


class BuiltinForwardModel:
    """Vectorised analytic isothermal transmission model (see the module docstring)."""

    name = "builtin"

    def __init__(self):
        table = opacity_table()
        self.sigma = np.stack([table[m] for m in MOLECULES])  # (5, 52)
        self.rayleigh_h2, self.rayleigh_he = table["Rayleigh_H2"], table["Rayleigh_He"]
        self.cia_h2h2, self.cia_h2he = table["CIA_H2-H2"], table["CIA_H2-He"]
        self.molar_mass = np.array([MOLAR_MASS[m] for m in MOLECULES])

    def spectra(self, params, star_radius_m, planet_mass_kg) -> np.ndarray:
        """(K, 52) transit depths (Rp_apparent / Rs)^2 for K parameter rows (the 7 targets in the order
        of docs/ariel.md#targets-and-prior, clipped to the prior first as the official code does), the
        planet's star radius (m, as in AuxillaryTable.csv; docs/ariel.md#star-radius-round-trip) and
        planet mass (kg): scalars, or one value per row."""
        p = clip_to_prior(_as_params(params))
        star_radius_m = _positive_column("star_radius_m", star_radius_m, p.shape[0])
        planet_mass_kg = _positive_column("planet_mass_kg", planet_mass_kg, p.shape[0])
        r0 = p[:, 0:1] * RJUP
        temp = np.maximum(p[:, 1:2], T_MIN)
        mix = 10.0 ** p[:, 2:]                                    # (K, 5)
        fill = 1.0 - mix.sum(axis=1, keepdims=True)
        x_h2 = fill / (1.0 + HE_H2_RATIO)
        x_he = fill - x_h2
        mu = (mix @ self.molar_mass)[:, None] + x_h2 * MOLAR_MASS["H2"] + x_he * MOLAR_MASS["He"]
        gravity = G_NEWTON * planet_mass_kg / r0 ** 2  # official: kg / 1.898e27 M_Jup, TauREx x MJUP
        scale_height = K_BOLTZMANN * temp / (mu * AMU * gravity)
        linear = mix @ self.sigma + x_h2 * self.rayleigh_h2 + x_he * self.rayleigh_he      # (K, 52)
        quadratic = x_h2 ** 2 * self.cia_h2h2 + x_h2 * x_he * self.cia_h2he
        chord = np.sqrt(np.pi * r0 * scale_height)
        big_a = np.sqrt(2.0) * chord * linear
        big_b = chord * quadratic
        n_eq = 2.0 * TAU_EQ / (big_a + np.sqrt(big_a ** 2 + 4.0 * big_b * TAU_EQ))
        n_surface = P_SURFACE / (K_BOLTZMANN * temp)
        height = scale_height * np.clip(np.log(n_surface / n_eq), 0.0, np.log(P_SURFACE / P_TOP))
        star_radius = star_radius_m / RSOL_AUX * RSOL_TAUREX
        return ((r0 + height) / star_radius) ** 2


class TaurexForwardModel:
    """The official set-up (docs/ariel.md#taurex-3-forward_model-taurex) on TauREx 3: transmission
    model, isothermal, H2/He fill (He/H2 0.17), 5 constant gases, absorption + Rayleigh + CIA (H2-H2,
    H2-He), 100 layers from 1e-5 to 1e6 Pa, binned with TauREx's flux binner onto the Ariel grid and
    returned in ascending wavelength like the builtin model.

    Needs ``taurex`` importable and a cross-section folder (one HDF5 file per molecule) and a CIA folder
    (HITRAN ``H2-H2_*.cia``, ``H2-He_*.cia``): the organisers' line lists, or for a smoke test the files of
    :func:`codascore.ariel.taurex_files.write_synthetic_opacities`. Set-up problems raise
    ReferenceDataError (an organiser's error). TauREx keeps its opacity and CIA caches process-wide, so
    building a model here empties them and points them at this model's folders.

    One deliberate difference from the official code: T is raised to ``T_MIN`` (1 K) as in the builtin
    model, because TauREx returns NaN at T = 0, which the prior allows."""

    name = "taurex"

    def __init__(self, opacity_path, cia_path):

        try:
            from taurex.binning import FluxBinner
            from taurex.cache import CIACache, OpacityCache
            from taurex.chemistry import ConstantGas, TaurexChemistry
            from taurex.contributions import AbsorptionContribution, CIAContribution, RayleighContribution
            from taurex.model import TransmissionModel
            from taurex.planet import Planet
            from taurex.stellar import BlackbodyStar
            from taurex.temperature import Isothermal
        except ImportError as exc:
            raise ReferenceDataError("forward_model: taurex is not installed (pip install taurex, or "
                                     f"pip install 'codascore[taurex]'): {exc}") from exc
        folders = {}
        for key, value in (("taurex_opacity_path", opacity_path), ("taurex_cia_path", cia_path)):
            if not value:
                raise ReferenceDataError(f"task.yaml: forward_model taurex needs {key} (a folder)")
            folder = Path(value).expanduser()
            if not folder.is_dir():
                raise ReferenceDataError(f"task.yaml: {key} = {str(value)!r} is not a folder")
            folders[key] = folder

        opacities, cia = OpacityCache(), CIACache()
        opacities.clear_cache()
        cia.cia_dict.clear()
        opacities.set_opacity_path(str(folders["taurex_opacity_path"]))
        cia.set_cia_path(str(folders["taurex_cia_path"]))
        # Load every table now so that a missing file is reported here, by name, not in the first run.
        self._xsec = {m: _load_or_explain(opacities, m, "taurex_opacity_path", folders,
                                          f"HDF5 cross-section file (*.h5) whose mol_name is {m!r}")
                      for m in MOLECULES}
        self._cia = {pair: _load_or_explain(cia, pair, "taurex_cia_path", folders,
                                            f"HITRAN CIA file {pair}_*.cia")
                     for pair in CIA_PAIRS}

        chemistry = TaurexChemistry(fill_gases=["H2", "He"], ratio=HE_H2_RATIO)
        for molecule in MOLECULES:
            chemistry.addGas(ConstantGas(molecule, mix_ratio=1e-5))
        self.model = TransmissionModel(planet=Planet(planet_radius=1.0, planet_mass=1.0),
                                       temperature_profile=Isothermal(T=1000.0), chemistry=chemistry,
                                       star=BlackbodyStar(radius=1.0), atm_min_pressure=P_TOP,
                                       atm_max_pressure=P_SURFACE, nlayers=N_LAYERS)
        self.model.add_contribution(AbsorptionContribution())
        self.model.add_contribution(RayleighContribution())
        self.model.add_contribution(CIAContribution(cia_pairs=list(CIA_PAIRS)))
        self.model.build()
        # The binner sorts its grid by wavenumber (descending wavelength); _order maps it back.
        wavenumber = 1e4 / WAVELENGTH_UM
        self._order = np.argsort(wavenumber)
        self.binner = FluxBinner(wngrid=wavenumber[self._order],
                                 wngrid_width=(1e4 * WIDTH_UM / WAVELENGTH_UM ** 2)[self._order])

    def spectra(self, params, star_radius_m, planet_mass_kg) -> np.ndarray:
        """(K, 52) transit depths, same arguments and order as :meth:`BuiltinForwardModel.spectra`
        (one TauREx run per row)."""
        p = clip_to_prior(_as_params(params))
        n = p.shape[0]
        star_radius = np.broadcast_to(_positive_column("star_radius_m", star_radius_m, n), (n, 1))[:, 0]
        planet_mass = np.broadcast_to(_positive_column("planet_mass_kg", planet_mass_kg, n), (n, 1))[:, 0]
        out = np.empty((n, N_BINS))
        self._activate()
        for k, row in enumerate(p):
            # Official round trip: the table's metres / 696,340,000 in solar radii, times TauREx's RSOL.
            self.model.star._radius = star_radius[k] / RSOL_AUX * RSOL_TAUREX
            self.model["planet_mass"] = planet_mass[k] / MJUP
            self.model["planet_radius"] = row[0]
            self.model["T"] = max(row[1], T_MIN)
            for molecule, log_mix in zip(MOLECULES, row[2:]):
                self.model[molecule] = 10.0 ** log_mix
            out[k, self._order] = self.binner.bin_model(self.model.model())[1]
        return out


    def _activate(self) -> None:
        """Put this model's tables back into TauREx's process-wide caches if another instance (built
        on other folders) has replaced them since: TauREx looks them up on every run."""
        from taurex.cache import CIACache, OpacityCache

        for current, tables in ((OpacityCache().opacity_dict, self._xsec), (CIACache().cia_dict, self._cia)):
            if any(current.get(name) is not table for name, table in tables.items()):
                current.clear()
                current.update(tables)


def _load_or_explain(cache, name: str, key: str, folders: dict, what: str):

    try:
        return cache[name]
    except Exception as exc:  # TauREx raises a bare Exception for a missing table
        raise ReferenceDataError(f"task.yaml: {key} = {str(folders[key])!r} has no {what} "
                                 f"(TauREx: {exc})") from exc


def make_forward_model(config: dict):
    """The forward model named by task.yaml's ``forward_model``."""
    kind = config.get("forward_model", "builtin")
    if kind == "builtin":
        return BuiltinForwardModel()
    if kind == "taurex":
        return TaurexForwardModel(config.get("taurex_opacity_path"), config.get("taurex_cia_path"))
    raise ValueError(f"forward_model: unknown value {kind!r} (builtin or taurex)")
