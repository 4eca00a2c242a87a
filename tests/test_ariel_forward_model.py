"""Ariel forward models: the Ariel grid and the builtin analytic model's physics (TauREx: test_ariel_taurex.py)."""

from __future__ import annotations

import numpy as np
import pytest

from codascore.ariel import forward_model
from codascore.ariel.forward_model import WAVELENGTH_UM, WIDTH_UM, BuiltinForwardModel
from codascore.ariel.spectral_summaries import official_rows, posterior_spectra

BASE = np.array([1.0, 1200.0, -4.0, -8.0, -8.0, -8.0, -8.0])
SUN, MJ = 6.9634e8, 1.898e27


@pytest.fixture(scope="module")
def model():
    return BuiltinForwardModel()


def test_ariel_grid_matches_spec_checks():
    assert WAVELENGTH_UM.shape == WIDTH_UM.shape == (52,)
    assert np.all(np.diff(WAVELENGTH_UM) > 0)
    assert WAVELENGTH_UM[0] == 0.55 and WAVELENGTH_UM[-1] == 7.2755592
    assert WIDTH_UM[2] == 0.30767045


def test_shapes_and_vectorised_rows_equal_single_rows(model):
    rng = np.random.default_rng(0)
    params = BASE + rng.normal(size=(5, 7)) * [0.1, 200, 1, 1, 1, 1, 1]
    many = model.spectra(params, SUN, MJ)
    assert many.shape == (5, 52)
    np.testing.assert_allclose(many[3], model.spectra(params[3], SUN, MJ)[0], rtol=1e-12)
    per_row = model.spectra(params, np.full(5, SUN), np.full(5, MJ))
    np.testing.assert_allclose(per_row, many, rtol=1e-12)


def test_physics_directions(model):
    depth = model.spectra(BASE, SUN, MJ)[0]
    surface_only = (forward_model.RJUP / (SUN / forward_model.RSOL_AUX * forward_model.RSOL_TAUREX)) ** 2
    assert np.all(depth > surface_only) and np.all(depth < 1.2 * surface_only)
    # bigger planet, hotter atmosphere, lighter planet: deeper transits
    for column, value in ((0, 1.2), (1, 2000.0)):
        params = BASE.copy()
        params[column] = value
        assert np.all(model.spectra(params, SUN, MJ)[0] > depth)
    assert np.all(model.spectra(BASE, SUN, 0.5 * MJ)[0] > depth)
    assert np.all(model.spectra(BASE, 2 * SUN, MJ)[0] < depth / 3.9)
    # each molecule adds absorption where its strongest band is
    for column, band_um in ((3, 4.3), (4, 4.67), (5, 3.3), (6, 3.0)):
        params = BASE.copy()
        params[column] = -3.0
        gain = model.spectra(params, SUN, MJ)[0] - depth
        nearest = np.argmin(np.abs(WAVELENGTH_UM - band_um))
        assert gain[nearest] > 5e-5 and gain[nearest] > np.median(gain)


def test_zero_temperature_and_prior_edges_are_finite(model):
    edges = np.array([[0.1, 0.0, -12, -12, -12, -12, -12], [3.0, 7000.0, -1, -1, -1, -1, -1],
                      [5.0, 9000.0, 3, 3, 3, 3, 3]])
    depth = model.spectra(edges, SUN, MJ)
    assert np.all(np.isfinite(depth)) and np.all(depth > 0)
    np.testing.assert_array_equal(depth[1], depth[2])  # out-of-prior rows are clipped first


def test_invalid_inputs(model):
    with pytest.raises(ValueError, match=r"params: expected shape \(K, 7\)"):
        model.spectra(np.zeros((3, 6)), SUN, MJ)
    with pytest.raises(ValueError, match=r"star_radius_m\[1\]"):
        model.spectra(np.tile(BASE, (2, 1)), [SUN, -1.0], MJ)
    with pytest.raises(ValueError, match="planet_mass_kg"):
        model.spectra(BASE, SUN, np.nan)


def test_official_method_blends_ten_levels(model):
    rng = np.random.default_rng(1)
    trace = BASE + rng.normal(size=(1000, 7)) * 0.1
    weights = np.full(1000, 1e-3)
    rows, pairs = official_rows(trace, weights, 0.5)
    assert len(pairs) == 10 and rows.shape[0] <= 20
    spectra = posterior_spectra(model, trace, weights, SUN, MJ, 0.5, method="official")
    assert spectra.shape == (10, 52)
    fm_rows = model.spectra(rows, SUN, MJ)
    i, j, f = pairs[0]
    np.testing.assert_allclose(spectra[0], (1 - f) * fm_rows[i] + f * fm_rows[j])
    with pytest.raises(ValueError, match="spectral_method"):
        posterior_spectra(model, trace, weights, SUN, MJ, 0.5, method="nope")
