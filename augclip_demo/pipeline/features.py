"""The feature networks of the reference and preservation metrics, and the edit mask they read.

``dino_gt`` (MagicBrush), ``structure_distance``, ``lpips_unedited`` and PIE-Bench's CLIP scores load a
network of their own: one row each in :data:`~augclip_demo.choices.FEATURE_NETWORKS`, which names the
network's runner (here, :class:`FeatureItem` in, :class:`FeatureOutput` out). :func:`feature_inputs` runs
the rows on one item's images (the pixel stage calls it on every path)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..choices import FEATURE_NETWORKS, FeatureNetworks
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


@dataclass(frozen=True)
class FeatureItem:
    """One item as the feature networks' runners read it: PIL images, the edit mask, the target text, the
    feature metrics asked for, and the networks and settings they load with."""

    source: Any
    edits: Sequence[Any]
    ground_truth: Any | None
    edit_mask: np.ndarray | None
    target_text: str | None
    wanted: Collection[str]
    networks: FeatureNetworks
    settings: Settings


@dataclass
class FeatureOutput:
    """What one feature network's runner gives: :class:`MetricInputs` fields, and notes on untrained weights."""

    fields: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _untrained_note(what: str, model: Any) -> list[str]:
    return [f"{what} {UNTRAINED_WARNING} ({model.label})"] if model.untrained else []


def run_dino_gt(item: FeatureItem, spec: str) -> FeatureOutput:
    """DINO class-token embeddings of the edits and the ground truth (``dino_gt``)."""
    from ..inference.dino import get_dino

    dino = get_dino(spec, item.settings)
    rows = unit_rows(dino.embed([*item.edits, item.ground_truth], pooling="cls"), "DINO features")
    return FeatureOutput({"dino_edit_embeddings": rows[:-1], "dino_ground_truth_embedding": rows[-1]},
                         _untrained_note("DINO (GT)", dino))


def run_structure(item: FeatureItem, spec: str) -> FeatureOutput:
    """DINO keys of the source and of each edit at the source's size (``structure_distance``)."""
    from ..inference.dino import get_dino

    dino = get_dino(spec, item.settings)
    size = item.source.size
    same_size = [e if e.size == size else e.convert("RGB").resize(size, _BICUBIC) for e in item.edits]
    keys = dino.keys([item.source, *same_size], pixel_scale=item.networks.structure_pixel_scale)
    return FeatureOutput({"structure_keys_source": keys[0], "structure_keys_edits": keys[1:]},
                         _untrained_note("Structure distance", dino))


def _unedited(item: FeatureItem, lpips: Any = None) -> list[dict[str, float | None]]:
    from ..inference.image_measures import unedited_measures

    return [unedited_measures(item.source, edit, item.edit_mask, lpips) for edit in item.edits]


def run_lpips(item: FeatureItem, spec: str) -> FeatureOutput:
    """The unedited-region measures with LPIPS among them (``lpips_unedited``)."""
    from ..inference.lpips import get_lpips

    lpips = get_lpips(spec, item.settings)
    return FeatureOutput({"unedited_measures": _unedited(item, lpips)}, _untrained_note("LPIPS (unedited)", lpips))


def run_pie_clip(item: FeatureItem, spec: str) -> FeatureOutput:
    """PIE-Bench's CLIP embeddings of the edits (whole, and outside the mask black) and of the target text
    (``clip_score_whole``, ``clip_score_edited``)."""
    from ..inference.clip_score import pie_clip_embeddings

    rows, untrained = pie_clip_embeddings(item.edits, item.edit_mask, str(item.target_text), item.wanted, spec,
                                          item.settings)
    fields = {name: unit_rows(value, "CLIP score embeddings") for name, value in rows.items()}
    fields["pie_clip_target_embedding"] = fields["pie_clip_target_embedding"][0]
    return FeatureOutput(fields, [f"CLIP score (PIE-Bench) {UNTRAINED_WARNING} ({untrained})"] if untrained else [])


def _runner(net: Any) -> Callable[[FeatureItem, str], FeatureOutput]:
    """The function a :data:`~augclip_demo.choices.FEATURE_NETWORKS` row names as its runner."""
    module, _, name = net.runner.partition(":")
    return getattr(importlib.import_module(module, "augclip_demo"), name)


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and not value)


def feature_inputs(source: Any, edits: Sequence[Any], ground_truth: Any, edit_mask: np.ndarray | None,
                   wanted: Collection[str], networks: FeatureNetworks,
                   settings: Settings, target_text: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """The network-made metric inputs of one item (PIL images in, :class:`MetricInputs` fields out) and
    notes on untrained networks. Each network of :data:`~augclip_demo.choices.FEATURE_NETWORKS` runs (its
    row's runner, in the table's order) when one of its metrics is ``wanted`` and the item has the inputs its
    row needs; with an edit mask the unedited-region measures are always made (without LPIPS when
    ``lpips_unedited``'s runner did not make them). The pixel stage (:class:`~.stages.PixelStage`) calls it
    on every path."""
    item = FeatureItem(source, edits, ground_truth, edit_mask, target_text, wanted, networks, settings)
    out = FeatureOutput()
    for net in FEATURE_NETWORKS:
        if set(net.metrics) & set(wanted) and all(_given(getattr(item, name)) for name in net.needs):
            ran = _runner(net)(item, getattr(networks, net.field))
            out.fields.update(ran.fields)
            out.notes.extend(ran.notes)
    if edit_mask is not None and "unedited_measures" not in out.fields:
        out.fields["unedited_measures"] = _unedited(item)
    return out.fields, out.notes
