"""Krippendorff's alpha, percent agreement and Bradley-Terry against computations written here from the definitions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from augclip_demo.metrics.raters import (
    bradley_terry,
    fit_bradley_terry,
    krippendorff_alpha,
    percent_agreement,
    win_probability,
)

# Krippendorff's worked example ("Computing Krippendorff's Alpha-Reliability", 2011): 4 observers, 12 units,
# missing values as None; the published alphas are 0.743 (nominal), 0.815 (ordinal), 0.849 (interval).
_N = None
OBSERVERS = [[1, 2, 3, 3, 2, 1, 4, 1, 2, _N, _N, _N],
             [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _N, 3],
             [_N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _N],
             [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _N]]
EXAMPLE_UNITS = [[v for v in column if v is not None] for column in zip(*OBSERVERS)]


def alpha_by_hand(units, delta) -> float:
    """alpha = 1 - D_o / D_e written from the pairable-values definition: D_o averages the differences of
    pairs within units (each unit's pairs weighted 1 / (m_u - 1)), D_e those of all pairs of pooled values."""
    pairable = [u for u in units if len(u) >= 2]
    pooled = [v for u in pairable for v in u]
    n = len(pooled)
    within = sum(sum(delta(a, b) for a, b in itertools.permutations(u, 2)) / (len(u) - 1) for u in pairable)
    between = sum(delta(a, b) for a, b in itertools.permutations(pooled, 2))
    return 1.0 - (n - 1) * within / between


def ordinal_delta(pooled):
    counts = {v: pooled.count(v) for v in set(pooled)}
    values = sorted(counts)

    def delta(a, b):
        low, high = min(a, b), max(a, b)
        between = sum(counts[g] for g in values if low <= g <= high)
        return (between - (counts[a] + counts[b]) / 2) ** 2
    return delta


def test_alpha_matches_the_published_example():
    assert krippendorff_alpha(EXAMPLE_UNITS, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(EXAMPLE_UNITS, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(EXAMPLE_UNITS, "interval") == pytest.approx(0.849, abs=5e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_matches_the_definition_on_random_votes(seed):
    rng = np.random.default_rng(seed)
    units = [[int(v) for v in rng.integers(1, 6, size=rng.integers(1, 5))] for _ in range(30)]
    pooled = [v for u in units if len(u) >= 2 for v in u]
    assert krippendorff_alpha(units, "nominal") == pytest.approx(alpha_by_hand(units, lambda a, b: float(a != b)))
    assert krippendorff_alpha(units, "interval") == pytest.approx(alpha_by_hand(units, lambda a, b: (a - b) ** 2))
    assert krippendorff_alpha(units, "ordinal") == pytest.approx(alpha_by_hand(units, ordinal_delta(pooled)))
    choices = [[["a", "b", "tie"][v % 3] for v in u] for u in units]
    assert krippendorff_alpha(choices) == pytest.approx(alpha_by_hand(choices, lambda a, b: float(a != b)))


def test_alpha_extremes():
    assert krippendorff_alpha([["a", "a"], ["b", "b", "b"], ["a", "a"]]) == pytest.approx(1.0)
    assert krippendorff_alpha([["a", "a"], ["a"]]) is None  # one value everywhere: undefined, not 1
    assert krippendorff_alpha([["a"], ["b"]]) is None  # nothing pairable
    # raters answering at random: alpha near 0
    rng = np.random.default_rng(5)
    random_units = [list(rng.choice(["a", "b"], size=3)) for _ in range(3000)]
    assert abs(krippendorff_alpha(random_units)) < 0.05


def test_alpha_on_a_small_example_worked_by_hand():
    # nominal: coincidences o[a,a] = 2 (unit 1), o[a,b] = o[b,a] = 1 (unit 2), o[b,b] = 6 pairs x 1/2 = 3
    # (unit 3); n_a = 3, n_b = 4, n = 7; D_o = 2/7, D_e = 2 * 3 * 4 / (7 * 6) = 4/7; alpha = 1 - 1/2
    assert krippendorff_alpha([["a", "a"], ["a", "b"], ["b", "b", "b"], ["a"]]) == pytest.approx(0.5)
    # numbers: o[1,2] = o[2,1] = 1, o[2,2] = 2, o[1,3] = o[3,1] = 1; n_1 = 2, n_2 = 3, n_3 = 1, n = 6
    # interval: D_o = (2 * 1 + 2 * 4) / 6 = 10/6, D_e = 2 * (6 * 1 + 2 * 4 + 3 * 1) / 30 = 34/30: alpha = -8/17
    # ordinal: d(1,2) = (5 - 5/2)^2 = 6.25, d(1,3) = (6 - 3/2)^2 = 20.25, d(2,3) = (4 - 4/2)^2 = 4;
    # D_o = (12.5 + 40.5) / 6 = 53/6, D_e = 2 * (6 * 6.25 + 2 * 20.25 + 3 * 4) / 30 = 6: alpha = -17/36
    units = [[1, 2], [2, 2], [1, 3]]
    assert krippendorff_alpha(units, "interval") == pytest.approx(-8 / 17)
    assert krippendorff_alpha(units, "ordinal") == pytest.approx(-17 / 36)
    # the same values as a mix of int, float and numpy types: ordinal ranks them by value, not by type
    mixed = [[1, 2.0], [np.int64(2), 2.0], [1, np.float64(3)]]
    assert krippendorff_alpha(mixed, "ordinal") == pytest.approx(-17 / 36)
    assert krippendorff_alpha(mixed, "interval") == pytest.approx(-8 / 17)
    assert percent_agreement([["a", "a"], ["a", "b"], ["b", "b", "b"], ["a"]]).value == pytest.approx(4 / 5)


def test_percent_agreement_counts_pairs():
    result = percent_agreement([["a", "a", "b"], ["b", "b"], ["a"]])
    # unit 1: pairs (a,a) agree, (a,b) x2 do not; unit 2: one agreeing pair; unit 3 has no pair
    assert (result.agreeing_pairs, result.pairs, result.units) == (2, 4, 2)
    assert result.value == pytest.approx(0.5)


def simulated(truth: np.ndarray, n: int, seed: int, groups: int) -> list[tuple[str, str, str, float]]:
    """Comparisons drawn from the Bradley-Terry model with strengths ``truth`` (independent of the fit)."""
    rng = np.random.default_rng(seed)
    comparisons = []
    for k in range(n):
        i, j = rng.choice(len(truth), size=2, replace=False)
        p = 1.0 / (1.0 + np.exp(truth[j] - truth[i]))
        comparisons.append((f"item{k % groups}", f"m{i}", f"m{j}", float(rng.random() < p)))
    return comparisons


TRUTH = np.array([-1.2, -0.3, 0.4, 1.1])


def test_bradley_terry_recovers_known_strengths():
    fit = fit_bradley_terry(simulated(TRUTH, 1500, 3, 300), n_boot=200, seed=0)
    assert fit.names == ["m0", "m1", "m2", "m3"]
    assert np.max(np.abs(np.asarray(fit.scores) - (TRUTH - TRUTH.mean()))) < 0.2
    assert fit.rank() == [4.0, 3.0, 2.0, 1.0]
    assert all(high - low < 0.6 for low, high in fit.ci)


@pytest.mark.slow  # 20 fits with 200 resamples each
def test_bradley_terry_intervals_cover_the_truth_about_95_percent():
    covered = []
    for seed in range(20):
        fit = fit_bradley_terry(simulated(TRUTH, 400, 100 + seed, 100), n_boot=200, seed=seed)
        covered += [low <= t <= high for (low, high), t in zip(fit.ci, TRUTH - TRUTH.mean())]
    assert 0.85 <= np.mean(covered) <= 1.0


def test_bradley_terry_ties_and_never_winning_model_stay_finite():
    wins = np.array([[0.0, 3.0], [0.0, 0.0]])  # model 0 always won: the plain MLE is infinite
    scores = bradley_terry(wins)
    assert np.all(np.isfinite(scores)) and scores[0] > scores[1]
    even = bradley_terry(np.array([[2.5, 2.5], [2.5, 2.5]]) * (1 - np.eye(2)))  # all ties: equal strengths
    assert even == pytest.approx([0.0, 0.0], abs=1e-9)
    # the fitted win probability matches the observed share when data dominate the small ridge
    fitted = bradley_terry(np.array([[0.0, 300.0], [100.0, 0.0]]))
    assert win_probability(fitted[0], fitted[1]) == pytest.approx(0.75, abs=0.01)
