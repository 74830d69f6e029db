"""The agreement statistics against independent computations: a constructed set with known votes (figures
worked out by hand below), brute force over tolerances, scipy on repeated samples, and the bootstrap redone
with plain loops on the same draws."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from augclip_demo.metrics.agreement import KendallForm, spearman_weighted
from augclip_demo.metrics.human_agreement import Judged, accuracy_with_ties, evaluate_set

# five GenAI-Bench-like votes over (left, right): win left, win right, tie, both bad, win left
SCORES = [[1, 0], [0, 1], [0.5, 0.5], [0, 0], [1, 0]]
PREFERRED = [0, 1, None, None, 0]
GOOD = [[0.9, 0.1], [0.8, 0.2], [0.5, 0.52], [0.3, 0.9], [0.4, 0.4]]  # |diff|: .8, .6, .02, .6, 0
BAD = [[0.1, 0.9], [0.2, 0.3], [0.5, 0.9], [0.6, 0.1], [0.2, 0.7]]


def votes() -> list[Judged]:
    return [Judged({"good": g, "bad": b}, s, p, votes=True) for g, b, s, p in zip(GOOD, BAD, SCORES, PREFERRED)]


def test_hand_computed_figures_of_a_known_set():
    result = evaluate_set(votes(), ["good", "bad"], n_boot=0, tolerance=0.05)
    good = result.metrics["good"]
    # ties left out: pairs 1, 2, 5 have a preference; credits 1, 0, 0.5 (a metric tie) -> 1.5 / 3
    assert good.figures["pairwise"].value == pytest.approx(0.5) and good.figures["pairwise"].n == 3
    # with ties at tolerance 0.05: 1 right, 2 wrong, 3 a tie both ways (right), 4 human tie but |d| .6 (wrong),
    # 5 a metric tie on a preference (wrong) -> 2 / 5
    assert good.figures["pairwise_ties"].value == pytest.approx(0.4) and good.figures["pairwise_ties"].n == 5
    # s2AFC: items with a choice (1, 2, 5): 1, 0, 0.5
    assert good.figures["s2afc"].value == pytest.approx(0.5)
    assert "spearman" not in good.figures  # votes are not ratings
    assert result.n_pairs == 5 and result.n_human_ties == 2
    # calibrated: tolerances 0 -> 1/5, .02 -> 2/5, .6 -> 3/5 (pairs 3 and 4 tie, pair 2 becomes a metric tie), .8 -> 2/5
    calibrated = evaluate_set(votes(), ["good"], n_boot=0).metrics["good"]
    assert calibrated.figures["pairwise_ties"].value == pytest.approx(0.6) and calibrated.tolerance == pytest.approx(0.6)
    # the other metric: pairs 1 wrong, 2 right, 5 wrong -> 1/3
    assert result.metrics["bad"].figures["pairwise"].value == pytest.approx(1 / 3)


def _brute_with_ties(human: list[float], diff: list[float]) -> float:
    best = -1.0
    for eps in sorted({abs(d) for d in diff}):
        right = sum((h == 0 and abs(d) <= eps) or (h != 0 and abs(d) > eps and np.sign(d) == h)
                    for h, d in zip(human, diff))
        best = max(best, right / len(diff))
    return best


def test_calibrated_tolerance_matches_brute_force_on_random_pairs():
    rng = np.random.default_rng(3)
    for _ in range(20):
        human = rng.choice([-1.0, 0.0, 1.0], size=30)
        diff = np.round(rng.normal(size=30), 1)  # rounded: many equal |differences|
        value, _ = accuracy_with_ties(human, diff, np.ones(30))
        assert value == pytest.approx(_brute_with_ties(list(human), list(diff)))


def test_weighted_rank_correlations_equal_scipy_on_the_repeated_sample():
    rng = np.random.default_rng(5)
    x, y = np.round(rng.normal(size=40), 1), rng.integers(0, 4, size=40).astype(float)
    w = rng.integers(0, 4, size=40).astype(float)
    xr, yr = np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int))
    assert spearman_weighted(x, y, w) == pytest.approx(stats.spearmanr(xr, yr).statistic)
    assert KendallForm(x, y).tau(w) == pytest.approx(stats.kendalltau(xr, yr).statistic)
    blocked = KendallForm(x, y)
    blocked.dense = False  # the block-wise path for large sets gives the same value
    assert blocked.tau(w) == pytest.approx(stats.kendalltau(xr, yr).statistic)


def _pairwise_reference(items: list[Judged], key: str) -> float | None:
    credits = []
    for item in items:
        for i, j in itertools.combinations(range(len(item.scores)), 2):
            h = np.sign(item.scores[i] - item.scores[j])
            d = item.values[key][i] - item.values[key][j]
            if h != 0:
                credits.append(0.5 if d == 0 else float(np.sign(d) == h))
    return sum(credits) / len(credits) if credits else None


def test_bootstrap_interval_and_paired_test_redone_with_loops():
    rng = np.random.default_rng(11)
    items = []
    for _ in range(25):  # ranked groups of three (EditReward-Bench style) with ratings-like scores
        scores = list(rng.integers(0, 3, size=3).astype(float))
        items.append(Judged({"a": list(rng.normal(size=3)), "b": list(rng.normal(size=3))}, scores))
    result = evaluate_set(items, ["a", "b"], n_boot=200, seed=4, level=0.9)
    draws = np.random.default_rng(4)
    samples = {"a": [], "b": []}
    for _ in range(200):
        chosen = [items[i] for i in draws.integers(0, len(items), size=len(items))]
        for key in samples:
            samples[key].append(_pairwise_reference(chosen, key))
    for key in ("a", "b"):
        figure = result.metrics[key].figures["pairwise"]
        assert figure.value == pytest.approx(_pairwise_reference(items, key))
        assert figure.ci == pytest.approx(tuple(np.quantile(samples[key], [0.05, 0.95])))
        # ratings (not votes): pooled rank correlations over the edits
        xs = [v for item in items for v in item.values[key]]
        ys = [s for item in items for s in item.scores]
        assert result.metrics[key].figures["spearman"].value == pytest.approx(stats.spearmanr(xs, ys).statistic)
        assert result.metrics[key].figures["kendall"].value == pytest.approx(stats.kendalltau(xs, ys).statistic)
    test = result.test
    assert test is not None and test.figure == "pairwise"
    first, second = (("a", "b") if result.metrics["a"].figures["pairwise"].value
                     >= result.metrics["b"].figures["pairwise"].value else ("b", "a"))
    assert (test.first, test.second) == (first, second)
    deltas = np.asarray(samples[first]) - np.asarray(samples[second])
    assert test.ci == pytest.approx(tuple(np.quantile(deltas, [0.05, 0.95])))
    assert test.p_value == pytest.approx(min(1.0, 2 * min((deltas <= 0).mean(), (deltas >= 0).mean())))


def test_pooled_sets_are_resampled_within_each_set():
    rng = np.random.default_rng(2)
    items = [Judged({"a": list(rng.normal(size=2))}, [1.0, 0.0], 0, votes=True) for _ in range(12)]
    strata = [0] * 4 + [1] * 8
    result = evaluate_set(items, ["a"], n_boot=100, seed=9, strata=strata)
    draws, samples = np.random.default_rng(9), []
    for _ in range(100):
        chosen = [items[i] for i in draws.integers(0, 4, size=4)] + [items[4 + i] for i in draws.integers(0, 8, size=8)]
        samples.append(_pairwise_reference(chosen, "a"))
    assert result.metrics["a"].figures["pairwise"].ci == pytest.approx(tuple(np.quantile(samples, [0.025, 0.975])))
