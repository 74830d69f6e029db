"""Every explanation of a :class:`Report` in one call: relevancy maps, hyperplane views, ranking charts.

    from augclip_demo.explain import explain_report
    report = evaluator.evaluate(...)
    explanations = explain_report(report, evaluator.encoder)
    explanations.edits[0].figures["relevancy_augclip"]     # matplotlib Figure
    explanations.exact.panels[0].x                          # coordinates behind the exact view
    explanations.save("out/")                               # PNGs + explanations.json

Data flows one way: the report's in-memory arrays (embeddings, images, AugCLIP fits) in, numpy
arrays, dataclasses and figures out. Nothing here changes the report or the model.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..report import edit_names, edit_tag, model_caveat
from .hyperplane import UMAP_DEFAULTS, ExactView, UmapView, exact_view, umap_view
from .rankings import EditRankings, edit_rankings
from .relevancy import (
    CLIP_DIR_DIFFERENCES,
    ClipDirRelevancy,
    RelevancyMap,
    is_usable_target,
    make_clip_dir,
    relevancy_batch,
    supports_relevancy,
    text_direction,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..inference.clip_encoder import ClipEncoder
    from ..report import Report

#: The relevancy maps of an edit (EditExplanation fields): AugCLIP's, CLIP-T's and the CLIPdir pair.
_EDIT_MAPS = ("augclip", "clip_t", "clip_dir")
#: Why an edit has no modification map: AugCLIP's v is zero when the source already lies on the target side.
_NO_MODIFICATION = ("AugCLIP's modification v is zero for this edit (the source already lies on the target side of "
                   "the hyperplane, so the ideal edit is the source itself): there is no map along v")
_EMBEDS_DIFFERENTLY = "the relevancy pass embeds this edit slightly differently from the report"
NO_SOURCE_TEXT = "no source text given: the CLIPdir map needs dT = E(T_trg) - E(T_src)"
_AUGCLIP_MAP_CAPTION = (
    "Relevancy (Chefer et al. 2021) of cs(E(I_edit), E(I_src)+v): regions of the edit that make it resemble the "
    "ideal edit AugCLIP estimates. New in this tool (the paper says no relevancy map exists for AugCLIP): the "
    "ideal point is a vector in CLIP space, so the gradient relevancy of an image-vector similarity applies. "
    "{layers}"
)
_AUGCLIP_MAPS_CAPTION = (
    "Left: relevancy (Chefer et al. 2021) of cs(E(I_edit), E(I_src)+v), the AugCLIP score: regions of the edit that "
    "make it resemble the ideal edit AugCLIP estimates. Right: relevancy of cs(E(I_edit), v): regions of the edit "
    "that carry v, the modification from the source to the ideal edit. New in this tool (the paper says no "
    "relevancy map exists for AugCLIP): both targets are vectors in CLIP space, so the gradient relevancy of an "
    "image-vector similarity applies. {layers}"
)
_CLIP_T_MAP_CAPTION = ("Relevancy (Chefer et al. 2021) of cs(E(I_edit), E(T_trg)), the CLIP-T similarity: regions of "
                      "the edit that make it match the target text. {layers}")
_CLIP_DIR_MAP_CAPTION = (
    "App. D.5: R(dI; dT) = R(I_edit; dT) - R(I_src; dT), with R(I; dT) the relevancy of cs(E(I), dT) and "
    "dT = E(T_trg) - E(T_src). Red: regions that carry more of the text direction in the edit than in the source; "
    "blue: less. The paper shows CLIPdir often attends to regions the edit did not change. {layers} "
    "{mode}"
)
_CLIP_DIR_MODE_TEXT = {
    "raw": "The two maps are subtracted as computed (App. D.5), then scaled by one factor to fit [-1, 1].",
    "normalized": "Each map was min-max normalised to [0, 1] before subtracting (an option; App. D.5 subtracts "
                  "the maps as computed).",
}


@dataclass
class ExplainOptions:
    """What to compute and how (see the README's "Explanations" and "Method notes")."""

    relevancy: bool = True
    exact: bool = True
    umap: bool = True
    rankings: bool = True
    figures: bool = True
    start_layer: int = 0  # first attention layer in the relevancy propagation (0: all layers, -1: last only)
    clip_dir_difference: str = "raw"  # App. D.5: subtract the relevance as computed ("raw") or min-max maps ("normalized")
    top_k: int = 8  # ranking charts: show the top_k and bottom_k entries of long lists
    umap_neighbors: int = UMAP_DEFAULTS["n_neighbors"]
    umap_min_dist: float = UMAP_DEFAULTS["min_dist"]
    umap_seed: int = UMAP_DEFAULTS["seed"]
    batch_size: int | None = None  # (image, target) pairs per relevancy pass; set, it turns off the CPU map cache (relevancy_batch)
    relevancy_edits: tuple[int, ...] | None = None  # 0-based edits to compute maps for (None: all); e.g. the selected one
    # which maps of those edits (None: all of _EDIT_MAPS); e.g. ("augclip",) for a first result, the rest later
    relevancy_maps: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.clip_dir_difference not in CLIP_DIR_DIFFERENCES:
            raise InputError(f"clip_dir_difference must be one of {', '.join(CLIP_DIR_DIFFERENCES)}, "
                             f"got {self.clip_dir_difference!r}")
        if self.top_k < 1:
            raise InputError(f"top_k must be at least 1, got {self.top_k}")
        if self.umap_neighbors < 2:
            raise InputError(f"umap_neighbors must be at least 2, got {self.umap_neighbors}")
        if self.relevancy_edits is not None:
            self.relevancy_edits = tuple(int(i) for i in self.relevancy_edits)
        if self.relevancy_maps is not None:
            self.relevancy_maps = tuple(self.relevancy_maps)
            unknown = sorted(set(self.relevancy_maps) - set(_EDIT_MAPS))
            if unknown:
                raise InputError(f"relevancy_maps {unknown} unknown; choose from {', '.join(_EDIT_MAPS)} (the map "
                                 "along AugCLIP's modification v comes with augclip)")


@dataclass
class EditExplanation:
    index: int
    name: str
    augclip: RelevancyMap | None = None  # t = E(I_src) + v on the edit
    augclip_v: RelevancyMap | None = None  # t = v on the edit (computed with augclip; None when v is zero)
    clip_t: RelevancyMap | None = None  # t = E(T_trg) on the edit
    clip_dir: ClipDirRelevancy | None = None  # R(I_edit; dT) - R(I_src; dT)
    rankings: EditRankings | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Figure] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"edit": self.index + 1, "name": self.name}
        relevancy: dict[str, Any] = {}
        if self.augclip is not None:
            relevancy["augclip"] = self.augclip.to_dict()
        if self.augclip_v is not None:
            relevancy["augclip_v"] = self.augclip_v.to_dict()
        if self.clip_t is not None:
            relevancy["clip_t"] = self.clip_t.to_dict()
        if self.clip_dir is not None:
            relevancy["clip_dir"] = self.clip_dir.to_dict()
        out["relevancy"] = relevancy
        if self.rankings is not None:
            out["rankings"] = self.rankings.to_dict()
        out["unavailable"] = dict(self.unavailable)
        out["notes"] = list(self.notes)
        return out


@dataclass
class ReportExplanations:
    edits: list[EditExplanation]
    exact: ExactView | None
    umap: UmapView | None
    untrained: bool
    model: dict[str, Any]
    options: ExplainOptions
    verdict: str = ""
    unavailable: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict, repr=False)  # hyperplane_exact, hyperplane_umap

    def all_figures(self) -> dict[str, Figure]:
        """Every figure under the file stem it is saved as (e.g. ``E1_relevancy_augclip``: the edit's tag,
        as every view and download numbers it)."""
        out = dict(self.figures)
        for edit in self.edits:
            for key, fig in edit.figures.items():
                out[f"{edit_tag(edit.index)}_{key}"] = fig
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model": self.model,
            "untrained": self.untrained,
            "options": asdict(self.options),
            "verdict": self.verdict,
            "edits": [edit.to_dict() for edit in self.edits],
            "hyperplane_exact": self.exact.to_dict() if self.exact is not None else None,
            "hyperplane_umap": self.umap.to_dict() if self.umap is not None else None,
            "unavailable": dict(self.unavailable),
            "timings": dict(self.timings),
        }
        caveat = model_caveat(self.untrained, self.model)
        if caveat:
            data = {"warning": caveat, **data}
        return _json_safe(data)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    def save(self, out_dir: str | Path, dpi: int = 110, formats: tuple[str, ...] = ("png",)) -> list[Path]:
        """Write every figure as ``<stem>.png`` (and ``.svg`` when asked) and the numbers as
        ``explanations.json``; returns the paths."""
        from .figures import save_figure

        folder = Path(out_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the output folder {folder}: {exc.strerror or exc}") from None
        unknown = sorted(set(formats) - {"png", "svg", "pdf"})
        if unknown:
            raise InputError(f"figure format(s) {', '.join(unknown)} not supported; use png, svg or pdf")
        written = [save_figure(fig, folder / f"{stem}.{fmt}", dpi=dpi) for stem, fig in self.all_figures().items()
                   for fmt in formats]
        json_path = folder / "explanations.json"
        json_path.write_text(self.to_json() + "\n", encoding="utf-8")
        return written + [json_path]


def explain_report(report: Report, encoder: ClipEncoder | None = None, options: ExplainOptions | None = None,
                   *, progress: Callable[[float, str], None] | None = None, **overrides: Any) -> ReportExplanations:
    """All explanations of ``report`` (from :meth:`Evaluator.evaluate`); ``encoder`` runs the relevancy maps.

    ``progress(fraction, message)`` hears of every step: each batch of relevancy maps, the rankings,
    the two hyperplane views and each edit's figures.

    ``overrides`` are :class:`ExplainOptions` fields. Parts that cannot be computed (no encoder, a
    backbone without a ViT tower, no source text for CLIPdir) are listed in ``unavailable`` with the
    reason; the rest is still computed.
    """
    options = options or ExplainOptions()
    if overrides:
        unknown = sorted(set(overrides) - set(ExplainOptions.__dataclass_fields__))
        if unknown:
            raise InputError(f"unknown explanation option(s) {', '.join(unknown)}; "
                             f"known: {', '.join(ExplainOptions.__dataclass_fields__)}")
        options = ExplainOptions(**{**asdict(options), **overrides})
    arrays = getattr(report, "arrays", None)
    if arrays is None or not getattr(arrays, "augclip", None):
        raise InputError("this report has no in-memory embeddings and images (loaded from JSON?); explanations "
                         "need the report returned by Evaluator.evaluate")
    untrained = bool(report.untrained)
    timings: dict[str, float] = {}
    unavailable: dict[str, str] = {}
    edits = [EditExplanation(index=i, name=e.name) for i, e in enumerate(report.edits)]
    total = time.perf_counter()
    say = progress or (lambda fraction, message: None)

    def within(low: float, high: float) -> Callable[[float, str], None]:
        return lambda fraction, message: say(low + (high - low) * fraction, message)

    if options.relevancy:
        reason = _relevancy_blocker(report, encoder)
        if reason:
            unavailable["relevancy"] = reason
        else:
            assert encoder is not None
            start = time.perf_counter()
            say(0.0, "relevancy maps")
            _add_relevancy(report, encoder, edits, options, within(0.0, 0.55))
            timings["relevancy"] = time.perf_counter() - start
            timings["relevancy_per_image"] = timings["relevancy"] / max(1, _relevancy_image_count(report, options))
    if options.rankings:
        start = time.perf_counter()
        say(0.55, "attribute rankings")
        for edit in edits:
            edit.rankings = edit_rankings(report, edit.index, top_k=options.top_k)
        timings["rankings"] = time.perf_counter() - start
    exact = umap = None
    if options.exact:
        start = time.perf_counter()
        say(0.57, "exact hyperplane view")
        exact = exact_view(report)
        timings["exact_view"] = time.perf_counter() - start
    if options.umap:
        start = time.perf_counter()
        say(0.6, "UMAP view")
        try:
            umap = umap_view(report, n_neighbors=options.umap_neighbors, min_dist=options.umap_min_dist,
                             seed=options.umap_seed)
        except ImportError as exc:
            unavailable["umap"] = f"umap-learn is not installed ({exc}); install the packages in requirements.txt"
        timings["umap_view"] = time.perf_counter() - start

    result = ReportExplanations(edits=edits, exact=exact, umap=umap, untrained=untrained, model=dict(report.model),
                                options=options, verdict=report.verdict(), unavailable=unavailable, timings=timings)
    if options.figures:
        start = time.perf_counter()
        _add_figures(report, result, within(0.7, 1.0))
        timings["figures"] = time.perf_counter() - start
    timings["total"] = time.perf_counter() - total
    return result


_COMPLETING = threading.Lock()


def complete_relevancy(report: Report, encoder: ClipEncoder, result: ReportExplanations,
                       edits: Iterable[int] | None = None,
                       progress: Callable[[float, str], None] | None = None) -> list[int]:
    """Add the relevancy maps ``result`` left out (``relevancy_edits`` / ``relevancy_maps``) for ``edits``
    (default: every edit); returns the 0-based edits that got maps now.

    The app computes the shown edit's AugCLIP maps for its first result and the other maps after it.
    They equal the maps of one call (on CPU each image has its own pass and a map depends on its
    image and target alone; see relevancy_batch). One edit at a time, so a click on another edit
    waits for at most one edit's maps.
    """
    if not result.options.relevancy or "relevancy" in result.unavailable:
        return []
    wanted = range(len(report.edits)) if edits is None else sorted(set(edits))
    computed: list[int] = []
    for index in wanted:
        with _COMPLETING:
            if not _missing_maps(report, result.edits[index]):
                continue
            start = time.perf_counter()
            _add_relevancy(report, encoder, result.edits,
                           replace(result.options, relevancy_edits=(index,), relevancy_maps=None), progress)
            result.timings["relevancy"] = result.timings.get("relevancy", 0.0) + time.perf_counter() - start
            computed.append(index)
    with _COMPLETING:
        if not any(_missing_maps(report, edit) for edit in result.edits):
            result.options = replace(result.options, relevancy_edits=None, relevancy_maps=None)
    return computed


def _missing_maps(report: Report, edit: EditExplanation) -> list[str]:
    """The maps of ``edit`` not computed yet (CLIPdir's only when the report has a source text)."""
    return [name for name in _EDIT_MAPS if getattr(edit, name) is None
            and (name != "clip_dir" or report.arrays.source_text_embedding is not None)]


# ---------------------------------------------------------------------------------------- relevancy
def _relevancy_blocker(report: Report, encoder: ClipEncoder | None) -> str | None:
    if encoder is None:
        return "no encoder given: pass the ClipEncoder that produced the report to compute relevancy maps"
    spec = report.model.get("spec")
    if spec and spec != encoder.spec.raw:
        raise InputError(f"the report was computed with {spec} but the encoder is {encoder.spec.raw}; relevancy "
                         "maps must use the model that produced the embeddings")
    return supports_relevancy(encoder)


def _relevancy_image_count(report: Report, options: ExplainOptions) -> int:
    """The (image, target) pairs a relevancy pass computes: one per map, the source's CLIPdir map once."""
    wanted = range(len(report.edits)) if options.relevancy_edits is None else set(options.relevancy_edits)
    edits = len(wanted)
    kinds = set(options.relevancy_maps or _EDIT_MAPS) - (set() if report.source_text else {"clip_dir"})
    along_v = sum(is_usable_target(report.arrays.augclip[i].v) for i in wanted) if "augclip" in kinds else 0
    return len(kinds) * edits + along_v + (1 if "clip_dir" in kinds else 0)


def _add_relevancy(report: Report, encoder: ClipEncoder, edits: list[EditExplanation], options: ExplainOptions,
                   progress: Callable[[float, str], None] | None = None) -> None:
    arrays = report.arrays
    images: list[Any] = []
    targets: list[np.ndarray] = []
    objectives: list[str] = []
    slots: list[tuple[int | None, str]] = []  # (edit index or None for the source, objective)
    wanted = set(range(len(arrays.edits))) if options.relevancy_edits is None else set(options.relevancy_edits)
    unknown = sorted(wanted - set(range(len(arrays.edits))))
    if unknown:
        raise InputError(f"relevancy_edits {unknown} out of range: the report has {len(arrays.edits)} edit(s), 0-based")
    kinds = set(options.relevancy_maps or _EDIT_MAPS)
    direction = None
    if arrays.source_text_embedding is not None:
        direction = text_direction(arrays.source_text_embedding, arrays.target_text_embedding)
    for i, (item, res) in enumerate(zip(arrays.edits, arrays.augclip)):
        if i not in wanted:
            continue
        edit = edits[i]
        # maps an edit already has are kept (complete_relevancy adds the missing ones)
        if "augclip" in kinds and edit.augclip is None:  # the map along v comes with the map toward the ideal
            if is_usable_target(res.v):
                images.append(item)
                targets.append(np.asarray(res.v, dtype=np.float32))
                objectives.append("augclip_v")
                slots.append((i, "augclip_v"))
            else:
                edit.unavailable["augclip_v_relevancy"] = _NO_MODIFICATION
        for name, target in (("augclip", np.asarray(res.ideal, dtype=np.float32)),
                             ("clip_t", arrays.target_text_embedding), ("clip_dir", direction)):
            if name in kinds and target is not None and getattr(edit, name) is None:
                images.append(item)
                targets.append(target)
                objectives.append(name)
                slots.append((i, name))
    if direction is not None and any(name == "clip_dir" for _, name in slots):
        images.insert(0, arrays.source)  # the source's map, subtracted from each edit's
        targets.insert(0, direction)
        objectives.insert(0, "clip_dir")
        slots.insert(0, (None, "clip_dir"))
    maps = relevancy_batch(encoder, images, np.stack(targets), objectives=objectives, start_layer=options.start_layer,
                           batch_size=options.batch_size, progress=progress) if images else []
    source_dir = None
    for (edit_index, objective), rel in zip(slots, maps):
        if edit_index is None:
            source_dir = rel
            continue
        edit = edits[edit_index]
        if objective == "augclip":
            edit.augclip = rel
        elif objective == "augclip_v":
            edit.augclip_v = rel
        elif objective == "clip_t":
            edit.clip_t = rel
        else:
            assert source_dir is not None and direction is not None
            edit.clip_dir = make_clip_dir(source_dir, rel, direction, options.clip_dir_difference)
    for edit in edits:
        if edit.index not in wanted:
            continue
        if direction is None:  # said at once, also when CLIPdir's maps are left for later
            edit.unavailable["clip_dir_relevancy"] = NO_SOURCE_TEXT
        rel = edit.augclip or edit.clip_t
        if rel is not None and not any(note.startswith(_EMBEDS_DIFFERENTLY) for note in edit.notes):
            agreement = float(np.dot(rel.embedding, arrays.edit_embeddings[edit.index]))
            if agreement < 0.999:  # fp16 autocast moves cosines by ~1e-3; more means another model or input
                edit.notes.append(f"{_EMBEDS_DIFFERENTLY} (cosine {agreement:.4f})")


def _layers_text(rel: RelevancyMap) -> str:
    used = rel.num_layers - rel.start_layer
    which = f"all {rel.num_layers} attention layers" if used == rel.num_layers else f"the last {used} of {rel.num_layers} layers"
    return f"Propagated through {which}, read out at the {rel.readout}."


# ---------------------------------------------------------------------------------------- figures
def figure_stems(result: ReportExplanations, edit: int | None = None) -> list[str]:
    """The file stems of the figures ``result`` has data for (all, or those of one 0-based ``edit``):
    ``E1_relevancy_augclip`` ... ``E1_alpha`` per edit, then ``hyperplane_exact`` and ``hyperplane_umap``.
    :func:`make_figure` draws any of them; the app draws each only when it is shown or downloaded."""
    stems: list[str] = []
    for item in result.edits:
        if edit is not None and item.index != edit:
            continue
        tag = edit_tag(item.index)
        stems += [f"{tag}_{key}" for key, part in (("relevancy_augclip", item.augclip),
                                                   ("relevancy_clip_dir", item.clip_dir),
                                                   ("relevancy_clip_t", item.clip_t)) if part is not None]
        if item.rankings is not None:
            stems += [f"{tag}_source_changes", f"{tag}_target_changes"]
            if item.rankings.alpha_source is not None and item.rankings.alpha_target is not None:
                stems.append(f"{tag}_alpha")
    if edit is None:
        stems += [stem for stem, view in (("hyperplane_exact", result.exact), ("hyperplane_umap", result.umap))
                  if view is not None]
    return stems


def make_figure(report: Report, result: ReportExplanations, stem: str) -> Figure:
    """The matplotlib figure saved as ``<stem>.png`` (one of :func:`figure_stems`)."""
    from .figures import (
        alpha_figure,
        augclip_figure,
        clip_dir_figure,
        exact_view_figure,
        ranking_figure,
        relevancy_figure,
        umap_view_figure,
    )

    if stem == "hyperplane_exact" and result.exact is not None:
        return exact_view_figure(result.exact)
    if stem == "hyperplane_umap" and result.umap is not None:
        return umap_view_figure(result.umap)
    tags = {edit_tag(item.index): item for item in result.edits}
    tag, _, key = stem.partition("_")
    edit = tags.get(tag)
    if edit is None:
        raise InputError(f"no figure named {stem!r}; known: {', '.join(figure_stems(result))}")
    arrays = report.arrays
    image = arrays.edits[edit.index].image
    label = edit_names([item.name for item in report.edits])[edit.index].label
    untrained = result.untrained
    if key == "relevancy_augclip" and edit.augclip is not None and edit.augclip_v is not None:
        return augclip_figure(
            image, edit.augclip, edit.augclip_v, title=f"AugCLIP relevancy: {label}",
            caption=_AUGCLIP_MAPS_CAPTION.format(layers=_layers_text(edit.augclip)), untrained=untrained)
    if key == "relevancy_augclip" and edit.augclip is not None:
        return relevancy_figure(
            image, edit.augclip, title=f"AugCLIP relevancy: {label} toward the ideal edit",
            caption=_AUGCLIP_MAP_CAPTION.format(layers=_layers_text(edit.augclip)), untrained=untrained,
            subtitle=f"cs(E(I_edit), E(I_src)+v) = {edit.augclip.score:+.3f}  (the AugCLIP score)")
    if key == "relevancy_clip_dir" and edit.clip_dir is not None:
        return clip_dir_figure(
            arrays.source.image, image, edit.clip_dir, title=f"CLIPdir relevancy: {label}",
            caption=_CLIP_DIR_MAP_CAPTION.format(layers=_layers_text(edit.clip_dir.edit),
                                                mode=_CLIP_DIR_MODE_TEXT[edit.clip_dir.difference_mode]),
            untrained=untrained)
    if key == "relevancy_clip_t" and edit.clip_t is not None:
        return relevancy_figure(
            image, edit.clip_t, title=f"CLIP-T relevancy: {label} toward the target text",
            caption=_CLIP_T_MAP_CAPTION.format(layers=_layers_text(edit.clip_t)), untrained=untrained,
            subtitle=f"cs(E(I_edit), E(T_trg)) = {edit.clip_t.score:+.3f}  (CLIP-T)")
    rankings = edit.rankings
    if rankings is not None and key in ("source_changes", "target_changes"):
        return ranking_figure(rankings.source if key == "source_changes" else rankings.target)
    if (rankings is not None and key == "alpha" and rankings.alpha_source is not None
            and rankings.alpha_target is not None):
        return alpha_figure(rankings.alpha_source, rankings.alpha_target)
    raise InputError(f"no figure named {stem!r}; known: {', '.join(figure_stems(result))}")


def _add_figures(report: Report, result: ReportExplanations,
                 progress: Callable[[float, str], None] | None = None) -> None:
    names = edit_names([edit.name for edit in report.edits])
    say = progress or (lambda fraction, message: None)
    for done, edit in enumerate(result.edits):
        say(done / (len(result.edits) + 1), f"figures of {names[edit.index].tag} ({done + 1} of {len(result.edits)})")
        prefix = f"{edit_tag(edit.index)}_"
        for stem in figure_stems(result, edit.index):
            edit.figures[stem[len(prefix):]] = make_figure(report, result, stem)
    say(len(result.edits) / (len(result.edits) + 1), "figures of the hyperplane views")
    for stem in ("hyperplane_exact", "hyperplane_umap"):
        if stem in figure_stems(result):
            result.figures[stem] = make_figure(report, result, stem)


def _json_safe(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


__all__ = ["EditExplanation", "ExplainOptions", "ReportExplanations", "complete_relevancy", "explain_report"]
