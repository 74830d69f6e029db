"""CLIP baselines (Sec. 3.2 and 5 of the AugCLIP paper) and augmented CLIPdir (App. D.2).

The public functions take CLIP embeddings of any length (numpy vectors); each one is checked and
L2-normalised once at this edge, then passed to a ``*_from_unit`` kernel that takes unit float64
vectors and does no checks (the metric suite calls the kernels directly: its embeddings were
normalised once where they were made, by :func:`~.vectors.unit_rows`)::

    CLIPdir = cs(E(I_edit) - E(I_src), E(T_trg) - E(T_src))        (Eq. 1-2)
    CLIP-I  = cs(E(I_edit), E(I_src))
    CLIP-T  = cs(E(I_edit), E(T_trg))

Augmented CLIPdir replaces a text embedding by the mean of an attribute set (Eq. 13) or by the
mean of alpha-weighted attributes (Eq. 14, alpha from Eq. 6 computed on D_S vs D_T):

* ``src``: E(T_src) -> E_{s in D_S}[s]        (needs the target text only)
* ``tgt``: E(T_trg) -> E_{t in D_T}[t]        (needs the source text)
* ``both``: both replacements                 (needs neither text)

Eq. 14 is implemented as written, E[alpha(s) * s]: the weighted mean is *not* renormalised, so its
length (and therefore its share in the text direction) scales with the alphas.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .augclip import attribute_weights_from_unit
from .vectors import as_matrix, as_vector, cosine, normalize

Replacement = Literal["src", "tgt", "both"]
AUGMENTED_VARIANTS: tuple[tuple[Replacement, bool], ...] = tuple(
    (replace, weighted) for replace in ("src", "tgt", "both") for weighted in (False, True)
)


def clip_dir(src_image: np.ndarray, edit_image: np.ndarray, src_text: np.ndarray, tgt_text: np.ndarray) -> float:
    """Directional CLIP similarity; 0.0 when the edit equals the source (zero image direction)."""
    src = normalize(as_vector(src_image, "src_image"))
    dim = src.shape[0]
    edit = normalize(as_vector(edit_image, "edit_image", dim))
    t_src = normalize(as_vector(src_text, "src_text", dim))
    t_trg = normalize(as_vector(tgt_text, "tgt_text", dim))
    return clip_dir_from_unit(src, edit, t_src, t_trg)


def clip_dir_from_unit(src: np.ndarray, edit: np.ndarray, t_src: np.ndarray, t_trg: np.ndarray) -> float:
    """:func:`clip_dir` of unit vectors (no checks)."""
    return cosine(edit - src, t_trg - t_src)


def clip_i(src_image: np.ndarray, edit_image: np.ndarray) -> float:
    """Image-image cosine similarity (preservation only)."""
    src = as_vector(src_image, "src_image")
    return cosine(src, as_vector(edit_image, "edit_image", src.shape[0]))


def clip_t(edit_image: np.ndarray, tgt_text: np.ndarray) -> float:
    """Image-text cosine similarity, i.e. CLIPScore without its 2.5 rescaling (modification only)."""
    edit = as_vector(edit_image, "edit_image")
    return cosine(edit, as_vector(tgt_text, "tgt_text", edit.shape[0]))


def clip_score(image: np.ndarray, text: np.ndarray) -> float:
    """CLIPScore as PIE-Bench reports it (torchmetrics' ``CLIPScore``): ``100 * max(cos(image, text), 0)``."""
    return clip_score_from_unit(normalize(as_vector(image, "image embedding")), normalize(as_vector(text, "text embedding")))


def clip_score_from_unit(image: np.ndarray, text: np.ndarray) -> float:
    return 100.0 * max(float(np.dot(image, text)), 0.0)


def augmented_variant_name(replace: Replacement, weighted: bool) -> str:
    return f"clip_dir_aug_{replace}" + ("_weighted" if weighted else "")


def augmented_clip_dir(
    src_image: np.ndarray,
    edit_image: np.ndarray,
    src_attrs: np.ndarray,
    tgt_attrs: np.ndarray,
    replace: Replacement,
    weighted: bool = False,
    src_text: np.ndarray | None = None,
    tgt_text: np.ndarray | None = None,
) -> float:
    """CLIPdir with text embeddings replaced by attribute means (Eq. 13) or weighted means (Eq. 14)."""
    if replace not in ("src", "tgt", "both"):
        raise ValueError(f"replace must be 'src', 'tgt' or 'both', got {replace!r}")
    if replace == "src" and tgt_text is None:
        raise ValueError("augmented CLIPdir 'src' needs the target text embedding")
    if replace == "tgt" and src_text is None:
        raise ValueError("augmented CLIPdir 'tgt' needs the source text embedding")
    src = normalize(as_vector(src_image, "src_image"))
    dim = src.shape[0]
    edit = normalize(as_vector(edit_image, "edit_image", dim))
    d_s = normalize(as_matrix(src_attrs, "src_attrs", dim))
    d_t = normalize(as_matrix(tgt_attrs, "tgt_attrs", dim))
    t_src = normalize(as_vector(src_text, "src_text", dim)) if replace == "tgt" else None
    t_trg = normalize(as_vector(tgt_text, "tgt_text", dim)) if replace == "src" else None
    return augmented_clip_dir_from_unit(src, edit, d_s, d_t, replace, weighted, t_src, t_trg)


def augmented_clip_dir_from_unit(
    src: np.ndarray,
    edit: np.ndarray,
    d_s: np.ndarray,
    d_t: np.ndarray,
    replace: Replacement,
    weighted: bool,
    t_src: np.ndarray | None,
    t_trg: np.ndarray | None,
) -> float:
    """:func:`augmented_clip_dir` of unit vectors and unit attribute rows (no checks)."""
    if weighted:
        alpha_s, alpha_t = attribute_weights_from_unit(d_s, d_t)
        mean_s = (alpha_s[:, None] * d_s).mean(axis=0)
        mean_t = (alpha_t[:, None] * d_t).mean(axis=0)
    else:
        mean_s, mean_t = d_s.mean(axis=0), d_t.mean(axis=0)
    if replace == "src":
        assert t_trg is not None
        direction = t_trg - mean_s
    elif replace == "tgt":
        assert t_src is not None
        direction = mean_t - t_src
    else:
        direction = mean_t - mean_s
    return cosine(edit - src, direction)
