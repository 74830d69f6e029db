"""Gradient-weighted attention relevancy (Chefer et al., 2021) for the ViT image towers of open_clip.

For a scalar objective on the image embedding, here ``s = cs(E(I), t)`` for a target vector t::

    A_l       attention probabilities of layer l, shape (heads, L, L)   (L = prefix tokens + patches)
    Abar_l    = mean over heads of clamp(dS/dA_l * A_l, min=0)
    R         = I;   R <- R + Abar_l @ R      for every layer l (from ``start_layer``)
    relevance = read-out row of R over the patch tokens, on the patch grid

The read-out row is the class-token row of R for class-token pooling (every OpenAI / LAION ViT,
EVA), the mean of the patch rows for average pooling (CLIPA), and for attention pools (CoCa,
timm's "map": SigLIP, PE-Core) the gradient-weighted pooler attention of the pooled query times R
(a pooler has no residual, so its relevance is its own attention rather than I + attention). The
grid is upsampled bilinearly to the model input and min-max normalised to [0, 1], then placed back
onto the input image (:mod:`.geometry`).

The attention probabilities are recorded by :mod:`.towers` without changing the forward function.
Parameters keep ``requires_grad=False``: the graph is rooted at a copy of the input pixels, and
``torch.autograd.grad`` returns gradients for the attention maps only (nothing accumulates in
``.grad``). The pass runs outside inference mode, under the encoder's inference lock, in eval
mode; the model is left exactly as it was, also when the pass raises.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..choices import CLIP_DIR_DIFFERENCES
from ..errors import ExplanationUnavailableError, InputError
from ..inference.clip_encoder import ClipEncoder
from ..inference.device import is_out_of_memory
from ..io import ImageInput, LoadedImage, open_image
from ..lru import LRUCache
from ..metrics.augclip import AugCLIPResult
from ..metrics.vectors import cosine
from .geometry import ModelView, model_view, place_on_image, upsample_grid
from .towers import Tower, instrumented, readout_row, tower_of

_OBJECTIVES: dict[str, str] = {
    "clip_t": "CLIP-T: t = E(T_trg)",
    "clip_dir": "CLIPdir: t = dT = E(T_trg) - E(T_src)",
    "augclip": "AugCLIP: t = E(I_src) + v, the estimated ideal edit",
    "augclip_v": "AugCLIP's modification: t = v, the change from the source to the ideal edit",
    "custom": "a caller-given target vector t",
}
#: Maps kept per encoder (CPU): about 4 kB each for ViT-B/16 (a 14 x 14 grid and the embedding).
_MAP_CACHE_SIZE = 2048


# ---------------------------------------------------------------------------------------- results
@dataclass
class RelevancyMap:
    """Relevance of each image patch for ``cs(E(I), t)``, with what is needed to overlay it.

    ``raw`` is the read-out row of R over the patch tokens (non-negative, not normalised);
    :meth:`view_map` is the normalised [0, 1] map on the model input, :meth:`image_map` the same
    placed on the input image frame (NaN where the model saw nothing).
    """

    objective: str
    image_name: str
    view: ModelView
    raw: np.ndarray  # (grid_h, grid_w)
    score: float  # cs(E(I), t) computed in the relevancy pass
    embedding: np.ndarray  # (d,) unit image embedding from the same pass
    model_input_size: tuple[int, int]  # (width, height) of the model input
    start_layer: int
    num_layers: int
    readout: str
    notes: list[str] = field(default_factory=list)

    @property
    def grid_size(self) -> tuple[int, int]:
        return int(self.raw.shape[0]), int(self.raw.shape[1])

    @property
    def constant(self) -> bool:
        """True when every patch has the same relevance (the normalised map is then all zeros)."""
        return _is_constant(self.raw)

    def normalized_grid(self) -> np.ndarray:
        return normalize(self.raw)

    def view_map(self) -> np.ndarray:
        """Upsampled to the model input (bilinear) and min-max normalised to [0, 1]."""
        return normalize(upsample_grid(self.raw, self.model_input_size))

    def image_map(self, size: tuple[int, int] | None = None) -> np.ndarray:
        """The normalised map on the input image frame (``size`` = (width, height), default the input's)."""
        return place_on_image(self.view_map(), self.view, size)

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "image": self.image_name,
            "score": self.score,
            "grid": _rounded(self.raw, 6),
            "grid_normalized": _rounded(self.normalized_grid(), 4),
            "grid_size": list(self.grid_size),
            "model_input_size": list(self.model_input_size),
            "view_box": [round(v, 2) for v in self.view.box],
            "view_exact": self.view.exact,
            "start_layer": self.start_layer,
            "num_layers": self.num_layers,
            "readout": self.readout,
            "constant": self.constant,
            "notes": list(self.notes),
        }


@dataclass
class ClipDirRelevancy:
    """App. D.5: R(I_edit; dT) - R(I_src; dT), a signed map, with its two component maps.

    ``difference_mode="raw"`` (default) is App. D.5 as written: the two relevancy maps are subtracted
    as computed, then the difference is divided by its largest absolute value for display (one
    factor for the whole map, so signs and ratios stay). ``"normalized"`` first min-max normalises
    each map to [0, 1]; that discards how much relevance each image carries in total, so a source
    with weak, flat relevance looks as strong as an edit with a sharp peak. Both give a map in
    [-1, 1]: > 0 where the edit draws more relevance for the text direction than the source did.
    """

    source: RelevancyMap  # R(I_src; dT)
    edit: RelevancyMap  # R(I_edit; dT)
    difference_mode: str = "raw"
    clip_dir: float = float("nan")  # cs(E(I_edit) - E(I_src), dT) from the relevancy pass

    def view_difference(self) -> np.ndarray:
        if self.difference_mode == "raw":
            diff = upsample_grid(self.edit.raw - self.source.raw, self.edit.model_input_size)
            peak = float(np.max(np.abs(diff)))
            return diff / peak if peak > 0 else np.zeros_like(diff)
        return self.edit.view_map() - self.source.view_map()

    def grid_difference(self) -> np.ndarray:
        if self.difference_mode == "raw":
            diff = self.edit.raw - self.source.raw
            peak = float(np.max(np.abs(diff)))
            return diff / peak if peak > 0 else np.zeros_like(diff)
        return self.edit.normalized_grid() - self.source.normalized_grid()

    def image_difference(self, size: tuple[int, int] | None = None) -> np.ndarray:
        """The signed map on the *edited* image's frame (NaN where the model saw nothing)."""
        return place_on_image(self.view_difference(), self.edit.view, size)

    def to_dict(self) -> dict[str, Any]:
        return {
            "clip_dir": self.clip_dir,
            "difference_mode": self.difference_mode,
            "difference_grid": _rounded(self.grid_difference(), 4),
            "source": self.source.to_dict(),
            "edit": self.edit.to_dict(),
        }


# ---------------------------------------------------------------------------------------- public API
def relevancy(
    encoder: ClipEncoder,
    image: ImageInput | LoadedImage,
    target: np.ndarray,
    *,
    objective: str = "custom",
    start_layer: int = 0,
) -> RelevancyMap:
    """Relevancy map of ``image`` for the scalar ``cs(E(image), target)``."""
    return relevancy_batch(encoder, [image], np.asarray(target)[None, :], objectives=[objective],
                           start_layer=start_layer)[0]


def relevancy_batch(
    encoder: ClipEncoder,
    images: Sequence[ImageInput | LoadedImage],
    targets: np.ndarray,
    *,
    objectives: Sequence[str] | None = None,
    start_layer: int = 0,
    batch_size: int | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> list[RelevancyMap]:
    """One relevancy map per ``(images[i], targets[i])`` pair, computed in batches.

    ``progress(fraction, message)`` is called after every batch (maps done / maps asked).

    Samples do not interact in a ViT forward pass, so the gradient of the summed objective with
    respect to sample i's attention equals that of its own objective: batching is exact. Each
    distinct image is run forward once, whatever its number of targets.

    On CPU (``batch_size`` unset) a pass holds one image, so a map is a function of its image and
    target alone, bit for bit, and computed maps are kept in the encoder's cache (content hash of
    the image, the target vector, ``start_layer``). On GPU, or with ``batch_size`` (pairs per pass),
    passes hold several images, sized by default to keep the recorded attention maps near 512 MB
    (7 for ViT-B/16, 1 for ViT-L/14-336); on out-of-memory the pass is halved and retried.
    """
    loaded = [open_image(item) for item in images]
    target_array = _check_targets(targets, len(loaded))
    objectives = _check_objectives(objectives, len(loaded))
    if not loaded:
        return []
    tower = tower_of(encoder.model, encoder.spec.raw)
    dim = encoder.embed_dim
    if target_array.shape[1] != dim:
        raise InputError(f"target vectors have dimension {target_array.shape[1]}, but {encoder.spec.raw} "
                         f"embeds into {dim} dimensions (embeddings from a different model?)")
    layers = len(tower.attentions)
    first = _resolve_start_layer(start_layer, layers)
    cache = None if batch_size else _map_cache(encoder)  # a caller-set pass size mixes images in passes
    keys = [(item.sha256, hashlib.sha256(np.ascontiguousarray(target_array[k], dtype=np.float32).tobytes()).hexdigest(),
             first) for k, item in enumerate(loaded)]
    found: list[tuple[np.ndarray, np.ndarray, float] | None] = [None] * len(loaded)
    if cache is not None:
        found = [cache.get(key) for key in keys]
    todo = [k for k in range(len(loaded)) if found[k] is None]
    pixels_by_hash: dict[str, torch.Tensor] = {}
    for k in todo:
        if loaded[k].sha256 not in pixels_by_hash:
            pixels_by_hash[loaded[k].sha256] = encoder.preprocess(loaded[k].image)
    done = len(loaded) - len(todo)
    # On CPU a pass holds one image (with all its targets): a map then depends on its image and target
    # alone, bit for bit, so it can be cached and reused by later requests (the source's map when more
    # edits of it are scored; every map but AugCLIP's when only the classifier options change).
    per_pass = batch_size or _default_batch_size(tower)
    for pairs in _pass_plan([loaded[k] for k in todo], per_pass, one_image=cache is not None):
        pairs = [todo[k] for k in pairs]
        step = len(pairs)
        while pairs:
            chunk = pairs[:step]  # an image's pairs are adjacent in the plan
            images = list(dict.fromkeys(loaded[k].sha256 for k in chunk))
            pixels = torch.stack([pixels_by_hash[h] for h in images])
            owners = [images.index(loaded[k].sha256) for k in chunk]
            try:
                rows, embeddings, scores = _relevancy_pass(encoder, tower, pixels, target_array[chunk], owners, first)
            except Exception as exc:
                if not is_out_of_memory(exc) or step == 1:
                    raise
                if encoder.device.type == "cuda":
                    torch.cuda.empty_cache()
                step = max(1, step // 2)
                continue
            for j, k in enumerate(chunk):
                found[k] = (rows[j], embeddings[j], float(scores[j]))
                if cache is not None:
                    rows[j].setflags(write=False)  # shared with later requests through the cache
                    embeddings[j].setflags(write=False)
                    cache.put(keys[k], found[k])
            pairs = pairs[len(chunk):]
            done += len(chunk)
            if progress is not None:
                progress(done / len(loaded), f"relevancy maps: {done} of {len(loaded)}")
    return [_relevancy_map(encoder, tower, item, objectives[k], found[k], first)  # type: ignore[arg-type]
            for k, item in enumerate(loaded)]


def _check_objectives(objectives: Sequence[str] | None, count: int) -> list[str]:
    """One known objective name per image (``custom`` for all when none are given)."""
    names = list(objectives or ["custom"] * count)
    if len(names) != count:
        raise InputError(f"{len(names)} objective names for {count} images")
    for name in names:
        if name not in _OBJECTIVES:
            raise InputError(f"unknown relevancy objective {name!r}; choose one of {', '.join(_OBJECTIVES)}")
    return names


def _relevancy_map(encoder: ClipEncoder, tower: Tower, item: LoadedImage, objective: str,
                   computed: tuple[np.ndarray, np.ndarray, float], first: int) -> RelevancyMap:
    """A computed (relevancy row, embedding, score) as the map of ``item`` on its patch grid."""
    row, embedding, score = computed
    grid_h, grid_w = tower.grid
    input_h, input_w = tower.input_size
    view = model_view(encoder.preprocess, item.size)
    return RelevancyMap(
        objective=objective,
        image_name=item.name,
        view=view,
        raw=row.reshape(grid_h, grid_w),
        score=score,
        embedding=embedding,
        model_input_size=(input_w, input_h),
        start_layer=first,
        num_layers=len(tower.attentions),
        readout=tower.readout_name,
        notes=[] if view.exact else [view.note],
    )


def _map_cache(encoder: ClipEncoder) -> LRUCache[tuple[np.ndarray, np.ndarray, float]] | None:
    """The encoder's cache of computed maps (CPU only: there a map never depends on its pass mates)."""
    if encoder.device.type != "cpu":
        return None
    cache = getattr(encoder, "_relevancy_cache", None)
    if cache is None:
        cache = encoder.__dict__.setdefault("_relevancy_cache", LRUCache(_MAP_CACHE_SIZE))
    return cache


def _pass_plan(images: Sequence[LoadedImage], per_pass: int, *, one_image: bool = False) -> list[list[int]]:
    """The (image, target) pairs grouped for passes: images with the same number of targets together.

    A pass runs one forward pass per distinct image and one backward pass per target round (every
    image's r-th target at once), so the backward work is one image row per map only when every
    image of the pass has the same number of targets; within a group, the pairs of one image stay
    together, and groups are cut to at most ``per_pass`` pairs. ``one_image``: a pass per image.
    """
    by_image: dict[str, list[int]] = {}
    for k, item in enumerate(images):
        by_image.setdefault(item.sha256, []).append(k)
    if one_image:
        return list(by_image.values())
    by_count: dict[int, list[int]] = {}
    for pairs in by_image.values():
        by_count.setdefault(len(pairs), []).extend(pairs)
    plan: list[list[int]] = []
    for count, pairs in by_count.items():
        size = max(count, per_pass - per_pass % count)
        plan += [pairs[i:i + size] for i in range(0, len(pairs), size)]
    return plan


def _default_batch_size(tower: Tower, budget_bytes: float = 512e6) -> int:
    """Images per pass so that the attention maps, their gradients and softmax copies stay near ``budget_bytes``."""
    per_image = 3 * len(tower.attentions) * tower.heads * tower.tokens * tower.tokens * 4
    return int(max(1, min(8, budget_bytes // per_image)))


def clip_t_relevancy(encoder: ClipEncoder, edited: ImageInput | LoadedImage, target_text_embedding: np.ndarray,
                     *, start_layer: int = 0) -> RelevancyMap:
    """CLIP-T style: which regions of the edit make it match the target text (t = E(T_trg))."""
    return relevancy(encoder, edited, target_text_embedding, objective="clip_t", start_layer=start_layer)


def augclip_relevancy(encoder: ClipEncoder, edited: ImageInput | LoadedImage, result: AugCLIPResult | np.ndarray,
                      *, start_layer: int = 0) -> RelevancyMap:
    """AugCLIP: which regions of the edit bring it toward the ideal edit t = E(I_src) + v.

    ``result`` is the edit's :class:`AugCLIPResult` (its ``ideal``) or the ideal vector itself.
    """
    ideal = result.ideal if isinstance(result, AugCLIPResult) else np.asarray(result)
    return relevancy(encoder, edited, ideal, objective="augclip", start_layer=start_layer)


def modification_relevancy(encoder: ClipEncoder, edited: ImageInput | LoadedImage,
                            result: AugCLIPResult | np.ndarray, *, start_layer: int = 0) -> RelevancyMap:
    """AugCLIP's modification: which regions of the edit carry v, the change from the source to the ideal edit
    (t = v). Undefined when v is zero (the source already lies on the target side of the hyperplane).

    ``result`` is the edit's :class:`AugCLIPResult` (its ``v``) or v itself.
    """
    v = result.v if isinstance(result, AugCLIPResult) else np.asarray(result)
    return relevancy(encoder, edited, v, objective="augclip_v", start_layer=start_layer)


def clip_dir_relevancy(
    encoder: ClipEncoder,
    source: ImageInput | LoadedImage,
    edited: ImageInput | LoadedImage,
    source_text_embedding: np.ndarray,
    target_text_embedding: np.ndarray,
    *,
    difference: str = "raw",
    start_layer: int = 0,
) -> ClipDirRelevancy:
    """CLIPdir (App. D.5): R(I_edit; dT) - R(I_src; dT) with dT = E(T_trg) - E(T_src), one batch."""
    direction = text_direction(source_text_embedding, target_text_embedding)
    src_map, edit_map = relevancy_batch(encoder, [source, edited], np.stack([direction, direction]),
                                        objectives=["clip_dir", "clip_dir"], start_layer=start_layer)
    return make_clip_dir(src_map, edit_map, direction, difference)


def text_direction(source_text_embedding: np.ndarray, target_text_embedding: np.ndarray) -> np.ndarray:
    """dT = E(T_trg) - E(T_src); a clear error when the two texts embed identically."""
    direction = np.asarray(target_text_embedding, dtype=np.float64) - np.asarray(source_text_embedding, dtype=np.float64)
    if not np.all(np.isfinite(direction)) or np.linalg.norm(direction) < 1e-9:
        raise InputError("the source and target texts have the same embedding, so the CLIPdir text direction "
                         "dT is zero; use a source text that differs from the target text")
    return direction.astype(np.float32)


def make_clip_dir(src_map: RelevancyMap, edit_map: RelevancyMap, direction: np.ndarray,
                  difference: str = "raw") -> ClipDirRelevancy:
    if difference not in CLIP_DIR_DIFFERENCES:
        raise InputError(f"CLIPdir difference must be one of {', '.join(CLIP_DIR_DIFFERENCES)}, got {difference!r}")
    image_dir = edit_map.embedding.astype(np.float64) - src_map.embedding.astype(np.float64)
    value = cosine(image_dir, np.asarray(direction, dtype=np.float64))  # 0 for an unchanged image, as CLIPdir
    return ClipDirRelevancy(source=src_map, edit=edit_map, difference_mode=difference, clip_dir=value)


def supports_relevancy(encoder: ClipEncoder) -> str | None:
    """None when relevancy maps can be computed for this encoder's model, else the reason they cannot."""
    try:
        tower_of(encoder.model, encoder.spec.raw)
    except ExplanationUnavailableError as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------------------------------- the pass
def _relevancy_pass(
    encoder: ClipEncoder, tower: Tower, pixels: torch.Tensor, targets: np.ndarray, owners: Sequence[int],
    start_layer: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maps for the pairs (pixels[owners[k]], targets[k]): one forward pass, one backward pass per target round.

    Round r takes the r-th pair of every image and differentiates the sum of their objectives: images
    do not interact in a ViT, so each image's attention gradients in that sum are its own
    objective's. The graph is kept between rounds (the forward pass is shared by an image's maps).
    """
    model = encoder.model
    device = encoder.device
    n_layers = len(tower.attentions)
    rounds: list[list[int]] = []
    seen: dict[int, int] = {}
    for k, owner in enumerate(owners):
        r = seen.get(owner, 0)
        seen[owner] = r + 1
        if r == len(rounds):
            rounds.append([])
        rounds[r].append(k)
    with encoder.inference_lock, instrumented(tower) as recorder, torch.inference_mode(False), torch.enable_grad():
        # The graph is rooted at a copy of the pixels (a normal tensor even if the caller is in
        # inference mode); parameters stay frozen and receive no gradient.
        x = pixels.to(device).clone().requires_grad_(True)
        target = torch.as_tensor(targets, dtype=torch.float32, device=device)
        with encoder.compute():
            features = model.encode_image(x)
        features = features.float()
        if features.ndim != 2:
            raise ExplanationUnavailableError(
                f"{encoder.spec.raw}: the image tower returns {tuple(features.shape)} instead of one embedding per "
                "image, so there is no single similarity to explain")
        owner_index = torch.as_tensor(list(owners), dtype=torch.long, device=device)
        scores = F.cosine_similarity(features[owner_index], target, dim=-1)
        blocks = recorder.block_probs
        if len(blocks) != n_layers or (tower.pooler is not None) != (recorder.pool_probs is not None):
            raise ExplanationUnavailableError(
                f"{encoder.spec.raw}: recorded {len(blocks)} attention maps for {n_layers} layers; this tower's "
                "attention does not run the way the relevancy recorder expects")
        tokens = blocks[0].shape[-1]
        if tokens != tower.tokens:
            raise ExplanationUnavailableError(
                f"{encoder.spec.raw}: {tokens} tokens for a {tower.grid[0]}x{tower.grid[1]} patch grid plus "
                f"{tower.prefix} prefix token(s); the tokens cannot be mapped back onto the image")
        wanted = blocks[start_layer:] + ([recorder.pool_probs] if recorder.pool_probs is not None else [])
        patches: list[torch.Tensor | None] = [None] * len(owners)
        for r, members in enumerate(rounds):
            grads = torch.autograd.grad(scores[members].sum(), wanted, allow_unused=True,
                                        retain_graph=r < len(rounds) - 1)
            rows = [owners[k] for k in members]
            with torch.no_grad():
                grads = [torch.zeros_like(t[rows]) if g is None else g[rows] for t, g in zip(wanted, grads)]
                block_grads = grads[: n_layers - start_layer]
                pool_cam = None
                if recorder.pool_probs is not None:
                    pool_cam = _positive_head_mean(recorder.pool_probs[rows], grads[-1])
                relevance = _propagate([b[rows] for b in blocks[start_layer:]], block_grads)
                row = readout_row(tower, relevance, pool_cam)
                for j, k in enumerate(members):
                    patches[k] = row[j, tower.prefix:]
        with torch.no_grad():
            embeddings = F.normalize(features.detach()[owner_index], dim=-1)
            stacked = torch.stack([p for p in patches if p is not None])
        return (stacked.cpu().numpy().astype(np.float64), embeddings.cpu().numpy().astype(np.float32),
                scores.detach().cpu().numpy().astype(np.float64))


def _positive_head_mean(probs: torch.Tensor, grads: torch.Tensor) -> torch.Tensor:
    """Abar = mean over heads of clamp(grad * A, min=0): (N, heads, Lq, Lk) -> (N, Lq, Lk)."""
    return (grads.float() * probs.detach().float()).clamp(min=0).mean(dim=1)


def _propagate(probs: list[torch.Tensor], grads: list[torch.Tensor]) -> torch.Tensor:
    """R = I; R <- R + Abar_l @ R over the given layers (Chefer et al. 2021, Eq. 6-7 for self-attention)."""
    n, _, tokens, _ = probs[0].shape
    relevance = torch.eye(tokens, dtype=torch.float32, device=probs[0].device).unsqueeze(0).repeat(n, 1, 1)
    for attn, grad in zip(probs, grads):
        relevance = relevance + torch.bmm(_positive_head_mean(attn, grad), relevance)
    return relevance


# ---------------------------------------------------------------------------------------- helpers
def _resolve_start_layer(start_layer: int, layers: int) -> int:
    if not isinstance(start_layer, (int, np.integer)) or not -layers <= int(start_layer) < layers:
        raise InputError(f"start_layer must be an integer in [{-layers}, {layers - 1}] for this {layers}-layer "
                         f"image tower, got {start_layer!r}")
    return int(start_layer) % layers


def is_usable_target(vector: np.ndarray) -> bool:
    """Whether ``vector`` can be a relevancy target: a cosine with it is defined (its norm is not zero)."""
    return bool(np.linalg.norm(np.asarray(vector, dtype=np.float32)) >= 1e-12)


def _check_targets(targets: np.ndarray, count: int) -> np.ndarray:
    array = np.asarray(targets, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[0] != count:
        raise InputError(f"expected {count} target vectors of shape (d,), got an array of shape {np.shape(targets)}")
    if not np.all(np.isfinite(array)):
        raise InputError("a relevancy target vector contains NaN or infinite values")
    if count and not all(is_usable_target(row) for row in array):
        raise InputError("a relevancy target vector is zero; the cosine similarity with it is undefined")
    return array


def _is_constant(values: np.ndarray) -> bool:
    values = np.asarray(values, dtype=np.float64)
    span = float(np.nanmax(values) - np.nanmin(values)) if values.size else 0.0
    return span <= 1e-12 * max(1.0, float(np.nanmax(np.abs(values))) if values.size else 1.0)


def normalize(values: np.ndarray) -> np.ndarray:
    """Min-max normalisation to [0, 1]; a constant map becomes all zeros (nothing stands out)."""
    values = np.asarray(values, dtype=np.float32)
    if values.size == 0 or _is_constant(values):
        return np.zeros_like(values)
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    return (values - low) / (high - low)


def _rounded(array: np.ndarray, digits: int) -> list[list[float]]:
    return np.round(np.asarray(array, dtype=np.float64), digits).tolist()

