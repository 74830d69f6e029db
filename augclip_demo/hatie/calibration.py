"""Fitting HATIE's criterion weights to human judgments, and the set-level tables (pure math).

HATIE (Sec. 3.4) chooses convex weights by a grid search with step 0.01 that maximises the Pearson
correlation between its scores and a user study. We fit the same way against the human ratings of a
manifest: every edit's total is the weighted mean of the criteria it has (weights renormalised over
them, as :func:`~.hatie.edit_total`), and the weights maximise Pearson's r between those totals and
the ratings. The grid keeps every weight at least one step above 0, so every edit with a criterion has
a total under every candidate. k-fold cross-validation reports how well weights fitted on the other
folds rank the held-out edits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .criteria import CRITERIA

_CHUNK = 4096


def simplex_grid(k: int, step: float, *, positive: bool = True) -> np.ndarray:
    """Every weight vector of length ``k`` on a grid of ``step`` that sums to 1 ((m, k) float64)."""
    n = int(round(1.0 / step))
    if not math.isclose(n * step, 1.0, abs_tol=1e-9) or n < 1:
        raise ValueError(f"step must divide 1 (e.g. 0.01, 0.05), got {step!r}")
    low = 1 if positive else 0
    rows: list[tuple[int, ...]] = []

    def rec(prefix: tuple[int, ...], left: int, slots: int) -> None:
        if slots == 1:
            if left >= low:
                rows.append(prefix + (left,))
            return
        for v in range(low, left - low * (slots - 1) + 1):
            rec(prefix + (v,), left - v, slots - 1)

    rec((), n, k)
    if not rows:
        raise ValueError(f"no grid point: {k} weights of at least {step} cannot sum to 1")
    return np.asarray(rows, dtype=np.float64) / n


def totals(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(m, n) totals of n edits under m weight vectors; NaN criteria are left out and the weights of the
    rest renormalised; an edit with none is NaN."""
    x = np.asarray(values, np.float64)
    present = np.isfinite(x)
    filled = np.where(present, x, 0.0)
    w = np.atleast_2d(np.asarray(weights, np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ filled.T) / (w @ present.T.astype(np.float64))


def _pearson_rows(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of every row of ``t`` with ``y`` (NaN for a constant row)."""
    t = np.atleast_2d(t)
    tc = t - t.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        return (tc @ yc) / (np.sqrt((tc * tc).sum(axis=1)) * math.sqrt(float(yc @ yc)))


@dataclass
class Fit:
    """Fitted weights (by criterion), the correlation they reach, and the cross-validated one."""

    weights: dict[str, float]
    r: float
    n: int
    step: float
    folds: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cv_r(self) -> float | None:
        values = [f["r"] for f in self.folds if f["r"] is not None and math.isfinite(f["r"])]
        return float(np.mean(values)) if values else None

    def to_dict(self) -> dict[str, Any]:
        return {"weights": self.weights, "r": self.r, "n": self.n, "step": self.step, "folds": self.folds,
                "cv_r": self.cv_r}


def _usable(values: np.ndarray, ratings: np.ndarray) -> np.ndarray:
    return np.isfinite(values).any(axis=1) & np.isfinite(ratings)


def fit_weights(values: np.ndarray, ratings: np.ndarray, *, step: float = 0.01,
                criteria: Sequence[str] = CRITERIA) -> tuple[np.ndarray, float]:
    """The grid weights with the highest Pearson r (first in grid order on ties) and that r."""
    x, y = np.asarray(values, np.float64), np.asarray(ratings, np.float64)
    keep = _usable(x, y)
    x, y = x[keep], y[keep]
    if len(y) < 3:
        raise ValueError(f"calibration needs at least 3 rated edits with HATIE criteria, got {len(y)}")
    if np.ptp(y) == 0:
        raise ValueError("every human rating is the same: there is nothing to correlate with")
    grid = simplex_grid(len(criteria), step)
    best_r, best_w = -np.inf, grid[0]
    for start in range(0, len(grid), _CHUNK):
        block = grid[start:start + _CHUNK]
        r = _pearson_rows(totals(x, block), y)
        r = np.where(np.isfinite(r), r, -np.inf)
        i = int(np.argmax(r))
        if r[i] > best_r:
            best_r, best_w = float(r[i]), block[i]
    if not math.isfinite(best_r):
        raise ValueError("no weights give a defined correlation (are all totals equal?)")
    return best_w, best_r


def calibrate(values: np.ndarray, ratings: np.ndarray, *, step: float = 0.01, folds: int = 5, seed: int = 0,
              groups: Sequence[Any] | None = None, criteria: Sequence[str] = CRITERIA) -> Fit:
    """Weights fitted on every rated edit, with k-fold cross-validation (folds by ``groups``, e.g. the
    item id, so the edits of one source stay together; shuffled with ``seed``)."""
    x, y = np.asarray(values, np.float64), np.asarray(ratings, np.float64)
    w, r = fit_weights(x, y, step=step, criteria=criteria)
    keep = _usable(x, y)
    fit = Fit({c: float(v) for c, v in zip(criteria, w)}, r, int(keep.sum()), step)
    labels = np.asarray(list(groups) if groups is not None else np.arange(len(y)), dtype=object)
    unique = list(dict.fromkeys(labels[keep].tolist()))
    k = min(folds, len(unique))
    if k < 2:
        return fit
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[j]: i % k for i, j in enumerate(order)}
    assigned = np.asarray([fold_of.get(g, -1) for g in labels.tolist()])
    for f in range(k):
        train, test = keep & (assigned != f), keep & (assigned == f)
        entry: dict[str, Any] = {"fold": f, "n_test": int(test.sum()), "r": None}
        try:
            wf, rf = fit_weights(x[train], y[train], step=step, criteria=criteria)
        except ValueError as exc:
            entry["error"] = str(exc)
            fit.folds.append(entry)
            continue
        t = totals(x[test], wf[None, :])[0]
        if test.sum() >= 3 and np.ptp(y[test]) > 0 and np.ptp(t) > 0:
            entry["r"] = float(_pearson_rows(t[None, :], y[test])[0])
        entry["train_r"] = rf
        entry["weights"] = {c: float(v) for c, v in zip(criteria, wf)}
        fit.folds.append(entry)
    return fit


def correlations(values: Mapping[str, Sequence[float | None]], ratings: Sequence[float]) -> dict[str, dict[str, Any]]:
    """Pearson and Spearman r of each criterion with the ratings over the edits that have both."""
    from scipy import stats

    y = np.asarray(ratings, np.float64)
    out: dict[str, dict[str, Any]] = {}
    for key, column in values.items():
        x = np.asarray([np.nan if v is None else v for v in column], np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        n = int(ok.sum())
        if n < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
            out[key] = {"n": n, "pearson": None, "spearman": None}
            continue
        out[key] = {"n": n, "pearson": float(stats.pearsonr(x[ok], y[ok])[0]),
                    "spearman": float(stats.spearmanr(x[ok], y[ok])[0])}
    return out
