"""Validation and small vector helpers shared by the metrics (numpy only)."""

from __future__ import annotations

import numpy as np

_ZERO_NORM = 1e-12


def as_vector(value: object, name: str, dim: int | None = None) -> np.ndarray:
    """``value`` as a finite, non-zero ``(d,)`` float64 vector, or a ValueError naming ``name``."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 2 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D embedding of shape (d,), got shape {array.shape}")
    if array.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape (0,))")
    if dim is not None and array.shape[0] != dim:
        raise ValueError(f"{name} has dimension {array.shape[0]}, expected {dim} (embeddings from different models?)")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.linalg.norm(array) < _ZERO_NORM:
        raise ValueError(f"{name} is a zero vector; a cosine similarity with it is undefined")
    return array


def as_matrix(value: object, name: str, dim: int | None = None) -> np.ndarray:
    """``value`` as a finite ``(n, d)`` float64 matrix with n >= 1 and no zero rows."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 1 and array.shape[0] > 0 and dim is not None and array.shape[0] == dim:
        array = array[None, :]  # a single embedding given as (d,)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d), got shape {array.shape}")
    if array.shape[0] == 0:
        raise ValueError(f"{name} is empty: at least one attribute embedding is required")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"{name} has dimension {array.shape[1]}, expected {dim} (embeddings from different models?)")
    if not np.all(np.isfinite(array)):
        bad = int(np.argwhere(~np.isfinite(array))[0][0])
        raise ValueError(f"{name} row {bad} contains NaN or infinite values")
    norms = np.linalg.norm(array, axis=1)
    if np.any(norms < _ZERO_NORM):
        raise ValueError(f"{name} row {int(np.argmin(norms))} is a zero vector")
    return array


def unit_rows(value: object, name: str, dim: int | None = None) -> np.ndarray:
    """``value`` checked (:func:`as_matrix`) and L2-normalised row by row, as float64.

    The one place where embeddings become the unit vectors the metric kernels (``*_from_unit``)
    take: the Evaluator and the batch runner call it once per embedding as it comes from the encoder.
    """
    return normalize(as_matrix(value, name, dim))


def normalize(array: np.ndarray) -> np.ndarray:
    """L2-normalise a vector or each row of a matrix."""
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return array / np.maximum(norms, _ZERO_NORM)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cs(a, b) = a.b / (|a||b|); 0.0 when either vector is (numerically) zero.

    The zero case arises legitimately in direction metrics (an edit identical to its source has
    a zero image direction); 0 means "no alignment", which keeps rankings well defined.
    """
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na < _ZERO_NORM or nb < _ZERO_NORM:
        return 0.0
    return float(np.dot(a, b) / (na * nb))
