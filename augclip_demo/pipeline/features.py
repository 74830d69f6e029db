"""The feature networks of the reference and preservation metrics, and the edit mask they read.

``dino_gt`` (MagicBrush), ``structure_distance`` and ``lpips_unedited`` (PIE-Bench) load a network of
their own; :func:`feature_inputs` runs them on one item's images (the pixel stage calls it on every path).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from ..choices import FeatureNetworks
from ..config import Settings
from ..errors import InputError
from ..io import LoadedImage, open_image
from ..metrics.vectors import unit_rows
from ..report import UNTRAINED_WARNING

_BICUBIC = 3  # PIL.Image.BICUBIC




def _mask_array(mask: Any, size: tuple[int, int], what: str) -> np.ndarray:
    """A boolean (H, W) mask of ``size`` (W, H) from a path / bytes / PIL image / array (True or >= 128 = marked);
    a mask of another size is resized to ``size`` (nearest)."""
    from PIL import Image

    if isinstance(mask, np.ndarray) and mask.ndim == 2:
        array = mask.astype(bool) if mask.dtype == bool else np.asarray(mask, dtype=np.float64) >= (
            0.5 if mask.dtype.kind == "f" else 128)
    else:
        loaded = mask if isinstance(mask, LoadedImage) else open_image(mask, name=what)
        array = np.asarray(loaded.image.convert("L")) >= 128
    if array.shape != (size[1], size[0]):
        array = np.asarray(Image.fromarray(array.astype(np.uint8) * 255).resize(size, Image.NEAREST)) >= 128
    return array


def load_edit_mask(mask: Any, size: tuple[int, int]) -> np.ndarray:
    """A boolean (H, W) edit mask of ``size`` (W, H) from a path / bytes / PIL image / array (True or >= 128 =
    the region the edit should change); a mask of another size is resized to the source's (nearest)."""
    array = _mask_array(mask, size, "edit mask")
    if not array.any():
        raise InputError("the edit mask is empty (no pixel marked as edited): mark the region the edit should "
                         "change in white")
    return array


def load_object_masks(masks: Any, size: tuple[int, int], n_edits: int) -> Any:
    """Given object masks (:class:`~augclip_demo.bpm.ObjectMasks`, or a dict ``{"source": {name: mask},
    "edits": [{name: mask} or None per edit]}``; each mask a path / bytes / PIL image / array) as boolean
    masks of the source's ``size`` (W, H), each resized there (nearest) as BPM resizes an edit; None stays
    None. An empty mask is kept: that object is not in that image."""
    from ..bpm.localize import ObjectMasks

    if masks is None:
        return None
    source = masks.source if isinstance(masks, ObjectMasks) else (masks or {}).get("source")
    edits = masks.edits if isinstance(masks, ObjectMasks) else (masks or {}).get("edits")
    if not isinstance(masks, (ObjectMasks, dict)) or not isinstance(source or {}, dict):
        raise InputError("object masks must be an ObjectMasks or {'source': {name: mask}, 'edits': [{name: mask} "
                         "or None per edit]}")
    edits = list(edits or [])
    if len(edits) > n_edits:
        raise InputError(f"object masks are given for {len(edits)} edits, but there are {n_edits}")

    def read(named: Any, where: str) -> dict[str, np.ndarray] | None:
        if named is None:
            return None
        if not isinstance(named, dict):
            raise InputError(f"{where} must map object names to masks, got {type(named).__name__}")
        return {str(name): _mask_array(mask, size, f"{where} mask {name!r}") for name, mask in named.items()}

    return ObjectMasks(read(source or {}, "the source's object masks") or {},
                       [read(named, f"edit {i + 1}'s object masks") for i, named in enumerate(edits)])


def feature_inputs(source: Any, edits: Sequence[Any], ground_truth: Any, edit_mask: np.ndarray | None,
                   wanted: Collection[str], networks: FeatureNetworks,
                   settings: Settings, target_text: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The network-made metric inputs of one item (PIL images in, :class:`MetricInputs` fields out) and
    notes on untrained networks: DINO embeddings (``dino_gt``, with a ground truth), DINO keys
    (``structure_distance``) and, with an edit mask, the unedited-region measures (LPIPS when
    ``lpips_unedited`` is wanted), and PIE-Bench's CLIP embeddings of the edits (whole, and outside the mask
    black) and of ``target_text``. The pixel stage (:class:`~.stages.PixelStage`) calls it on every path."""
    from ..inference.dino import get_dino

    fields: dict[str, Any] = {}
    notes: list[str] = []
    if "dino_gt" in wanted and ground_truth is not None:
        dino = get_dino(networks.dino, settings)
        rows = unit_rows(dino.embed([*edits, ground_truth], pooling="cls"), "DINO features")
        fields["dino_edit_embeddings"], fields["dino_ground_truth_embedding"] = rows[:-1], rows[-1]
        if dino.untrained:
            notes.append(f"DINO (GT) {UNTRAINED_WARNING} ({dino.label})")
    if "structure_distance" in wanted:
        dino = get_dino(networks.structure, settings)
        size = source.size
        same_size = [e if e.size == size else e.convert("RGB").resize(size, _BICUBIC) for e in edits]
        keys = dino.keys([source, *same_size], pixel_scale=networks.structure_pixel_scale)
        fields["structure_keys_source"], fields["structure_keys_edits"] = keys[0], keys[1:]
        if dino.untrained:
            notes.append(f"Structure distance {UNTRAINED_WARNING} ({dino.label})")
    if edit_mask is not None:
        from ..inference.image_measures import unedited_measures
        from ..inference.lpips import get_lpips

        lpips = get_lpips(networks.lpips, settings) if "lpips_unedited" in wanted else None
        fields["unedited_measures"] = [unedited_measures(source, edit, edit_mask, lpips) for edit in edits]
        if lpips is not None and lpips.untrained:
            notes.append(f"LPIPS (unedited) {UNTRAINED_WARNING} ({lpips.label})")
    if {"clip_score_whole", "clip_score_edited"} & set(wanted) and target_text:
        from ..inference.clip_score import pie_clip_embeddings

        rows, untrained = pie_clip_embeddings(edits, edit_mask, target_text, wanted, networks.pie_clip, settings)
        fields.update({name: unit_rows(value, "CLIP score embeddings") for name, value in rows.items()})
        fields["pie_clip_target_embedding"] = fields["pie_clip_target_embedding"][0]
        notes.extend([f"CLIP score (PIE-Bench) {UNTRAINED_WARNING} ({untrained})"] if untrained else [])
    return fields, notes
