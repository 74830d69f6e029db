"""What the app does, without the page: validate inputs, get attributes, evaluate, re-score.

Functions here take plain values (file paths, strings, options) and raise
:class:`~augclip_demo.errors.AugclipError` with a message for the user; the page turns those into
Gradio notifications. Per-browser-session state lives in :class:`Session`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...attributes.base import Attributes, Provenance
from ...config import DEFAULT_MAX_EDITS, Settings
from ...errors import InputError
from ...instructions import ParseOutcome
from ...io import LoadedImage, PixelBudget, open_image
from ...pipeline import FEATURE_METRICS, AugCLIPOptions, Evaluator, FeatureNetworks
from ...report import Report
from ..examples import known_object_masks
from ..shown import Newest
from ..status import first_result_work

_MAX_EDITS = DEFAULT_MAX_EDITS  # the default; Settings.max_edits (AUGCLIP_MAX_EDITS) is what counts

Progress = Callable[[float, str], None]


@dataclass
class Session:
    """State of one browser session (kept by gr.State, never shared between users)."""

    report: Report | None = None
    clip_model: str | None = None
    attributes_key: tuple | None = None  # the inputs the current attribute lists were extracted for
    extracted: Attributes | None = None  # what the provider returned, before any user edits
    output_dir: str | None = None
    figures: dict = field(default_factory=dict)
    # Where this result's figures are written: a folder per explanation, so a figure still being drawn
    # for an earlier result (a slow stage, a re-score meanwhile) never replaces the current one's file.
    figures_dir: str | None = None
    # The last explanations without their matplotlib figures (saved as PNGs): the geometry the
    # interactive hyperplane views reuse and the maps the comparison grid shows.
    explained: Any = None
    # The edit the page shows now (0-based): set by the explanation stage and by each pick, so a later
    # stage that finished for another edit leaves the page as the user set it.
    shown: int | None = None
    # Set when the last Evaluate stopped before scoring (a model without weights, named in the status
    # area): the later stages (explanations, BPM, downloads) then leave the page as it is.
    halted: str | None = None
    # The report the page's comparison grid was built from (tab opened, button). Only Evaluate and
    # re-score replace the report (BPM and the judge add to it), so `is session.report` says the grid
    # shows the current results: the end of the stages then rebuilds it with what they added.
    comparison_of: Report | None = None
    # Which of the page's results this state holds (its number from ``newest.show``), and the page's
    # numbering itself, shared by every copy of this state.
    result: int = 0
    newest: Newest = field(default_factory=Newest)


def lines(text: str | None) -> list[str]:
    """One attribute per line; blank lines and surrounding spaces dropped."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _check_upload(path: str | None, label: str, max_mb: float) -> str:
    if not path:
        raise InputError(f"{label}: no file uploaded")
    if not isinstance(path, str) or not os.path.isfile(path):
        raise InputError(f"{label}: the upload did not arrive as a file; upload it again")
    size = os.path.getsize(path)
    if size > max_mb * 1024 * 1024:
        raise InputError(f"{label} ({Path(path).name}) is {size / 2**20:.1f} MB; the limit is {max_mb:g} MB per image")
    return path


def _load_inputs(settings: Settings, source: str | None, edits: list[str] | None) -> tuple[LoadedImage, list[LoadedImage]]:
    if not source:
        raise InputError("Upload a source image first (left column).")
    edits = [e for e in (edits or []) if e]
    if not edits:
        raise InputError("Upload at least one edited image (you can select several files at once).")
    most = settings.max_edits
    if len(edits) > most:
        raise InputError(f"{len(edits)} edited images uploaded; the limit is {most}. Remove {len(edits) - most}.")
    limit, pixels, side = settings.max_upload_mb, settings.max_image_pixels, settings.max_image_side
    budget = PixelBudget(settings.max_request_pixels)  # shared by this request's images
    budget.check_files([source, *edits])  # from the headers, before anything is decoded
    src = open_image(_check_upload(source, "source image", limit), name="source: " + Path(source).name, max_pixels=pixels,
                     max_side=side, budget=budget)
    loaded = [open_image(_check_upload(path, f"edited image {i + 1}", limit), name=Path(path).name, max_pixels=pixels,
                         max_side=side, budget=budget)
              for i, path in enumerate(edits)]
    return src, loaded


def attributes_key(source: LoadedImage, target_text: str, source_text: str, provider: str, clip_model: str) -> tuple:
    return (source.sha256, target_text.strip(), (source_text or "").strip(), provider, clip_model)


def extract_attributes(evaluator: Evaluator, source: LoadedImage, target_text: str, source_text: str,
                       provider: str, progress: Progress | None = None) -> Attributes:
    if not (target_text or "").strip():
        raise InputError("Type the target text first: attributes are extracted from it.")
    if provider == "manual":
        raise InputError("Provider 'manual': type the attributes one per line, or load a JSON file.")
    return evaluator.resolve_attributes(provider, source, target_text.strip(), (source_text or "").strip() or None,
                                        progress=progress)


def _attributes_from_boxes(source_text_box: str, target_text_box: str, session: Session) -> Attributes | None:
    """The lists in the two text boxes, with provenance saying whether the user edited them."""
    src, tgt = lines(source_text_box), lines(target_text_box)
    if not src and not tgt:
        return None
    if session.extracted is not None:
        prov = Provenance.from_dict(session.extracted.provenance.to_dict())
        if (src, tgt) != (session.extracted.source, session.extracted.target):
            prov.extra["edited_by_user"] = True
            prov.fidelity += ", edited by the user"
    else:
        prov = Provenance(provider="manual", fidelity="typed by the user")
    return Attributes(src, tgt, prov)


def evaluate(
    settings: Settings,
    session: Session,
    *,
    source: str | None,
    edits: list[str] | None,
    target_text: str,
    source_text: str,
    provider: str,
    source_attrs_box: str,
    target_attrs_box: str,
    options: AugCLIPOptions,
    progress: Progress,
    ground_truth: str | None = None,
    edit_mask: str | None = None,
    output_caption: str = "",
    feature_metrics: Sequence[str] = (),
    networks: FeatureNetworks | None = None,
) -> tuple[Report, Session]:
    """Run a full evaluation; returns the report and the updated session.

    ``ground_truth`` / ``edit_mask`` (uploaded files), ``output_caption`` and ``feature_metrics`` (the
    network metrics the user switched on) add the reference and preservation columns; ``networks``: the networks
    they load (default: the benchmarks' own).

    What is in the attribute boxes is what gets scored. The provider extracts new lists only when
    the boxes are empty, or when they still hold, unedited, lists extracted for other inputs
    (another source image, target text, source text, provider or CLIP model).
    """
    # Report the first missing input in the page's order: source image, target text, edited images.
    if source and not (target_text or "").strip():
        raise InputError("The target text is empty: type the instruction or the description of the edit.")
    src, loaded = _load_inputs(settings, source, edits)
    progress(0.02, "loading models")
    evaluator = Evaluator(settings=settings, options=options, networks=networks)
    key = attributes_key(src, target_text, source_text, provider, settings.clip_model)
    boxes = _attributes_from_boxes(source_attrs_box, target_attrs_box, session)
    stale = (boxes is not None and session.extracted is not None and session.attributes_key != key
             and (boxes.source, boxes.target) == (session.extracted.source, session.extracted.target))
    extracting = boxes is None or (stale and provider != "manual")
    if not extracting:
        attributes: Attributes | Any = boxes
    elif provider == "manual":
        raise InputError("Provider 'manual': type the source and target attributes (one per line), or load a JSON file.")
    else:  # the evaluator extracts them: its progress then covers each step, its timing line the time taken
        attributes = evaluator.provider(provider)

    def staged(fraction: float, stage: str) -> None:
        progress(0.03 + 0.95 * fraction, stage)

    references: dict[str, Any] = {}
    if ground_truth:
        _check_upload(ground_truth, "ground-truth image", settings.max_upload_mb)
        references["ground_truth"] = open_image(ground_truth, name="ground truth", max_pixels=settings.max_image_pixels,
                                                  max_side=settings.max_image_side)
    if edit_mask:
        _check_upload(edit_mask, "edit mask", settings.max_upload_mb)
        references["edit_mask"] = open_image(edit_mask, name="edit mask", max_pixels=settings.max_image_pixels,
                                               max_side=settings.max_image_side)
    with first_result_work():
        report = evaluator.evaluate(src, loaded, target_text, source_text or None, attributes, options=options,
                                    progress=staged, output_caption=(output_caption or "").strip() or None,
                                    feature_metrics=[k for k in feature_metrics if k in FEATURE_METRICS],
                                    **references)
    if extracting:
        session = Session(**{**session.__dict__, "extracted": report.attributes, "attributes_key": key})
    output_dir = session.output_dir or tempfile.mkdtemp(prefix="augclip-app-")
    session = Session(**{**session.__dict__, "report": report, "clip_model": settings.clip_model,
                         "output_dir": output_dir, "figures": {}, "explained": None})
    return report, session


def rescore(settings: Settings, session: Session, options: AugCLIPOptions, source_attrs_box: str,
            target_attrs_box: str) -> tuple[Report, Session]:
    """Re-score the last evaluation with new options / edited attributes, reusing its embeddings."""
    if session.report is None:
        raise InputError("Nothing to re-score yet: press Evaluate first.")
    if session.clip_model != settings.clip_model:
        raise InputError("The CLIP model changed since the last evaluation: press Evaluate to encode with it.")
    attributes = _attributes_from_boxes(source_attrs_box, target_attrs_box, session)
    if attributes is None:
        raise InputError("Both attribute lists are empty: type at least one source and one target attribute.")
    report = Evaluator(settings=settings).rescore(session.report, options, attributes)
    return report, Session(**{**session.__dict__, "report": report, "figures": {}, "explained": None})


def extract(settings: Settings, session: Session, *, source: str | None, target_text: str, source_text: str,
            provider: str, progress: Progress | None = None) -> tuple[Attributes, Session]:
    """Extract attributes for the current inputs and remember, in ``session`` itself, which inputs they belong to
    (a copy put back on the page would undo what a stage running meanwhile wrote there)."""
    if not source:
        raise InputError("Upload a source image first: source attributes are read from it.")
    loaded = open_image(_check_upload(source, "source image", settings.max_upload_mb), max_pixels=settings.max_image_pixels,
                        max_side=settings.max_image_side)
    attrs = extract_attributes(Evaluator(settings=settings), loaded, target_text, source_text, provider, progress)
    key = attributes_key(loaded, target_text or "", source_text or "", provider, settings.clip_model)
    session.extracted, session.attributes_key = attrs, key
    return attrs, session


def save_attributes(session: Session, source_attrs_box: str, target_attrs_box: str) -> str:
    """Write the attribute boxes as attributes.json (the format every provider saves); returns the path."""
    attrs = _attributes_from_boxes(source_attrs_box, target_attrs_box, session)
    if attrs is None:
        raise InputError("Both attribute lists are empty: nothing to save.")
    folder = Path(session.output_dir or tempfile.mkdtemp(prefix="augclip-app-"))
    return str(attrs.save(folder / "attributes.json"))


BPM_FIELDS = ("o1", "o2", "size_state", "position_state", "reference")


def _parser_client(settings: Settings, parser: str, instruction: str) -> object | None:
    if parser != "llm" or not instruction:
        return None
    from ...llm import OpenAICompatibleClient

    return OpenAICompatibleClient(settings)


def parse_for_bpm(settings: Settings, instruction: str, parser: str = "rules") -> ParseOutcome:
    """The parse the BPM tab shows for the user to check and correct before BPM runs (never raises
    for an instruction it cannot parse: the outcome carries the reason and how to fill the fields)."""
    from ...instructions import try_parse

    instruction = (instruction or "").strip()
    if not instruction:
        return ParseOutcome(None, refusal="There is no editing instruction to parse: type one under the target "
                                          "text, or fill o1 / o2 and the states below and press Run BPM.")
    return try_parse(instruction, parser, client=_parser_client(settings, parser, instruction))


def fields_of(outcome: ParseOutcome) -> dict[str, str]:
    """The BPM tab's field values for a parse outcome (empty objects and 'unchanged' states when refused)."""
    parsed = outcome.parsed
    if parsed is None:
        return {"o1": "", "o2": "", "size_state": "unchanged", "position_state": "unchanged", "reference": ""}
    return {"o1": parsed.o1 or "None", "o2": parsed.o2 or "None", "size_state": parsed.size_state,
            "position_state": parsed.position_state, "reference": parsed.reference or ""}


def run_bpm(settings: Settings, session: Session, *, instruction: str, parser: str = "rules",
            fields: dict[str, str] | None = None, progress: Progress | None = None) -> tuple[Report, str]:
    """Add BPM to the session's report, or mark it unavailable with the reason; returns (report, message).

    ``fields`` (the BPM tab's o1 / o2 / size / position / reference, as shown after parsing and
    perhaps corrected by the user) are applied to the instruction's parse field by field; when the
    instruction cannot be parsed (or there is none) they are the parse.
    """
    from ...bpm import BPMOptions
    from ...bpm.models import bpm_models_status
    from ...errors import InstructionParseError, LLMError, WeightsUnavailableError
    from ...instructions import resolve_parse

    if session.report is None:
        raise InputError("Nothing to run BPM on yet: press Evaluate first.")
    if session.clip_model != settings.clip_model:  # BPM's semantic judge must use the report's CLIP
        raise InputError("The CLIP model changed since the last evaluation: press Evaluate to encode with it.")
    report = session.report
    evaluator = Evaluator(settings=settings)
    instruction = (instruction or "").strip()
    corrections = {k: (fields.get(k) or "").strip() for k in BPM_FIELDS} if fields else None
    named = bool(corrections) and any(corrections[k] not in ("", "None") for k in ("o1", "o2"))
    if not named:
        corrections = None  # empty fields: BPM uses the instruction's parse as it is
    if not instruction and not named:
        message = ("BPM needs an editing instruction (type one under the target text) or the objects o1 / o2 "
                   "(fill them in the BPM tab)")
        return evaluator.skip_bpm(report, message), message
    known = known_object_masks(report.arrays.source.sha256, [e.sha256 for e in report.arrays.edits]) \
        if report.arrays is not None else None
    available, reason = bpm_models_status(settings)
    if known is None and not available:  # given masks need no detector and no segmenter
        message = f"BPM is unavailable: {reason}"
        return evaluator.skip_bpm(report, message), message
    try:
        parsed = resolve_parse(instruction or None, corrections, parser,
                               client=_parser_client(settings, parser, instruction))
        if known is not None:  # a shipped world example: its regions are known exactly (the report notes it)
            evaluator.add_bpm(report, None, parsed, progress=progress, options=BPMOptions(regions="masks"),
                              object_masks=known)
        else:
            evaluator.add_bpm(report, None, parsed, progress=progress)
    except (InstructionParseError, LLMError, WeightsUnavailableError) as exc:
        message = f"BPM not computed: {exc}"
        return evaluator.skip_bpm(report, message), message
    return report, ""


def explain(settings: Settings, session: Session, progress: Progress | None = None, *,
            edit: int | None = None) -> tuple[dict[str, str], str, Session]:
    """The page's explanation stage; returns (stem -> PNG path of the figures drawn, notes, session).

    The first full result: the AugCLIP relevancy maps of ``edit`` (default: the edit AugCLIP prefers,
    the one the page selects), drawn, with every edit's rankings and the exact hyperplane view. The
    shown edit's CLIP-T and CLIPdir maps follow from :func:`shown_maps`, the other edits' maps and
    the UMAP view (numba compiles it at start-up) from :func:`explain_rest`; an edit picked before
    then gets its maps from :func:`edit_maps`; every other figure is drawn by :func:`figure_files`
    when shown or downloaded.
    """
    from ...explain import explain_report
    from ...explain.explanations import figure_stems
    from ...inference import get_encoder

    if session.report is None:
        raise InputError("Nothing to explain yet: press Evaluate first.")
    encoder = get_encoder(settings)
    say = progress or (lambda fraction, stage: None)
    pick = selected_edit(session.report) if edit is None else edit
    with first_result_work():  # the maps and their drawing: UMAP's start-up compile waits for both
        explanations = explain_report(session.report, encoder, umap=False, figures=False, relevancy_edits=(pick,),
                                      relevancy_maps=("augclip",),
                                      progress=lambda fraction, stage: say(0.9 * fraction, f"explaining: {stage}"))
        notes = sorted(set(explanations.unavailable.values())
                       | {reason for item in explanations.edits for reason in item.unavailable.values()})
        root = Path(session.output_dir or tempfile.mkdtemp(prefix="augclip-app-")) / "figures"
        if session.figures_dir:  # the previous result's figures: the page no longer shows them
            shutil.rmtree(session.figures_dir, ignore_errors=True)
        session = Session(**{**session.__dict__, "figures": {}, "explained": explanations,
                             "figures_dir": str(root / uuid.uuid4().hex[:12]), "shown": pick})
        say(0.9, "explaining: drawing the AugCLIP relevancy maps")
        figures = figure_files(session, [stem for stem in figure_stems(explanations, pick) if "_relevancy_" in stem])
    return figures, "; ".join(notes), session


def shown_maps(settings: Settings, session: Session, edit: int | None = None) -> dict[str, str]:
    """The shown edit's other relevancy maps (CLIP-T, CLIPdir) after the first result, drawn: stem -> PNG path."""
    from ...explain.explanations import figure_stems

    if session.report is None or session.explained is None:
        return {}
    pick = selected_edit(session.report) if edit is None else edit
    with first_result_work():  # the shown edit's maps and their drawing: UMAP's start-up compile waits
        edit_maps(settings, session, pick)
        return figure_files(session, [stem for stem in figure_stems(session.explained, pick) if "_relevancy_" in stem])


def selected_edit(report: Report) -> int:
    """The edit the page shows first: the one AugCLIP prefers."""
    return report.best("augclip") or 0


def explain_rest(settings: Settings, session: Session, *, figures: bool = True) -> Session:
    """What follows the first result: every relevancy map not computed yet, the UMAP view and
    (``figures``) every figure not drawn yet."""
    from ...explain import umap_view

    explained = session.explained
    if session.report is None or explained is None:
        return session
    edit_maps(settings, session)
    if explained.umap is None and "umap" not in explained.unavailable:  # the first stage left it out
        start = time.perf_counter()
        options = explained.options
        try:
            explained.umap = umap_view(session.report, n_neighbors=options.umap_neighbors,
                                       min_dist=options.umap_min_dist, seed=options.umap_seed)
        except ImportError as exc:
            explained.unavailable["umap"] = (f"umap-learn is not installed ({exc}); install the packages in "
                                             "requirements.txt")
        explained.timings["umap_view"] = time.perf_counter() - start
    if figures:
        figure_files(session)
    return session


def edit_maps(settings: Settings, session: Session, edit: int | None = None) -> None:
    """Compute the relevancy maps the first result left for later: ``edit``'s (0-based) or every edit's."""
    from ...explain import complete_relevancy
    from ...inference import get_encoder

    if session.report is None or session.explained is None:
        return
    options = session.explained.options
    if options.relevancy_edits is None and options.relevancy_maps is None:  # all computed
        return
    encoder = get_encoder(settings)
    if edit is None:
        complete_relevancy(session.report, encoder, session.explained)
        return
    with first_result_work():  # an edit the user looks at: UMAP's start-up compile waits for it
        complete_relevancy(session.report, encoder, session.explained, [edit])


def figure_files(session: Session, stems: Sequence[str] | None = None) -> dict[str, str]:
    """PNG paths of the session's figures ``stems`` (default: every one there is data for), each drawn
    and saved the first time it is asked for; ``session.figures`` keeps them (stem -> path)."""
    from ...explain.explanations import figure_stems, make_figure
    from ...explain.figures import save_figure

    explained = session.explained
    if session.report is None or explained is None:
        return {}
    available = figure_stems(explained)  # e.g. no CLIPdir map without a source text
    wanted = available if stems is None else [stem for stem in stems if stem in available]
    folder = Path(session.figures_dir or Path(session.output_dir or tempfile.mkdtemp(prefix="augclip-app-")) / "figures")
    for stem in wanted:
        if stem in session.figures:
            continue
        figure = make_figure(session.report, explained, stem)
        # Written under a temporary name and renamed: two events drawing the same figure at once
        # (the next stage, a click on another edit) never leave a half-written PNG.
        partial = save_figure(figure, folder / f".{stem}.{os.getpid()}.{threading.get_ident()}.png")
        path = folder / f"{stem}.png"
        os.replace(partial, path)
        session.figures[stem] = str(path)
    return {stem: session.figures[stem] for stem in wanted if stem in session.figures}


def comparison(session: Session) -> tuple[str, str]:
    """The comparison grid of the session's report: (HTML fragment for the page, path of the HTML file)."""
    from ...explain.grid_pictures import comparison_grid
    from ...report.comparison import grid_html

    if session.report is None:
        raise InputError("Nothing to compare yet: press Evaluate first.")
    explained = session.explained
    grid = comparison_grid(session.report, explained)
    folder = Path(session.output_dir or tempfile.mkdtemp(prefix="augclip-app-"))
    path = grid.save(folder / "comparison.html")
    return grid_html(grid, standalone=False), str(path)


def judge_ready(settings: Settings) -> tuple[bool, str]:
    """Whether the operator configured an endpoint for the MLLM judge, and a line saying which (no secrets)."""
    from ...llm.client import endpoint_status

    status = endpoint_status(settings.judge_base_url)
    model = settings.judge_model or settings.mllm_model
    return status.configured, (f"judge model {model} at {status.base_url}" if status.configured else status.reason)


def run_judge(settings: Settings, session: Session, *, instruction: str) -> Report:
    """Add the MLLM judge's rows to the session's report (every failure becomes the rows' reason)."""
    if session.report is None:
        raise InputError("Nothing to judge yet: press Evaluate first.")
    return Evaluator(settings=settings).add_judge(session.report, instruction=(instruction or "").strip() or None)
