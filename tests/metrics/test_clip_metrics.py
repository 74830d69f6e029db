"""CLIPdir, CLIP-I, CLIP-T, augmented CLIPdir (Eq. 13-14) and pixel L2."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from augclip_demo.metrics.augclip import attribute_weights
from augclip_demo.metrics.clip_metrics import augmented_clip_dir, clip_dir, clip_i, clip_t
from augclip_demo.metrics.pixel import l2_distance
from augclip_demo.metrics.suite import best_index


def unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


def test_clip_dir_matches_eq_2():
    rng = np.random.default_rng(0)
    s, e, ts, tt = (rng.normal(size=16) for _ in range(4))
    di = unit(e) - unit(s)
    dt = unit(tt) - unit(ts)
    assert clip_dir(s, e, ts, tt) == pytest.approx(di @ dt / (np.linalg.norm(di) * np.linalg.norm(dt)))
    # Scale of the inputs is irrelevant (every embedding is normalised first).
    assert clip_dir(3 * s, 0.5 * e, 7 * ts, tt) == pytest.approx(clip_dir(s, e, ts, tt))


def test_clip_dir_of_unchanged_edit_is_zero_not_nan():
    v = unit(np.arange(1.0, 9.0))
    assert clip_dir(v, v, unit(np.ones(8)), unit(np.arange(8.0) - 3)) == 0.0


def test_clip_i_and_clip_t_are_cosines():
    a, b = np.array([1.0, 0, 0]), np.array([1.0, 1.0, 0])
    assert clip_i(a, b) == pytest.approx(1 / np.sqrt(2))
    assert clip_t(b, a) == pytest.approx(1 / np.sqrt(2))


def test_augmented_variants_follow_eq_13_and_14():
    rng = np.random.default_rng(1)
    s, e, ts, tt = (rng.normal(size=12) for _ in range(4))
    S, T = rng.normal(size=(4, 12)), rng.normal(size=(3, 12))
    Sn, Tn = np.array([unit(x) for x in S]), np.array([unit(x) for x in T])
    di = unit(e) - unit(s)

    def cs(a, b):
        return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))

    assert augmented_clip_dir(s, e, S, T, "src", tgt_text=tt) == pytest.approx(cs(di, unit(tt) - Sn.mean(0)))
    assert augmented_clip_dir(s, e, S, T, "tgt", src_text=ts) == pytest.approx(cs(di, Tn.mean(0) - unit(ts)))
    assert augmented_clip_dir(s, e, S, T, "both") == pytest.approx(cs(di, Tn.mean(0) - Sn.mean(0)))
    a_s, a_t = attribute_weights(S, T)
    weighted_s = (a_s[:, None] * Sn).mean(0)
    weighted_t = (a_t[:, None] * Tn).mean(0)
    assert augmented_clip_dir(s, e, S, T, "src", True, tgt_text=tt) == pytest.approx(cs(di, unit(tt) - weighted_s))
    assert augmented_clip_dir(s, e, S, T, "both", True) == pytest.approx(cs(di, weighted_t - weighted_s))
    with pytest.raises(ValueError, match="needs the source text"):
        augmented_clip_dir(s, e, S, T, "tgt")


def test_l2_is_rmse_in_unit_range_after_resizing():
    src = Image.new("RGB", (10, 10), (0, 0, 0))
    assert l2_distance(src, Image.new("RGB", (10, 10), (255, 255, 255))) == pytest.approx(1.0)
    assert l2_distance(src, src.copy()) == 0.0
    # A half-bright edit at another size is resized to the source first.
    assert l2_distance(src, Image.new("RGB", (37, 23), (51, 51, 51))) == pytest.approx(0.2)
    half = np.zeros((10, 10), bool)
    half[:5] = True
    edit = Image.fromarray(np.r_[np.zeros((5, 10, 3)), np.full((5, 10, 3), 255)].astype(np.uint8))
    assert l2_distance(src, edit, mask=half) == 0.0
    assert l2_distance(src, edit, mask=~half) == pytest.approx(1.0)
    assert np.isnan(l2_distance(src, edit, mask=np.zeros((10, 10), bool)))


def test_best_index_respects_direction_and_missing_values():
    assert best_index([0.2, 0.9, 0.5], "augclip") == 1
    assert best_index([0.2, 0.9, 0.5], "l2") == 0
    assert best_index([None, 0.3, None], "clip_dir") == 1
    assert best_index([None, None], "clip_dir") is None
    assert best_index([0.5, 0.5], "augclip") == 0
