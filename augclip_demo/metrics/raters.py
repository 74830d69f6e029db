"""Statistics of human raters: agreement between raters and Bradley-Terry strengths (pure math).

* **Krippendorff's alpha** (K. Krippendorff, *Content Analysis: An Introduction to Its Methodology*,
  Sage, 2004/2013, ch. 12): ``alpha = 1 - D_o / D_e`` from the coincidence matrix ``o[c, k]`` of the
  pairable values (units with at least two values; a unit with ``m_u`` values adds ``1 / (m_u - 1)``
  for every ordered pair of its values), ``n_c`` its margins and ``n`` their sum:
  ``D_o = sum_ck o_ck d2(c, k) / n`` and ``D_e = sum_ck n_c n_k d2(c, k) / (n (n - 1))``, with the
  difference ``d2`` of the level: nominal ``1[c != k]``, interval ``(c - k)^2``, ordinal
  ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``. ``None`` when no two values are pairable or all agree
  on one value (``D_e = 0``: alpha is undefined there).
* **Percent agreement**: over units with at least two values, the share of pairs of values (two
  raters of the same unit) that are equal: ``sum_u agreeing pairs / sum_u pairs``.
* **Bradley-Terry** (R. A. Bradley and M. E. Terry, "Rank Analysis of Incomplete Block Designs: I",
  Biometrika 1952): ``P(i beats j) = 1 / (1 + exp(theta_j - theta_i))``, fitted by Newton's method on
  the log-likelihood with a small Gaussian penalty ``ridge / 2 * sum theta^2`` (keeps a model that
  never won, or never lost, finite and fixes the scale's origin); a tie counts as half a win for each
  side. Scores are centred to mean 0. Intervals: percentile bootstrap over groups (the items people
  judged), as the protocols' intervals resample items.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .agreement import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL, DEFAULT_SEED

_ALPHA_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
DEFAULT_RIDGE = 0.01


# ---------------------------------------------------------------------------------------------- agreement
def _pairable(units: Sequence[Sequence[Hashable]]) -> list[list[Hashable]]:
    return [list(values) for values in units if len(values) >= 2]


def krippendorff_alpha(units: Sequence[Sequence[Hashable]], level: str = "nominal") -> float | None:
    """Krippendorff's alpha of ``units`` (each the values different raters gave one unit; missing
    values simply left out). ``level``: nominal, ordinal (numeric values) or interval (numeric)."""
    if level not in _ALPHA_LEVELS:
        raise ValueError(f"level must be one of {', '.join(_ALPHA_LEVELS)}, got {level!r}")
    pairable = _pairable(units)
    if not pairable:
        return None
    distinct = {v for unit in pairable for v in unit}
    # ordinal differences sum the counts between two values, so numbers must sort by value (1 < 2.5 < 3,
    # whatever mix of int, float or numpy types); nominal labels only need some fixed order
    values = sorted(distinct, key=(lambda v: (str(type(v)), v)) if level == "nominal" else float)
    index = {v: i for i, v in enumerate(values)}
    coincidence = np.zeros((len(values), len(values)))
    for unit in pairable:
        weight = 1.0 / (len(unit) - 1)
        for i, first in enumerate(unit):
            for j, second in enumerate(unit):
                if i != j:
                    coincidence[index[first], index[second]] += weight
    margins = coincidence.sum(axis=1)
    n = float(margins.sum())
    delta = _differences(values, margins, level)
    observed = float((coincidence * delta).sum()) / n
    expected = float((np.outer(margins, margins) * delta).sum()) / (n * (n - 1))
    if expected == 0:
        return None
    return 1.0 - observed / expected


def _differences(values: list[Hashable], margins: np.ndarray, level: str) -> np.ndarray:
    k = len(values)
    if level == "nominal":
        return 1.0 - np.eye(k)
    numeric = np.asarray(values, dtype=float)  # sorted ascending for numbers
    if level == "interval":
        return (numeric[:, None] - numeric[None, :]) ** 2
    cumulative = np.concatenate([[0.0], np.cumsum(margins)])
    delta = np.zeros((k, k))
    for c in range(k):
        for d in range(k):
            low, high = min(c, d), max(c, d)
            delta[c, d] = (cumulative[high + 1] - cumulative[low] - (margins[c] + margins[d]) / 2.0) ** 2
    return delta


@dataclass
class PairAgreement:
    """Share of agreeing pairs of raters over the units two or more raters judged."""

    value: float | None
    agreeing_pairs: int
    pairs: int
    units: int


def percent_agreement(units: Sequence[Sequence[Hashable]]) -> PairAgreement:
    agree = total = counted = 0
    for unit in _pairable(units):
        counted += 1
        for first, second in combinations(unit, 2):
            total += 1
            agree += int(first == second)
    return PairAgreement(agree / total if total else None, agree, total, counted)


# ---------------------------------------------------------------------------------------------- Bradley-Terry
def bradley_terry(wins: np.ndarray, ridge: float = DEFAULT_RIDGE, max_iter: int = 100, tol: float = 1e-10) -> np.ndarray:
    """Bradley-Terry scores (log strengths, mean 0) from ``wins[i, j]``: how often i beat j (ties as 0.5 each)."""
    wins = np.asarray(wins, dtype=float)
    k = wins.shape[0]
    if wins.shape != (k, k) or k == 0:
        raise ValueError(f"wins must be a square matrix, got shape {wins.shape}")
    if not ridge > 0:
        raise ValueError(f"ridge must be positive (it keeps the fit finite), got {ridge}")
    games = wins + wins.T
    theta = np.zeros(k)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i beats j)
        gradient = (wins - games * p).sum(axis=1) - ridge * theta
        curvature = games * p * (1.0 - p)
        hessian = curvature - np.diag(curvature.sum(axis=1) + ridge)
        step = np.linalg.solve(hessian, gradient)
        theta = theta - step
        if float(np.max(np.abs(step))) < tol:
            break
    return theta - theta.mean()


@dataclass
class BradleyTerryFit:
    """Scores (log strengths, mean 0) of each name, their bootstrap intervals and comparison counts."""

    names: list[str]
    scores: list[float]
    ci: list[tuple[float, float] | None]
    comparisons: list[float]
    groups: int
    boot_resamples: int = 0
    ridge: float = DEFAULT_RIDGE
    notes: list[str] = field(default_factory=list)

    def rank(self) -> list[float]:
        """1 = strongest (average ranks for equal scores)."""
        from scipy.stats import rankdata

        return [float(r) for r in rankdata(-np.asarray(self.scores))] if self.scores else []


def fit_bradley_terry(comparisons: Sequence[tuple[str, str, str, float]], *, n_boot: int = DEFAULT_BOOTSTRAP,
                      seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL,
                      ridge: float = DEFAULT_RIDGE) -> BradleyTerryFit:
    """Fit ``(group, first, second, outcome)`` comparisons: outcome 1 = first won, 0 = second won, 0.5 = tie.

    Groups (the judged items) are the bootstrap's resampling unit.
    """
    names = sorted({c[1] for c in comparisons} | {c[2] for c in comparisons})
    groups = sorted({c[0] for c in comparisons})
    if len(names) < 2:
        return BradleyTerryFit(names, [0.0] * len(names), [None] * len(names), [0.0] * len(names), len(groups),
                               ridge=ridge, notes=["a ranking needs comparisons between at least two models"])
    where = {name: i for i, name in enumerate(names)}
    group_index = {g: i for i, g in enumerate(groups)}
    per_group = np.zeros((len(groups), len(names), len(names)))
    for group, first, second, outcome in comparisons:
        if first == second:
            continue
        g, i, j = group_index[group], where[first], where[second]
        per_group[g, i, j] += outcome
        per_group[g, j, i] += 1.0 - outcome
    wins = per_group.sum(axis=0)
    scores = bradley_terry(wins, ridge)
    counted = (wins + wins.T).sum(axis=1)
    cis: list[tuple[float, float] | None] = [None] * len(names)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        draws = np.empty((n_boot, len(names)))
        flat = per_group.reshape(len(groups), -1)
        for b in range(n_boot):
            weights = np.bincount(rng.integers(0, len(groups), size=len(groups)), minlength=len(groups)).astype(float)
            draws[b] = bradley_terry((weights @ flat).reshape(len(names), len(names)), ridge)
        alpha = (1.0 - level) / 2.0
        low, high = np.quantile(draws, [alpha, 1.0 - alpha], axis=0)
        cis = [(float(a), float(b)) for a, b in zip(low, high)]
    notes = [f"{name}: no comparison" for name, n in zip(names, counted) if n == 0]
    return BradleyTerryFit(names, [float(s) for s in scores], cis, [float(n) for n in counted], len(groups),
                           boot_resamples=max(n_boot, 0), ridge=ridge, notes=notes)


def win_probability(score_a: float, score_b: float) -> float:
    """P(a beats b) under the Bradley-Terry scores."""
    return 1.0 / (1.0 + math.exp(score_b - score_a))
