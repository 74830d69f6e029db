"""AugCLIP math with known answers (Eq. 3-12), every classifier variant and every error case."""

from __future__ import annotations

import numpy as np
import pytest

from augclip_demo.metrics.augclip import attribute_weights, augclip_score, sample_weights_from_alpha


def unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def random_case(seed: int, d: int = 32, n_s: int = 6, n_t: int = 5, shift: float = 1.5):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=d)
    direction = rng.normal(size=d)
    src_attrs = base + rng.normal(scale=0.6, size=(n_s, d))
    tgt_attrs = base + shift * direction + rng.normal(scale=0.6, size=(n_t, d))
    src_img = base + rng.normal(scale=0.3, size=d)
    edit_img = base + 0.8 * direction + rng.normal(scale=0.3, size=d)
    return src_img, edit_img, src_attrs, tgt_attrs


def svm_dual_reference(X, y, weights, C):
    """Weighted soft-margin linear SVM solved as its dual QP with scipy (no libsvm involved).

    max sum(a) - 1/2 a^T Q a  s.t.  0 <= a_i <= C s_i,  sum(a_i y_i) = 0,  Q_ij = y_i y_j x_i.x_j;
    w = sum(a_i y_i x_i) and b is averaged over the margin support vectors (0 < a_i < C s_i).
    """
    from scipy.optimize import minimize

    Q = (y[:, None] * y[None, :]) * (X @ X.T)
    upper = C * np.asarray(weights, dtype=float)
    result = minimize(
        lambda a: 0.5 * a @ Q @ a - a.sum(), np.zeros(len(y)), jac=lambda a: Q @ a - 1.0,
        bounds=list(zip(np.zeros(len(y)), upper)), constraints=[{"type": "eq", "fun": lambda a: a @ y, "jac": lambda a: y.astype(float)}],
        method="SLSQP", options={"ftol": 1e-15, "maxiter": 5000},
    )
    a = result.x
    w = (a * y) @ X
    free = (a > 1e-7 * upper.max()) & (a < upper - 1e-7 * upper.max())
    assert free.any(), "reference case needs a margin support vector to pin b"
    b = float(np.mean(y[free] - X[free] @ w))
    return w, b


def reference_augclip(src_img, edit_img, src_attrs, tgt_attrs, include_images=True, weighting=True, C=1.0,
                      weight_scaling="raw", projection="clamped"):
    """A deliberately plain, loop-based re-implementation of Eq. 3-10 and App. B, with its own solver."""

    def cs(a, b):
        return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    s_img, e_img = unit(src_img), unit(edit_img)
    S = [unit(a) for a in src_attrs]
    T = [unit(a) for a in tgt_attrs]
    if include_images:
        S, T = [s_img] + S, [e_img] + T
    alpha = []
    for own, other in ((S, T), (T, S)):
        for i, x in enumerate(own):
            importance = sum(cs(x, y) for j, y in enumerate(own) if j != i)
            collision = -sum(cs(x, z) for z in other) / len(other)
            alpha.append(importance + collision)
    alpha = np.array(alpha)
    weights = np.maximum(alpha, 1e-3) if weighting else np.ones(len(alpha))
    if weighting and weight_scaling == "mean":
        weights = weights / weights.mean()
    X = np.array(S + T)
    y = np.array([-1] * len(S) + [1] * len(T))
    w, b = svm_dual_reference(X, y, weights, C)
    c = -(np.dot(w, s_img) + b) / np.dot(w, w)
    v = (max(c, 0.0) if projection == "clamped" else c) * w
    return cs(e_img, s_img + v), c, alpha, weights


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("include_images", [True, False])
@pytest.mark.parametrize("weighting", [True, False])
@pytest.mark.parametrize("weight_scaling", ["raw", "mean"])
def test_matches_plain_reference_implementation(seed, include_images, weighting, weight_scaling):
    case = random_case(seed)
    res = augclip_score(*case, weighting=weighting, include_images=include_images, weight_scaling=weight_scaling)
    score, c, alpha, weights = reference_augclip(*case, include_images=include_images, weighting=weighting,
                                                 weight_scaling=weight_scaling)
    # The reference solves the dual QP with SLSQP (its own stopping rule); libsvm stops at SOLVER_TOL.
    # Raw vs mean-one weights move these scores by ~1e-2 (test_weight_scaling_moves_the_score).
    assert res.score == pytest.approx(score, abs=1e-6)
    assert res.c == pytest.approx(c, rel=1e-5)
    np.testing.assert_allclose(res.alpha, alpha, atol=1e-10)
    np.testing.assert_allclose(res.sample_weight, weights, atol=1e-10)


def test_default_weights_are_alpha_as_is_floored():
    """App. B line 16 hands alpha to the fit unscaled: the default keeps it so."""
    case = random_case(9)
    res = augclip_score(*case)
    assert res.weight_scaling == "raw"
    np.testing.assert_array_equal(res.sample_weight, np.maximum(res.alpha, 1e-3))
    mean = augclip_score(*case, weight_scaling="mean")
    np.testing.assert_allclose(mean.sample_weight, res.sample_weight / res.sample_weight.mean(), rtol=1e-15)


def test_weight_scaling_moves_the_score():
    """Mean-one rescaling changes the effective C, hence the fit: the two options are not the same metric."""
    shifts = []
    for seed in range(6):
        case = random_case(seed)
        shifts.append(abs(augclip_score(*case).score - augclip_score(*case, weight_scaling="mean").score))
    assert max(shifts) > 1e-4


def test_plain_projection_follows_appendix_b_when_source_is_on_target_side():
    src_img, edit_img, src_attrs, tgt_attrs = random_case(2)
    source = tgt_attrs.mean(axis=0)
    clamped = augclip_score(source, edit_img, src_attrs, tgt_attrs, include_images=False)
    plain = augclip_score(source, edit_img, src_attrs, tgt_attrs, include_images=False, projection="plain")
    assert clamped.c < 0 and plain.c == pytest.approx(clamped.c, rel=1e-12)
    np.testing.assert_array_equal(clamped.v, 0)
    # App. B lines 23-25, written out: v = -(w.s + b) / |w|^2 w puts s + v on the plane.
    s = unit(source)
    expected_v = -(np.dot(plain.w, s) + plain.b) / np.dot(plain.w, plain.w) * plain.w
    np.testing.assert_allclose(plain.v, expected_v, atol=1e-15)
    assert np.dot(plain.w, s + plain.v) + plain.b == pytest.approx(0.0, abs=1e-12)
    assert plain.score == pytest.approx(float(np.dot(unit(edit_img), unit(s + expected_v))), abs=1e-12)
    assert abs(plain.score - clamped.score) > 1e-3
    # Where c >= 0 the two agree exactly.
    case = random_case(1)
    assert augclip_score(*case, projection="plain").score == augclip_score(*case).score


@pytest.mark.parametrize("classifier", ["svm", "logistic"])
def test_score_does_not_depend_on_sample_order(classifier):
    """Solver noise must stay below 1e-9: the same attributes in another order give the same score."""
    src_img, edit_img, src_attrs, tgt_attrs = random_case(11, n_s=10, n_t=9)
    first = augclip_score(src_img, edit_img, src_attrs, tgt_attrs, classifier=classifier)
    rng = np.random.default_rng(3)
    for _ in range(5):
        again = augclip_score(src_img, edit_img, src_attrs[rng.permutation(10)], tgt_attrs[rng.permutation(9)],
                              classifier=classifier)
        assert again.score == pytest.approx(first.score, abs=1e-9)
        assert again.c == pytest.approx(first.c, abs=1e-9)


def test_logistic_minimises_the_l2_penalised_weighted_loss():
    """Our logistic fit is the stationary point of sum_i s_i log(1 + exp(-y_i g(x_i))) + |w|^2 / (2C)."""
    src_img, edit_img, src_attrs, tgt_attrs = random_case(7)
    res = augclip_score(src_img, edit_img, src_attrs, tgt_attrs, classifier="logistic", C=0.5)
    X = np.vstack([unit(src_img), [unit(a) for a in src_attrs], unit(edit_img), [unit(a) for a in tgt_attrs]])
    y = np.array([-1.0] * (len(src_attrs) + 1) + [1.0] * (len(tgt_attrs) + 1))
    s = res.sample_weight
    margin = y * (X @ res.w + res.b)
    sigma = 1.0 / (1.0 + np.exp(margin))  # d/dm log(1 + e^-m) = -sigma
    grad_w = -(s * sigma * y) @ X + res.w / 0.5
    grad_b = -np.sum(s * sigma * y)
    assert np.abs(grad_w).max() < 1e-7 and abs(grad_b) < 1e-7


def test_unpenalised_logistic_objective_has_no_minimiser_on_separable_sets():
    """Why the L2 term stays: App. A.3's printed loss keeps falling along a separating direction."""
    src_img, edit_img, src_attrs, tgt_attrs = random_case(7)
    res = augclip_score(src_img, edit_img, src_attrs, tgt_attrs)  # svm: separates the sets
    X = np.vstack([unit(src_img), [unit(a) for a in src_attrs], unit(edit_img), [unit(a) for a in tgt_attrs]])
    y = np.array([-1.0] * (len(src_attrs) + 1) + [1.0] * (len(tgt_attrs) + 1))
    assert res.fit_accuracy == 1.0
    losses = [np.mean(np.log1p(np.exp(-y * t * (X @ res.w + res.b)))) for t in (1, 2, 4, 8, 16)]
    assert all(later < earlier for earlier, later in zip(losses, losses[1:]))
    assert losses[-1] < 1e-3 * losses[0]


def test_ideal_lies_on_hyperplane_and_v_parallel_to_w_when_c_positive():
    res = augclip_score(*random_case(1))
    assert res.c > 0, "constructed case should need a modification"
    assert np.dot(res.w, res.ideal) + res.b == pytest.approx(0.0, abs=1e-9)
    cos_vw = np.dot(res.v, res.w) / (np.linalg.norm(res.v) * np.linalg.norm(res.w))
    assert cos_vw == pytest.approx(1.0, abs=1e-12)
    assert np.linalg.norm(res.v) == pytest.approx(res.c * np.linalg.norm(res.w))


def test_v_is_zero_when_source_already_on_target_side():
    src_img, edit_img, src_attrs, tgt_attrs = random_case(2)
    # Put the source image deep inside the target cluster: no modification is needed.
    res = augclip_score(tgt_attrs.mean(axis=0), edit_img, src_attrs, tgt_attrs, include_images=False)
    assert res.c < 0
    assert np.all(res.v == 0)
    np.testing.assert_allclose(res.ideal, unit(tgt_attrs.mean(axis=0)))
    assert res.score == pytest.approx(float(np.dot(unit(edit_img), unit(tgt_attrs.mean(axis=0)))))


def test_score_is_one_when_edit_equals_ideal():
    src_img, _, src_attrs, tgt_attrs = random_case(3)
    first = augclip_score(src_img, src_img, src_attrs, tgt_attrs, include_images=False)
    assert first.c > 0
    again = augclip_score(src_img, first.ideal, src_attrs, tgt_attrs, include_images=False)
    assert again.score == pytest.approx(1.0, abs=1e-12)


def test_alpha_hand_computed_three_plus_three():
    e1, e2, e3 = np.eye(3)
    S = np.array([e1, e2, (e1 + e2)])  # third one is unnormalised on purpose
    T = np.array([2 * e3, e3, e1])
    r = 1 / np.sqrt(2)
    # Importance: sum of cosines to the other members of the own set.
    # Collision: minus the mean cosine to the opposite set.
    expected_s = [r - 1 / 3, r - 0.0, 2 * r - r / 3]
    expected_t = [1.0 - 0.0, 1.0 - 0.0, 0.0 - (1 + 0 + r) / 3]
    alpha_s, alpha_t = attribute_weights(S, T)
    np.testing.assert_allclose(alpha_s, expected_s, atol=1e-12)
    np.testing.assert_allclose(alpha_t, expected_t, atol=1e-12)


def test_sample_weights_floor_and_mean_one():
    np.testing.assert_array_equal(sample_weights_from_alpha(np.array([-2.0, 0.0, 1.0, 3.0])), [1e-3, 1e-3, 1.0, 3.0])
    weights = sample_weights_from_alpha(np.array([-2.0, 0.0, 1.0, 3.0]), scaling="mean")
    floored = np.array([1e-3, 1e-3, 1.0, 3.0])
    np.testing.assert_allclose(weights, floored / floored.mean())
    assert weights.mean() == pytest.approx(1.0)
    np.testing.assert_array_equal(sample_weights_from_alpha(np.array([-1.0, 5.0]), weighting=False), [1.0, 1.0])


def test_alpha_and_weights_order_source_first_images_first():
    src_img, edit_img, src_attrs, tgt_attrs = random_case(4, n_s=3, n_t=2)
    res = augclip_score(src_img, edit_img, src_attrs, tgt_attrs)
    assert res.n_source == 4 and res.n_target == 3 and len(res.alpha) == 7
    a_s, a_t = attribute_weights(np.vstack([src_img, src_attrs]), np.vstack([edit_img, tgt_attrs]))
    np.testing.assert_allclose(res.alpha, np.concatenate([a_s, a_t]))


def test_deltas_follow_eq_11_12():
    src_img, edit_img, src_attrs, tgt_attrs = random_case(5)
    res = augclip_score(src_img, edit_img, src_attrs, tgt_attrs)
    s, ideal = unit(src_img), unit(res.ideal)
    for attrs, deltas in ((src_attrs, res.source_deltas), (tgt_attrs, res.target_deltas)):
        expected = [np.dot(ideal, unit(a)) - np.dot(s, unit(a)) for a in attrs]
        np.testing.assert_allclose(deltas, expected, atol=1e-12)
    assert len(res.source_deltas) == len(src_attrs) and len(res.target_deltas) == len(tgt_attrs)


@pytest.mark.parametrize("classifier", ["svm", "logistic", "lda"])
def test_each_classifier_variant(classifier):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    src_img, edit_img, src_attrs, tgt_attrs = random_case(7)
    res = augclip_score(src_img, edit_img, src_attrs, tgt_attrs, classifier=classifier, C=0.5)
    X = np.vstack([unit(src_img), [unit(a) for a in src_attrs], unit(edit_img), [unit(a) for a in tgt_attrs]])
    y = np.array([-1] * (len(src_attrs) + 1) + [1] * (len(tgt_attrs) + 1))
    if classifier == "svm":
        model = SVC(kernel="linear", C=0.5, tol=1e-12).fit(X, y, sample_weight=res.sample_weight)
    elif classifier == "logistic":
        model = LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=res.sample_weight)
    else:
        model = LinearDiscriminantAnalysis().fit(X, y)
    np.testing.assert_allclose(res.w, model.coef_[0], atol=1e-8)
    assert res.b == pytest.approx(model.intercept_[0], abs=1e-8)
    # The target side is where g > 0: every classifier must put the target attributes' mean there.
    assert np.dot(res.w, unit(np.mean([unit(a) for a in tgt_attrs], axis=0))) + res.b > 0


def test_weighting_changes_the_fit():
    case = random_case(8)
    weighted = augclip_score(*case, weighting=True)
    plain = augclip_score(*case, weighting=False)
    assert not np.allclose(weighted.w, plain.w)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: {**a, "src_attrs": np.zeros((0, 8))}, "src_attrs"),
        (lambda a: {**a, "tgt_attrs": np.zeros((0, 8))}, "tgt_attrs"),
        (lambda a: {**a, "src_image": np.full(8, np.nan)}, "src_image contains NaN"),
        (lambda a: {**a, "edit_image": np.r_[np.inf, np.ones(7)]}, "edit_image contains NaN or infinite"),
        (lambda a: {**a, "src_image": np.zeros(8)}, "src_image is a zero vector"),
        (lambda a: {**a, "tgt_attrs": np.vstack([np.ones(8), np.zeros(8)])}, "tgt_attrs (target attributes) row 1 is a zero vector"),
        (lambda a: {**a, "edit_image": np.ones(7)}, "edit_image has dimension 7, expected 8"),
        (lambda a: {**a, "src_attrs": np.ones((2, 9))}, "src_attrs (source attributes) has dimension 9"),
        (lambda a: {**a, "src_attrs": np.ones((2, 2, 8))}, "src_attrs"),
        (lambda a: {**a, "classifier": "tree"}, "unknown classifier"),
        (lambda a: {**a, "C": 0.0}, "C must be a positive"),
        (lambda a: {**a, "weight_scaling": "median"}, "unknown weight scaling"),
        (lambda a: {**a, "projection": "orthogonal"}, "unknown projection"),
    ],
)
def test_errors_name_the_input(mutate, message):
    rng = np.random.default_rng(0)
    args = {"src_image": rng.normal(size=8), "edit_image": rng.normal(size=8),
            "src_attrs": rng.normal(size=(3, 8)), "tgt_attrs": rng.normal(size=(3, 8)) + 2}
    with pytest.raises(ValueError) as info:
        augclip_score(**mutate(args))
    assert message in str(info.value)


def test_fit_without_both_classes_is_refused():
    from augclip_demo.metrics.augclip import fit_hyperplane

    with pytest.raises(ValueError, match="both a source"):
        fit_hyperplane(np.eye(3), np.array([1, 1, 1]), np.ones(3))


def test_indistinguishable_sets_give_a_clear_error():
    v = unit(np.arange(1, 9))
    with pytest.raises(ValueError, match="indistinguishable"):
        augclip_score(v, v, np.array([v, v]), np.array([v, v]), include_images=True)


def test_embeddings_are_unit_normalised_so_their_lengths_do_not_count():
    """Decision (method notes): every embedding is scaled to length 1 before the weights and the fit.

    Checked against the reference on unit inputs: rescaling each input by an arbitrary positive
    factor (CLIP's image and text norms differ and vary per input) leaves every number unchanged.
    """
    src_img, edit_img, src_attrs, tgt_attrs = random_case(12)
    rng = np.random.default_rng(12)
    scaled = (src_img * 7.5, edit_img * 0.2, src_attrs * rng.uniform(0.1, 10, size=(len(src_attrs), 1)),
              tgt_attrs * rng.uniform(0.1, 10, size=(len(tgt_attrs), 1)))
    res = augclip_score(*scaled)
    score, c, alpha, _ = reference_augclip(unit(src_img), unit(edit_img), [unit(a) for a in src_attrs],
                                           [unit(a) for a in tgt_attrs])
    assert res.score == pytest.approx(score, abs=1e-6) and res.c == pytest.approx(c, rel=1e-5)
    np.testing.assert_allclose(res.alpha, alpha, atol=1e-10)
    assert res.score == pytest.approx(augclip_score(src_img, edit_img, src_attrs, tgt_attrs).score, abs=1e-9)
