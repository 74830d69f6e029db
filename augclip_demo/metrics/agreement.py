"""The papers' evaluation protocols, as pure statistics on metric values (no models, no files).

Definitions (``m`` is a metric's value, oriented so that higher is better: lower-is-better metrics
such as L2 are negated first):

* **s2AFC** (AugCLIP Sec. 5.1, Table 3): over items with a human 2AFC choice ``p``,
  ``mean_i credit_i`` with ``credit_i = 1`` when ``m(p)`` is the item's highest value, ``1/k`` when
  ``k`` edits tie for the highest value and ``p`` is one of them (a two-way tie counts 0.5), else 0.
* **AccBoth** (AugCLIP Sec. 5.2, Table 4): over triplet items (one ``gt``, one ``ep``, one ``em``
  edit), the fraction where ``m(gt) > max(m(ep), m(em))`` strictly (a tie at the top is a miss).
* **Win shares** (BPM Table 4): for each role r in gt / ep / em, ``mean_i share_i(r)`` where the
  triplet's win is split equally among the roles tied for the highest value; the three sum to 1.
* **Per-model rank agreement** (AugCLIP, later version, Table 4): per editing model (edit
  ``name``, roles ``gt`` / ``candidate``) the mean metric value and the mean human value (the mean
  score where scores exist, else the 2AFC win rate); Spearman's rho and Kendall's tau-b between the
  models' metric means and human means.
* **Per-model means** (every dataset, human labels or not): per editing model (edit ``name``) the mean
  metric value over its edits with a value, with the bootstrap interval of that mean (Explore's leaderboard).
* **Correlation with human scores**: Pearson r, Spearman rho, Kendall tau-b between the metric and
  the per-edit human scores, pooled over all scored edits.
* **Pair alignment** (BPM Sec. 4.1): over pairs of edits of the same item with different human
  scores, the fraction where the metric orders the pair the same way (a metric tie counts 0.5).
  BPM's printed ``1[H1 > H2] == 1[M1 > M2]`` would count a human tie as "H1 < H2"; human ties are
  left out instead, since people expressed no preference there.
* **Bootstrap CIs**: percentile intervals over ``n_boot`` resamples of *items* (the unit people
  judged; edits of an item stay together), from ``numpy.random.default_rng(seed)``. A resample can
  leave a statistic undefined (a correlation whose resample has one distinct value, a model missing
  from every drawn item, no pair with a human preference). Such resamples are counted and reported
  with the figure (``boot_undefined`` of ``boot_resamples``), never silently dropped; when more than
  :data:`_MAX_UNDEFINED_SHARE` of them are undefined, or fewer than :data:`_MIN_DEFINED_RESAMPLES` are
  defined, no interval is given and ``ci_note`` says why: an interval over the defined resamples
  only would describe a different population (the resamples that happen to contain both classes).

Ties are exact equality of the stored floats (identical images give identical values).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..choices import DEFAULT_AGREEMENT_SEED as DEFAULT_SEED
from ..choices import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL

TRIPLET_ROLES: tuple[str, ...] = ("gt", "ep", "em")
#: A bootstrap CI is refused when more than this share of resamples leave the statistic undefined.
_MAX_UNDEFINED_SHARE = 0.05
#: ... or when fewer resamples than this are defined.
_MIN_DEFINED_RESAMPLES = 10


# ---------------------------------------------------------------------------------------------- data
@dataclass
class ProtocolEdit:
    name: str
    role: str
    metrics: dict[str, float | None]


@dataclass
class ProtocolItem:
    """One item of a results file, reduced to what the protocols read."""

    id: str
    edits: list[ProtocolEdit]
    preferred: int | None = None
    scores: list[float | None] | None = None
    vote: str | None = None  # the kind of a human-vote set's verdict (``meta.vote_kind``): win, tie, both_bad, ranking


@dataclass
class Bootstrap:
    """A bootstrap interval with its bookkeeping: how many resamples ran and how many were undefined."""

    ci: tuple[float, float] | None
    resamples: int = 0
    undefined: int = 0
    note: str | None = None  # why there is no interval, when there is none


@dataclass
class Figure:
    """A protocol figure: its value, bootstrap confidence interval and the number of units used.

    ``boot_resamples`` / ``boot_undefined``: resamples drawn and resamples where the statistic was
    undefined; ``ci_note`` says why ``ci`` is missing when bootstrapping was asked for.
    """

    value: float | None
    ci: tuple[float, float] | None = None
    n: int = 0
    boot_resamples: int = 0
    boot_undefined: int = 0
    ci_note: str | None = None

    @classmethod
    def with_bootstrap(cls, value: float | None, boot: Bootstrap | None, n: int) -> Figure:
        if boot is None:
            return cls(value, None, n)
        return cls(value, boot.ci, n, boot.resamples, boot.undefined, boot.note)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci_low": self.ci[0] if self.ci else None,
                "ci_high": self.ci[1] if self.ci else None, "n": self.n,
                "boot_resamples": self.boot_resamples, "boot_undefined": self.boot_undefined, "ci_note": self.ci_note}


@dataclass
class ModelRow:
    name: str
    n_edits: int
    metric_mean: float
    human_mean: float
    metric_rank: float  # 1 = best under the metric
    human_rank: float


@dataclass
class ModelMean:
    """One editing model's mean metric value over its edits (``figure.n``: how many edits had a value)."""

    name: str
    figure: Figure


@dataclass
class MetricProtocols:
    """Every protocol figure of one metric on one dataset (absent protocols stay ``None``)."""

    s2afc: Figure | None = None
    acc_both: Figure | None = None
    wins: dict[str, Figure] | None = None
    model_spearman: Figure | None = None
    model_kendall: Figure | None = None
    models: list[ModelRow] = field(default_factory=list)
    model_means: list[ModelMean] = field(default_factory=list)  # every model, with or without human labels
    pearson: Figure | None = None
    spearman: Figure | None = None
    kendall: Figure | None = None
    pair_alignment: Figure | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key in ("s2afc", "acc_both", "pair_alignment"):
            figure = getattr(self, key)
            if figure is not None:
                data[key] = figure.to_dict()
        if self.wins is not None:
            data["wins"] = {role: fig.to_dict() for role, fig in self.wins.items()}
        if self.model_spearman is not None and self.model_kendall is not None:
            data["model_rank"] = {"spearman": self.model_spearman.to_dict(), "kendall": self.model_kendall.to_dict(),
                                  "models": [vars(row) for row in self.models]}
        if self.model_means:
            data["model_means"] = {row.name: row.figure.to_dict() for row in self.model_means}
        if self.pearson is not None and self.spearman is not None and self.kendall is not None:
            data["human_scores"] = {"pearson": self.pearson.to_dict(), "spearman": self.spearman.to_dict(),
                                    "kendall": self.kendall.to_dict()}
        return data


# ---------------------------------------------------------------------------------------------- per item
def _oriented(value: float | None, higher_is_better: bool) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value) if higher_is_better else -float(value)


def preference_credit(values: Sequence[float | None], preferred: int, higher_is_better: bool = True) -> float | None:
    """s2AFC credit of one item: 1, 1/k on a k-way tie at the top including ``preferred``, else 0.

    ``None`` when any edit has no value (the item cannot be judged under this metric).
    """
    oriented = [_oriented(v, higher_is_better) for v in values]
    if any(v is None for v in oriented) or not 0 <= preferred < len(oriented):
        return None
    best = max(oriented)  # type: ignore[type-var]
    winners = [i for i, v in enumerate(oriented) if v == best]
    return 1.0 / len(winners) if preferred in winners else 0.0


def top_shares(values_by_role: Mapping[str, float | None], higher_is_better: bool = True) -> dict[str, float] | None:
    """The win split among roles: 1/k for each of the k roles tied for the highest value."""
    oriented = {role: _oriented(v, higher_is_better) for role, v in values_by_role.items()}
    if not oriented or any(v is None for v in oriented.values()):
        return None
    best = max(oriented.values())  # type: ignore[type-var]
    winners = [role for role, v in oriented.items() if v == best]
    return {role: (1.0 / len(winners) if role in winners else 0.0) for role in oriented}


def strictly_best(values_by_role: Mapping[str, float | None], role: str = "gt",
                  higher_is_better: bool = True) -> float | None:
    """1.0 when ``role`` has the strictly highest value (AccBoth), 0.0 otherwise, None if a value is missing."""
    oriented = {r: _oriented(v, higher_is_better) for r, v in values_by_role.items()}
    if role not in oriented or any(v is None for v in oriented.values()):
        return None
    mine = oriented[role]
    others = [v for r, v in oriented.items() if r != role]
    return 1.0 if all(mine > v for v in others) else 0.0  # type: ignore[operator]


def pair_credits(metric: Sequence[float | None], human: Sequence[float | None],
                 higher_is_better: bool = True) -> list[float]:
    """Pair alignment credits of one item: one per pair of edits with two different human scores."""
    credits = []
    m = [_oriented(v, higher_is_better) for v in metric]
    for i in range(len(m)):
        for j in range(i + 1, len(m)):
            hi, hj, mi, mj = human[i], human[j], m[i], m[j]
            if hi is None or hj is None or mi is None or mj is None or hi == hj:
                continue
            credits.append(0.5 if mi == mj else float((mi > mj) == (hi > hj)))
    return credits


# ---------------------------------------------------------------------------------------------- correlations
#: Kendall's tau-b keeps its pair matrices in memory up to this many points; above, it computes them in blocks
#: (:class:`KendallForm`).
_KENDALL_DENSE_MAX = 3000
_BLOCK = 1024
#: Up to this many points a tau-b is :class:`KendallForm`'s (n squared, but scipy's per-call overhead is most of
#: a bootstrap's time at such sizes: 10 ms to 1 ms a resample on 40 points); above, scipy's (n log n).
_KENDALL_PAIRS_MAX = 256


def _corr(kind: str, x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 2:
        return None
    if kind == "pearson":
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            return None
        value = float(np.corrcoef(x, y)[0, 1])
    elif kind == "spearman":
        ones = np.ones(len(x))
        rx, ry = _weighted_ranks(x, ones), _weighted_ranks(y, ones)  # scipy's rankdata("average"), exactly
        if np.ptp(rx) == 0 or np.ptp(ry) == 0:
            return None
        value = float(np.corrcoef(rx, ry)[0, 1])
    elif kind == "kendall":
        if len(x) <= _KENDALL_PAIRS_MAX:
            return KendallForm(x, y).tau(np.ones(len(x)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from scipy import stats

            value = float(stats.kendalltau(x, y).statistic)  # tau-b (ties in either variable)
    else:
        raise ValueError(f"unknown correlation {kind!r}")
    return value if math.isfinite(value) else None


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; ``None`` for fewer than 2 points or a constant variable."""
    return _corr("pearson", np.asarray(x, float), np.asarray(y, float))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson's r of average ranks, so ties are handled)."""
    return _corr("spearman", np.asarray(x, float), np.asarray(y, float))


def kendall(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b (corrects for ties in either variable)."""
    return _corr("kendall", np.asarray(x, float), np.asarray(y, float))


def _weighted_ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks (1 = smallest) of ``values`` repeated ``weights`` times each, per original value."""
    unique, inverse = np.unique(values, return_inverse=True)
    per_value = np.bincount(inverse, weights=weights, minlength=len(unique))
    before = np.cumsum(per_value) - per_value
    return (before + (per_value + 1.0) / 2.0)[inverse]


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float | None:
    total = w.sum()
    if total < 2:
        return None
    mx, my = (w * x).sum() / total, (w * y).sum() / total
    sxy, sxx, syy = (w * (x - mx) * (y - my)).sum(), (w * (x - mx) ** 2).sum(), (w * (y - my) ** 2).sum()
    if sxx <= 0 or syy <= 0:
        return None
    value = sxy / math.sqrt(sxx * syy)
    return float(value) if math.isfinite(value) else None


def spearman_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float | None:
    """Spearman's rho of the sample that repeats point i ``w[i]`` times (average ranks for ties)."""
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep]
    if len(x) == 0:
        return None
    return _weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)


class KendallForm:
    """Kendall's tau-b of the sample that repeats point i ``w[i]`` times: ``w' (Sx Sy) w / sqrt(w' |Sx| w  w' |Sy| w)``
    with ``S[i, j] = sign(v_i - v_j)`` (a point and its copies tie in both, as tau-b counts them)."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y
        self.dense = len(x) <= _KENDALL_DENSE_MAX
        if self.dense:
            sx, sy = np.sign(x[:, None] - x[None, :]), np.sign(y[:, None] - y[None, :])
            self.forms = (sx * sy, np.abs(sx), np.abs(sy))

    def _quadratic(self, w: np.ndarray) -> tuple[float, float, float]:
        if self.dense:
            return tuple(float(w @ (form @ w)) for form in self.forms)  # type: ignore[return-value]
        totals = [0.0, 0.0, 0.0]
        for start in range(0, len(self.x), _BLOCK):
            rows = slice(start, start + _BLOCK)
            sx = np.sign(self.x[rows, None] - self.x[None, :])
            sy = np.sign(self.y[rows, None] - self.y[None, :])
            for k, form in enumerate((sx * sy, np.abs(sx), np.abs(sy))):
                totals[k] += float(w[rows] @ (form @ w))
        return totals[0], totals[1], totals[2]

    def tau(self, w: np.ndarray) -> float | None:
        if len(self.x) < 2:
            return None
        concordant, untied_x, untied_y = self._quadratic(w)
        if untied_x <= 0 or untied_y <= 0:
            return None
        # each count is over ordered pairs (twice scipy's); halved (exact) and divided as scipy divides, so that
        # integer weights give scipy's tau-b to the last bit
        value = (concordant / 2) / math.sqrt(untied_x / 2) / math.sqrt(untied_y / 2)
        return float(min(1.0, max(-1.0, value))) if math.isfinite(value) else None


# ---------------------------------------------------------------------------------------------- bootstrap
def percentile_ci(samples: list[float], level: float, resamples: int) -> Bootstrap:
    undefined = resamples - len(samples)
    if len(samples) < _MIN_DEFINED_RESAMPLES or undefined > _MAX_UNDEFINED_SHARE * resamples:
        note = (f"no interval: the statistic is undefined in {undefined} of {resamples} resamples "
                f"(a CI needs at least {_MIN_DEFINED_RESAMPLES} defined and at most "
                f"{_MAX_UNDEFINED_SHARE:.0%} undefined); more items would help")
        return Bootstrap(None, resamples, undefined, note)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(np.asarray(samples), [alpha, 1.0 - alpha])
    return Bootstrap((float(low), float(high)), resamples, undefined)


def bootstrap_ci(n_units: int, statistic: Callable[[np.ndarray], float | None], *, n_boot: int = DEFAULT_BOOTSTRAP,
                 seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL) -> Bootstrap | None:
    """Percentile CI of ``statistic(indices)`` over ``n_boot`` resamples (with replacement) of units.

    Resamples where the statistic is undefined (``None`` or not finite) are counted in the result;
    too many of them (see the module docstring) give no interval and a note. ``None`` when no
    bootstrap was asked for (``n_boot <= 0``) or there are no units.
    """
    return _bootstrap_cis(n_units, lambda indices: (statistic(indices),), 1, n_boot=n_boot, seed=seed,
                         level=level)[0]


def _bootstrap_cis(n_units: int, statistics: Callable[[np.ndarray], Sequence[float | None]], count: int, *,
                  n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
                  level: float = DEFAULT_LEVEL) -> list[Bootstrap | None]:
    """:func:`bootstrap_ci` of ``count`` statistics that share their work, computed together on each resample.

    Each interval is the one :func:`bootstrap_ci` gives for that statistic alone with the same seed (the same
    resamples), at the cost of one pass."""
    if n_units == 0 or n_boot <= 0:
        return [None] * count
    rng = np.random.default_rng(seed)
    samples: list[list[float]] = [[] for _ in range(count)]
    for _ in range(n_boot):
        values = statistics(rng.integers(0, n_units, size=n_units))
        for kept, value in zip(samples, values):
            if value is not None and math.isfinite(value):
                kept.append(value)
    return [percentile_ci(kept, level, n_boot) for kept in samples]


def resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator, block: int) -> np.ndarray:
    """The means of ``resamples`` bootstrap resamples of ``values``, drawn ``block`` resamples at a time.

    The index matrix of a block is drawn in one call, so the draws (and so the means) depend on ``block``:
    each caller keeps its own block size to keep its figures."""
    n = len(values)
    means = []
    for start in range(0, resamples, block):
        means.append(values[rng.integers(0, n, size=(min(block, resamples - start), n))].mean(axis=1))
    return np.concatenate(means) if means else np.zeros(0)


def mean_figure(values: Sequence[float], *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
                level: float = DEFAULT_LEVEL) -> Figure:
    """Mean of per-item values with its bootstrap CI (vectorised: resampling means is cheap)."""
    array = np.asarray(values, dtype=float)
    n = len(array)
    if n == 0:
        return Figure(None, None, 0)
    boot = None
    if n_boot > 0:
        block = max(1, min(n_boot, 2_000_000 // n))  # bound memory of the index matrix
        means = resampled_means(array, n_boot, np.random.default_rng(seed), block).tolist()
        boot = percentile_ci(means, level, n_boot)  # a mean of >= 1 value is always defined
    return Figure.with_bootstrap(float(array.mean()), boot, n)


def _ratio_figure(numerators: Sequence[float], denominators: Sequence[float], *, n_boot: int = DEFAULT_BOOTSTRAP,
                 seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL) -> Figure:
    """sum(numerators) / sum(denominators) over items (e.g. pair alignment), with a bootstrap CI."""
    num, den = np.asarray(numerators, float), np.asarray(denominators, float)
    total = float(den.sum())
    if len(num) == 0 or total == 0:
        return Figure(None, None, 0)

    def stat(idx: np.ndarray) -> float | None:
        d = den[idx].sum()
        return float(num[idx].sum() / d) if d > 0 else None

    return Figure.with_bootstrap(float(num.sum()) / total,
                                 bootstrap_ci(len(num), stat, n_boot=n_boot, seed=seed, level=level), int(total))


# ---------------------------------------------------------------------------------------------- a dataset
def _human_values(item: ProtocolItem) -> list[float | None] | None:
    """Per-edit human value for model ranking: the score, or the 2AFC win (1 / 0)."""
    if item.scores is not None:
        return list(item.scores)
    if item.preferred is not None:
        return [1.0 if i == item.preferred else 0.0 for i in range(len(item.edits))]
    return None


def _triplet(item: ProtocolItem) -> dict[str, int] | None:
    roles: dict[str, int] = {}
    for i, edit in enumerate(item.edits):
        if edit.role in TRIPLET_ROLES:
            if edit.role in roles:
                return None
            roles[edit.role] = i
    return roles if len(roles) == 3 else None


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(-values)  # 1 = highest (values are already oriented)


def evaluate_metric(items: Sequence[ProtocolItem], key: str, higher_is_better: bool = True, *,
                    n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
                    level: float = DEFAULT_LEVEL) -> MetricProtocols:
    """Every protocol that the items' human data and roles allow, for metric ``key``."""
    out = MetricProtocols()
    boot = {"n_boot": n_boot, "seed": seed, "level": level}

    def value(edit: ProtocolEdit) -> float | None:
        return edit.metrics.get(key)

    # s2AFC
    afc_items = [item for item in items if item.preferred is not None]
    if afc_items:
        credits = [preference_credit([value(e) for e in item.edits], item.preferred, higher_is_better)  # type: ignore[arg-type]
                   for item in afc_items]
        out.s2afc = mean_figure([c for c in credits if c is not None], **boot)
    # AccBoth and win shares
    triplets = [(item, roles) for item in items if (roles := _triplet(item)) is not None]
    if triplets:
        accs, shares = [], []
        for item, roles in triplets:
            by_role = {role: value(item.edits[index]) for role, index in roles.items()}
            acc = strictly_best(by_role, "gt", higher_is_better)
            share = top_shares(by_role, higher_is_better)
            if acc is not None and share is not None:
                accs.append(acc)
                shares.append(share)
        out.acc_both = mean_figure(accs, **boot)
        out.wins = {role: mean_figure([s[role] for s in shares], **boot) for role in TRIPLET_ROLES}
    # per-edit human scores: correlations and pair alignment
    scored = [item for item in items if item.scores is not None]
    if scored:
        xs_list, ys_list, owners, nums, dens = [], [], [], [], []
        for position, item in enumerate(scored):
            assert item.scores is not None
            for edit, human in zip(item.edits, item.scores):
                m = _oriented(value(edit), higher_is_better)
                if m is not None and human is not None:
                    xs_list.append(m)
                    ys_list.append(human)
                    owners.append(position)
            credits = pair_credits([value(e) for e in item.edits], item.scores, higher_is_better)
            nums.append(sum(credits))
            dens.append(len(credits))
        xs, ys, owner = np.asarray(xs_list, float), np.asarray(ys_list, float), np.asarray(owners, int)
        pairs = KendallForm(xs, ys) if len(xs) <= _KENDALL_PAIRS_MAX else None
        for kind in ("pearson", "spearman", "kendall"):
            def stat(idx: np.ndarray, kind: str = kind) -> float | None:
                # a resample of items repeats each item's edits as often as the item was drawn
                repeats = np.bincount(idx, minlength=len(scored))[owner]
                if kind == "kendall" and pairs is not None:
                    return pairs.tau(repeats.astype(float))
                return _corr(kind, np.repeat(xs, repeats), np.repeat(ys, repeats))

            point = _corr(kind, xs, ys)
            ci = bootstrap_ci(len(scored), stat, **boot) if point is not None else None
            setattr(out, kind, Figure.with_bootstrap(point, ci, len(xs)))
        out.pair_alignment = _ratio_figure(nums, dens, **boot)
    # per-model rank agreement, and the per-model means that need no human label
    _model_ranks(items, value, higher_is_better, out, boot)
    out.model_means = model_means(items, value, **boot)
    return out


def model_means(items: Sequence[ProtocolItem], value: Callable[[ProtocolEdit], float | None], *,
                n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL
                ) -> list[ModelMean]:
    """Each editing model's (edit ``name``'s) mean of ``value`` over its edits with a value, in order of first
    appearance, with :func:`mean_figure`'s interval over those values in file order: the figure Explore's
    leaderboard gives the same edits."""
    values: dict[str, list[float]] = {}
    for item in items:
        for edit in item.edits:
            v = value(edit)
            if v is not None:
                values.setdefault(edit.name, []).append(float(v))
    return [ModelMean(name, mean_figure(found, n_boot=n_boot, seed=seed, level=level))
            for name, found in values.items()]


def _model_ranks(items: Sequence[ProtocolItem], value: Callable[[ProtocolEdit], float | None],
                 higher_is_better: bool, out: MetricProtocols, boot: dict[str, Any]) -> None:
    names: dict[str, int] = {}
    rows: list[tuple[int, int, float, float]] = []  # (item index, model index, oriented metric, human)
    for index, item in enumerate(items):
        human = _human_values(item)
        if human is None:
            continue
        for edit, h in zip(item.edits, human):
            m = _oriented(value(edit), higher_is_better)
            if edit.role in ("ep", "em") or m is None or h is None:
                continue
            rows.append((index, names.setdefault(edit.name, len(names)), m, h))
    if len(names) < 2:
        return
    n_items, n_models = len(items), len(names)
    # per item and model: sums and counts, so a resample of items is a weighted sum of rows
    sums_m = np.zeros((n_items, n_models))
    sums_h = np.zeros((n_items, n_models))
    counts = np.zeros((n_items, n_models))
    for i, j, m, h in rows:
        sums_m[i, j] += m
        sums_h[i, j] += h
        counts[i, j] += 1

    def agreement(weights: np.ndarray) -> tuple[float | None, float | None, np.ndarray, np.ndarray]:
        c = weights @ counts
        if np.any(c == 0):
            return None, None, np.zeros(0), np.zeros(0)
        mean_m, mean_h = (weights @ sums_m) / c, (weights @ sums_h) / c
        return _corr("spearman", mean_m, mean_h), _corr("kendall", mean_m, mean_h), mean_m, mean_h

    rho, tau, mean_m, mean_h = agreement(np.ones(n_items))
    total = counts.sum(axis=0)
    metric_ranks, human_ranks = _ranks(mean_m), _ranks(mean_h)
    sign = 1.0 if higher_is_better else -1.0
    out.models = [ModelRow(name=name, n_edits=int(total[j]), metric_mean=float(sign * mean_m[j]),
                           human_mean=float(mean_h[j]), metric_rank=float(metric_ranks[j]),
                           human_rank=float(human_ranks[j])) for name, j in names.items()]
    def both(idx: np.ndarray) -> tuple[float | None, float | None]:
        return agreement(np.bincount(idx, minlength=n_items).astype(float))[:2]

    spearman_ci, kendall_ci = (_bootstrap_cis(n_items, both, 2, **boot) if rho is not None or tau is not None
                               else (None, None))
    cis = {"spearman": spearman_ci if rho is not None else None, "kendall": kendall_ci if tau is not None else None}
    out.model_spearman = Figure.with_bootstrap(rho, cis["spearman"], n_models)
    out.model_kendall = Figure.with_bootstrap(tau, cis["kendall"], n_models)
