"""Which metric agrees with people: pairwise accuracy, s2AFC and rank correlations, with bootstrap intervals.

Pure numpy (no models, no files). The input is :class:`Judged` items: each edit's metric values (oriented so
higher is better) and people's verdict, as the manifest's ``human`` field holds it: ``scores`` (one per
edit; equal scores are a human tie: a tie or "both bad" vote, or equal ratings) and ``preferred``.

Figures (method-notes.md, "Agreement with human sets"):

* **Pairwise accuracy, ties left out** (ours): over the pairs of edits of an item whose human scores
  differ, the share the metric orders the same way; a metric tie (equal values) counts 0.5. A ranked
  group counts as its pairs.
* **Pairwise accuracy with ties** (the sets' own evaluation: GenAI-Bench and EditReward-Bench as
  EditReward's evaluation code scores them, after Deutsch et al., "Ties Matter", EMNLP 2023): over every
  pair, a metric tie is ``|difference| <= tolerance``; a human tie counts as agreement when the metric
  ties, a human preference when the metric does not tie and orders it the same way. The tolerance is
  given, or *calibrated*: the one of the pairs' ``|difference|`` values that maximises the accuracy
  (as the sets do), chosen again in every bootstrap resample so the interval carries the choice.
* **s2AFC** where items have a ``preferred`` edit: :func:`~augclip_demo.metrics.agreement.preference_credit`.
* **Spearman's rho and Kendall's tau-b** between metric and human scores, pooled over the edits of items
  whose scores are ratings (not votes).
* **Bootstrap**: percentile intervals over resamples of *items* (a resample repeats every pair and edit of
  a drawn item; pooled sets are resampled within each set), ``numpy.random.default_rng(seed)``; every metric is computed on the same resamples, so
  the difference between two metrics has a **paired bootstrap** distribution: its interval and a two-sided
  p-value ``min(1, 2 * min(P(d <= 0), P(d >= 0)))`` over the resamples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .agreement import Figure, KendallForm, percentile_ci, preference_credit, spearman_weighted

FIGURES: tuple[str, ...] = ("pairwise", "pairwise_ties", "s2afc", "spearman", "kendall")


@dataclass
class Judged:
    """One item people judged: its edits' metric values (per metric key, oriented: higher is better; None:
    no value), human scores (None: not rated), the preferred edit, and whether the scores are votes."""

    values: dict[str, list[float | None]]
    scores: list[float | None] | None = None
    preferred: int | None = None
    votes: bool = False  # scores encode votes (wins, ties, both bad), not ratings: no rank correlation


@dataclass
class MetricAgreement:
    """Every figure of one metric on one set (a figure that does not apply is absent from ``figures``)."""

    figures: dict[str, Figure] = field(default_factory=dict)
    tolerance: float | None = None  # the tie tolerance of ``pairwise_ties`` (given or calibrated)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {name: figure.to_dict() for name, figure in self.figures.items()}
        if self.tolerance is not None:
            data["tie_tolerance"] = self.tolerance
        return data


@dataclass
class PairedTest:
    """Paired bootstrap of ``figure``: metric ``first`` minus metric ``second`` on the same resamples."""

    figure: str
    first: str
    second: str
    difference: float
    ci: tuple[float, float] | None
    p_value: float | None
    resamples: int

    def to_dict(self) -> dict[str, object]:
        return {"figure": self.figure, "first": self.first, "second": self.second, "difference": self.difference,
                "ci_low": self.ci[0] if self.ci else None, "ci_high": self.ci[1] if self.ci else None,
                "p_value": self.p_value, "resamples": self.resamples}


@dataclass
class SetAgreement:
    """Every metric's figures on one set, the counts of its human judgments, and the test between the best two."""

    metrics: dict[str, MetricAgreement]
    n_items: int
    n_pairs: int  # pairs of edits with human scores
    n_human_ties: int  # of them, pairs people scored equally (ties and both-bad votes, equal ratings)
    test: PairedTest | None = None


# ---------------------------------------------------------------------------------------------- pairs and edits
@dataclass
class _Pairs:
    owner: np.ndarray  # the item of each pair
    human: np.ndarray  # +1: people prefer the first edit, -1: the second, 0: a tie
    diff: dict[str, np.ndarray]  # per metric: first minus second (NaN: a value is missing)


def _pairs(items: Sequence[Judged], keys: Sequence[str]) -> _Pairs:
    owner, human = [], []
    diff: dict[str, list[float]] = {key: [] for key in keys}
    for index, item in enumerate(items):
        if item.scores is None:
            continue
        n = len(item.scores)
        for i in range(n):
            for j in range(i + 1, n):
                hi, hj = item.scores[i], item.scores[j]
                if hi is None or hj is None:
                    continue
                owner.append(index)
                human.append(float(np.sign(hi - hj)))
                for key in keys:
                    values = item.values.get(key) or [None] * n
                    vi, vj = values[i], values[j]
                    diff[key].append(math.nan if vi is None or vj is None else float(vi) - float(vj))
    return _Pairs(np.asarray(owner, int), np.asarray(human, float), {k: np.asarray(v, float) for k, v in diff.items()})


def _accuracy_without_ties(human: np.ndarray, diff: np.ndarray, weights: np.ndarray) -> float | None:
    """Ours: pairs with a human preference and both values; a metric tie counts 0.5."""
    keep = (human != 0) & np.isfinite(diff)
    total = weights[keep].sum()
    if total == 0:
        return None
    credit = np.where(diff[keep] == 0, 0.5, (np.sign(diff[keep]) == human[keep]).astype(float))
    return float((weights[keep] * credit).sum() / total)


def accuracy_with_ties(human: np.ndarray, diff: np.ndarray, weights: np.ndarray,
                       tolerance: float | None = None) -> tuple[float | None, float | None]:
    """The sets' way: (accuracy, tolerance used); ``tolerance`` None: the calibrated one (max accuracy)."""
    keep = np.isfinite(diff) & (weights > 0)
    h, d, w = human[keep], np.abs(diff[keep]), weights[keep]
    total = w.sum()
    if total == 0:
        return None, None
    ordered = (h != 0) & (np.sign(diff[keep]) == h)  # a preference the metric orders the same way
    if tolerance is not None:
        tie = d <= tolerance
        correct = ((h == 0) & tie) | (ordered & ~tie)
        return float((w * correct).sum() / total), tolerance
    order = np.argsort(d, kind="stable")
    d, w_tie, w_ord = d[order], (w * (h == 0))[order], (w * ordered)[order]
    tied = np.cumsum(w_tie)  # human ties that a tolerance of d[k] turns into agreements
    lost = np.cumsum(w_ord)  # preferences it turns into metric ties (misses)
    last = np.r_[d[1:] != d[:-1], True]  # a tolerance covers every pair with an equal |difference|
    accuracy = (tied + (w_ord.sum() - lost)) / total
    accuracy[~last] = -1.0
    best = int(np.argmax(accuracy))
    return float(accuracy[best]), float(d[best])


def _edits(items: Sequence[Judged], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(metric, human, owner) of every rated edit with both values, over items whose scores are ratings."""
    xs, ys, owner = [], [], []
    for index, item in enumerate(items):
        if item.scores is None or item.votes:
            continue
        values = item.values.get(key) or [None] * len(item.scores)
        for value, score in zip(values, item.scores):
            if value is not None and score is not None:
                xs.append(float(value))
                ys.append(float(score))
                owner.append(index)
    return np.asarray(xs, float), np.asarray(ys, float), np.asarray(owner, int)


# ---------------------------------------------------------------------------------------------- a set
class _Statistics:
    """Every figure of every metric for item weights ``w`` (1 each: the point estimate; counts: a resample)."""

    def __init__(self, items: Sequence[Judged], keys: Sequence[str], tolerance: float | None) -> None:
        self.keys, self.tolerance = list(keys), tolerance
        self.pairs = _pairs(items, keys)
        self.credits = {key: np.asarray([np.nan if (c := _credit(item, key)) is None else c
                                         for item in items if item.preferred is not None], float) for key in keys}
        self.afc_owner = np.asarray([i for i, item in enumerate(items) if item.preferred is not None], int)
        self.edits = {key: _edits(items, key) for key in keys}
        self.kendall = {key: KendallForm(x, y) for key, (x, y, _) in self.edits.items()}

    def applies(self, key: str) -> dict[str, bool]:
        has_pairs = bool(np.isfinite(self.pairs.diff[key]).any()) if len(self.pairs.human) else False
        return {"pairwise": has_pairs and bool((self.pairs.human != 0).any()), "pairwise_ties": has_pairs,
                "s2afc": bool(np.isfinite(self.credits[key]).any()),
                "spearman": len(self.edits[key][0]) >= 2, "kendall": len(self.edits[key][0]) >= 2}

    def compute(self, w: np.ndarray) -> dict[str, dict[str, float | None]]:
        out: dict[str, dict[str, float | None]] = {}
        pair_w = w[self.pairs.owner] if len(self.pairs.owner) else np.zeros(0)
        for key in self.keys:
            diff = self.pairs.diff[key]
            figures: dict[str, float | None] = {
                "pairwise": _accuracy_without_ties(self.pairs.human, diff, pair_w) if len(diff) else None}
            ties, tolerance = (accuracy_with_ties(self.pairs.human, diff, pair_w, self.tolerance) if len(diff)
                               else (None, None))
            figures["pairwise_ties"], figures["tolerance"] = ties, tolerance
            credits = self.credits[key]
            afc_w = w[self.afc_owner] * np.isfinite(credits) if len(credits) else np.zeros(0)
            figures["s2afc"] = (float((afc_w * np.nan_to_num(credits)).sum() / afc_w.sum())
                                if len(credits) and afc_w.sum() > 0 else None)
            x, y, owner = self.edits[key]
            edit_w = w[owner] if len(owner) else np.zeros(0)
            figures["spearman"] = spearman_weighted(x, y, edit_w) if len(x) >= 2 else None
            figures["kendall"] = self.kendall[key].tau(edit_w)
            out[key] = figures
        return out


def _credit(item: Judged, key: str) -> float | None:
    values = item.values.get(key)
    if values is None or item.preferred is None:
        return None
    return preference_credit(values, item.preferred)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _resample(rng: np.random.Generator, groups: list[np.ndarray], n: int) -> np.ndarray:
    """Item weights of one resample: each group (stratum) drawn with replacement to its own size, in order."""
    weights = np.zeros(n)
    for members in groups:
        np.add.at(weights, members[rng.integers(0, len(members), size=len(members))], 1.0)
    return weights


def evaluate_set(items: Sequence[Judged], keys: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, tolerance: float | None = None,
                 rank_by: Sequence[str] = ("pairwise", "spearman", "s2afc"),
                 strata: Sequence[int] | None = None) -> SetAgreement:
    """Every figure of every metric ``keys`` on one set, with bootstrap intervals over items, and the paired test
    between the two best metrics under the first figure of ``rank_by`` that two metrics have.

    ``strata`` (one label per item, e.g. the set of each item when several are pooled): each resample draws every
    stratum's items within it, in order of first appearance, so each set keeps its size."""
    stats = _Statistics(items, keys, tolerance)
    point = stats.compute(np.ones(len(items)))
    rng = np.random.default_rng(seed)
    labels = list(strata) if strata is not None else [0] * len(items)
    if len(labels) != len(items):
        raise ValueError(f"strata: {len(labels)} labels for {len(items)} items")
    groups = [np.flatnonzero(np.asarray([label == wanted for label in labels])) for wanted in dict.fromkeys(labels)]
    samples: list[dict[str, dict[str, float | None]]] = []
    for _ in range(max(0, n_boot) if items else 0):
        samples.append(stats.compute(_resample(rng, groups, len(items))))
    metrics: dict[str, MetricAgreement] = {}
    for key in keys:
        applies = stats.applies(key)
        agreement = MetricAgreement(tolerance=point[key]["tolerance"] if applies["pairwise_ties"] else None)
        for name in FIGURES:
            if not applies[name]:
                continue
            kept = [s[key][name] for s in samples if _finite(s[key][name])]
            boot = percentile_ci(kept, level, len(samples)) if samples else None  # type: ignore[arg-type]
            agreement.figures[name] = Figure.with_bootstrap(point[key][name], boot, _units(stats, key, name))
        metrics[key] = agreement
    human = stats.pairs.human
    result = SetAgreement(metrics, len(items), int(len(human)), int((human == 0).sum()))
    result.test = _paired_test(metrics, samples, rank_by, level)
    return result


def _units(stats: _Statistics, key: str, name: str) -> int:
    """How many units a figure counts: pairs, items with a choice, or rated edits."""
    diff = stats.pairs.diff[key]
    if name == "pairwise":
        return int(((stats.pairs.human != 0) & np.isfinite(diff)).sum())
    if name == "pairwise_ties":
        return int(np.isfinite(diff).sum())
    if name == "s2afc":
        return int(np.isfinite(stats.credits[key]).sum())
    return len(stats.edits[key][0])


def ranked(metrics: dict[str, MetricAgreement], figure: str) -> list[str]:
    """Metric keys with a value of ``figure``, best first."""
    present = [(key, m.figures[figure].value) for key, m in metrics.items()
               if figure in m.figures and m.figures[figure].value is not None]
    return [key for key, _ in sorted(present, key=lambda kv: -float(kv[1]))]  # type: ignore[arg-type]


def _paired_test(metrics: dict[str, MetricAgreement], samples: list[dict[str, dict[str, float | None]]],
                 rank_by: Sequence[str], level: float) -> PairedTest | None:
    for figure in rank_by:
        order = ranked(metrics, figure)
        if len(order) < 2:
            continue
        first, second = order[:2]
        difference = float(metrics[first].figures[figure].value) - float(metrics[second].figures[figure].value)  # type: ignore[arg-type]
        deltas = np.asarray([s[first][figure] - s[second][figure] for s in samples  # type: ignore[operator]
                             if _finite(s[first][figure]) and _finite(s[second][figure])], float)
        if len(deltas) == 0:
            return PairedTest(figure, first, second, difference, None, None, 0)
        boot = percentile_ci(deltas.tolist(), level, len(samples))
        p = min(1.0, 2.0 * min(float((deltas <= 0).mean()), float((deltas >= 0).mean())))
        return PairedTest(figure, first, second, difference, boot.ci, p, len(samples))
    return None
