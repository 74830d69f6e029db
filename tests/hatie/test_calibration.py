"""Fitting HATIE's criterion weights: grid, renormalised totals, recovery of known weights, folds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from augclip_demo.hatie import calibration as C


def test_grid_counts_and_sums() -> None:
    grid = C.simplex_grid(4, 0.05)
    assert np.allclose(grid.sum(axis=1), 1.0)
    assert grid.min() >= 0.05 - 1e-12
    # compositions of 20 into 4 positive parts: C(19, 3)
    assert len(grid) == math.comb(19, 3)
    assert len(C.simplex_grid(3, 0.1, positive=False)) == math.comb(12, 2)
    with pytest.raises(ValueError, match="divide 1"):
        C.simplex_grid(4, 0.03)


def test_totals_renormalise_over_present_criteria() -> None:
    x = np.array([[0.5, np.nan, 1.0, np.nan], [np.nan] * 4])
    w = np.array([[0.2, 0.4, 0.1, 0.3]])
    t = C.totals(x, w)
    assert t[0, 0] == pytest.approx((0.2 * 0.5 + 0.1 * 1.0) / 0.3)
    assert np.isnan(t[0, 1])


def test_known_weights_are_recovered() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((200, 4))
    x[rng.random((200, 4)) < 0.2] = np.nan
    x[np.isnan(x).all(axis=1), 0] = 0.5
    true = np.array([0.1, 0.6, 0.05, 0.25])
    y = C.totals(x, true[None, :])[0]
    w, r = C.fit_weights(x, y, step=0.05)
    assert r == pytest.approx(1.0)
    assert np.allclose(w, true)
    # a monotone transform of the ratings keeps a high but imperfect Pearson r
    fit = C.calibrate(x, y ** 3, step=0.05, folds=4, groups=np.arange(200) // 2)
    assert 0.9 < fit.r < 1.0 and len(fit.folds) == 4 and fit.cv_r is not None and fit.cv_r > 0.85


def test_constant_ratings_are_refused() -> None:
    with pytest.raises(ValueError, match="the same"):
        C.fit_weights(np.random.default_rng(0).random((5, 4)), np.ones(5), step=0.1)


def test_correlations_against_scipy_free_hand_values() -> None:
    x = [0.1, 0.2, None, 0.4, 0.3]
    y = [1.0, 2.0, 9.0, 4.0, 3.0]
    got = C.correlations({"a": x}, y)["a"]
    xs, ys = np.array([0.1, 0.2, 0.4, 0.3]), np.array([1.0, 2.0, 4.0, 3.0])
    r = ((xs - xs.mean()) @ (ys - ys.mean())) / (np.linalg.norm(xs - xs.mean()) * np.linalg.norm(ys - ys.mean()))
    assert got["n"] == 4 and got["pearson"] == pytest.approx(r) and got["spearman"] == pytest.approx(1.0)
