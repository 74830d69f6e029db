"""Reference-based and structure metrics: pure numpy on pixels and on model features passed in.

* MagicBrush's pixel distances to a ground-truth image (its ``evaluation/image_eval.py``): the edit
  is resized to the ground truth's size (bicubic), both are scaled to [0, 1], and L1 is the mean
  absolute difference, "L2" the mean *squared* difference (PyTorch's ``L1Loss`` / ``MSELoss``, mean
  over every pixel and channel).
* PIE-Bench's structure distance (Tumanyan et al.'s "splicing ViT features" self-similarity, as the
  benchmark's ``matrics_calculator.py`` computes it): the cosine self-similarity matrix of the
  last-block attention keys of each image (tokens x tokens, class token included), and the mean
  squared difference of the two matrices. The keys come from
  :meth:`augclip_demo.inference.dino.DinoFeatures.keys`.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from .pixel import to_unit_array

_SELF_SIMILARITY_EPS = 1e-8  # the clamp of the norms' product, as in the benchmark script


def _gt_pixel_arrays(edited: Image.Image, ground_truth: Image.Image) -> tuple[np.ndarray, np.ndarray]:
    """(edit, ground truth) as float64 [0, 1] arrays of the ground truth's size (the edit resized, bicubic)."""
    return to_unit_array(edited, size=ground_truth.size), to_unit_array(ground_truth)


def l1_to_ground_truth(edited: Image.Image, ground_truth: Image.Image) -> float:
    """Mean absolute pixel difference in [0, 1] (MagicBrush's L1); lower is better."""
    edit, truth = _gt_pixel_arrays(edited, ground_truth)
    return float(np.abs(edit - truth).mean())


def l2_to_ground_truth(edited: Image.Image, ground_truth: Image.Image) -> float:
    """Mean squared pixel difference in [0, 1] (MagicBrush's "L2", an MSE); lower is better."""
    edit, truth = _gt_pixel_arrays(edited, ground_truth)
    return float(((edit - truth) ** 2).mean())


def _key_self_similarity(keys: np.ndarray) -> np.ndarray:
    """Cosine similarity between every pair of tokens' keys: (tokens, tokens), float64."""
    k = np.asarray(keys, dtype=np.float64)
    if k.ndim != 2:
        raise ValueError(f"keys must be a (tokens, dim) matrix, got shape {k.shape}")
    norms = np.linalg.norm(k, axis=1, keepdims=True)
    return (k @ k.T) / np.maximum(norms @ norms.T, _SELF_SIMILARITY_EPS)


def structure_distance(source_keys: np.ndarray, edited_keys: np.ndarray) -> float:
    """Mean squared difference of the two key self-similarity matrices; 0 = same structure, lower is better."""
    a, b = _key_self_similarity(source_keys), _key_self_similarity(edited_keys)
    if a.shape != b.shape:
        raise ValueError(f"structure distance needs images with the same token grid: {a.shape[0]} and {b.shape[0]} "
                         "tokens (resize the edit to the source's size first)")
    return float(((a - b) ** 2).mean())
