"""The evaluation report: plain dataclasses that serialise to JSON (round trip) and CSV."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ..attributes.base import Attributes
from ..inference.specs import shipped_note
from ..io import spreadsheet_row
from ..metrics.suite import METRICS, best_index, shown_metric_keys

UNTRAINED_WARNING = "untrained: computed with random weights, scores are not meaningful"


def model_caveat(untrained: bool, model: dict[str, Any]) -> str | None:
    """What every showing of a model's results must say about it: untrained, or what a shipped toy model is
    (``model`` as reports record it, with its ``spec``); None for any other model."""
    return UNTRAINED_WARNING if untrained else shipped_note(str(model.get("spec", "")))
DEGENERATE_FIT = "degenerate hyperplane fit"

# ---------------------------------------------------------------- edit names
# Benchmarks name their outputs alike (``tedbench_output_image_017_ours.png``, ``..._base.png``): cutting
# every name at N characters leaves only the shared part. One rule, used by every view and export,
# keeps what tells the edits apart instead; the number E1..En is the edit's position and never changes.

_SHORT_NAME_LIMIT = 24
_SEPARATORS = "_-. /\\"
_IMAGE_SUFFIX = re.compile(r"\.(png|jpe?g|webp|bmp|gif|tiff?)$", re.IGNORECASE)


@dataclass(frozen=True)
class EditName:
    """How one edit is named on screen: ``E2`` + ``ours`` (short) for ``tedbench_out_2_ours.png`` (full)."""

    number: int  # 1-based position in the report
    short: str
    full: str

    @property
    def tag(self) -> str:
        return edit_tag(self.number - 1)

    @property
    def label(self) -> str:
        """``E2 ours``: the tag and the short name, what tables, galleries, maps and legends show."""
        return f"{self.tag} {self.short}" if self.short else self.tag


def edit_tag(index: int) -> str:
    """``E1`` for the first edit (0-based ``index``), the same in every view and download."""
    return f"E{index + 1}"


def short_edit_names(names: list[str], limit: int = _SHORT_NAME_LIMIT) -> list[str]:
    """Short names that keep what distinguishes the edits: drop the prefix and suffix all names share.

    The shared parts are cut at separators (``_ - . space /``) so whole words stay whole
    (``img_10.png``, ``img_11.png`` -> ``10``, ``11``, not ``0``, ``1``). A lone name loses only its
    image extension. Names still longer than ``limit`` keep their start and end around ``…``, as
    long as that keeps distinct names distinct. Equal names stay equal (their E-numbers tell them
    apart), and a name that would become empty keeps more of its shared part.
    """
    if not names:
        return []
    stems = [_IMAGE_SUFFIX.sub("", name) if all(_IMAGE_SUFFIX.search(n) for n in names) else name for name in names]
    if len(set(stems)) > 1:
        prefix, suffix = _shared_prefix(stems), _shared_suffix(stems)
        if any(len(s) <= prefix + suffix for s in stems):  # one name is all shared parts: cut less
            suffix = 0 if all(len(s) > prefix for s in stems) else suffix
            prefix = 0 if any(len(s) <= prefix + suffix for s in stems) else prefix
        stems = [s[prefix:len(s) - suffix] for s in stems]
    return _fit(stems, limit)


def edit_names(names: list[str], limit: int = _SHORT_NAME_LIMIT) -> list[EditName]:
    """:class:`EditName` for each name, numbered E1..En in the given order."""
    return [EditName(i + 1, short, full) for i, (short, full) in enumerate(zip(short_edit_names(names, limit), names))]


def _shared_prefix(names: list[str]) -> int:
    """Length of the common prefix, cut back to just after its last separator."""
    first, last, n = min(names), max(names), 0  # the lexicographic extremes share what all share
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    while n > 0 and first[n - 1] not in _SEPARATORS:
        n -= 1
    return n


def _shared_suffix(names: list[str]) -> int:
    """Length of the common suffix, cut forward so it starts with a separator."""
    return _shared_prefix([name[::-1] for name in names])


def _fit(names: list[str], limit: int) -> list[str]:
    distinct = len(set(names))
    for width in range(max(limit, 5), max(map(len, names)) + 1):
        shown = [_middle_cut(name, width) for name in names]
        if len(set(shown)) == distinct:
            return shown
    return names


def _middle_cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    head = width // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


@dataclass
class AttributeChange:
    """One attribute's Eq. 11/12 delta: how much the ideal edit moves toward (+) or away (-) from it."""

    text: str
    delta: float
    alpha: float


@dataclass
class AugCLIPDetails:
    """Scalars and per-sample values of one AugCLIP fit (the vectors stay in the in-memory arrays)."""

    c: float
    v_norm: float
    w_norm: float
    b: float
    source_distance: float  # g(E(I_src)) / |w|: < 0 means the source is on the source side
    edit_distance: float
    ideal_distance: float
    fit_accuracy: float
    classifier: str
    C: float
    weighting: bool
    include_images: bool
    fit_samples: list[str]
    alpha: list[float]
    sample_weight: list[float]
    weight_scaling: str = "raw"
    projection: str = "clamped"


@dataclass
class EditResult:
    index: int
    name: str
    image_sha256: str
    metrics: dict[str, float | None]
    unavailable: dict[str, str] = field(default_factory=dict)
    augclip: AugCLIPDetails | None = None
    source_changes: list[AttributeChange] = field(default_factory=list)  # most -> least changed
    target_changes: list[AttributeChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bpm: dict[str, Any] | None = None  # BPMResult.to_dict() when BPM ran (components, parse, regions)
    judge: dict[str, Any] | None = None  # JudgeResult.to_dict() when the MLLM judge ran (scores, spread, rationales)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EditResult:
        data = dict(data)
        details = data.pop("augclip", None)
        return cls(
            augclip=AugCLIPDetails(**details) if details else None,
            source_changes=[AttributeChange(**x) for x in data.pop("source_changes", [])],
            target_changes=[AttributeChange(**x) for x in data.pop("target_changes", [])],
            **data,
        )


@dataclass
class Report:
    """Result of one :meth:`Evaluator.evaluate` call: one :class:`EditResult` per edited image."""

    source_name: str
    source_sha256: str
    target_text: str
    source_text: str | None
    attributes: Attributes
    model: dict[str, Any]
    untrained: bool
    options: dict[str, Any]
    edits: list[EditResult]
    timings: dict[str, float]
    notes: list[str] = field(default_factory=list)
    version: str = ""
    created_at: str = ""
    # Texts longer than CLIP's context (77 tokens): the tokenizer cut them, so only their start was scored.
    truncated_texts: list[str] = field(default_factory=list)
    # In-memory embeddings and fits for explanations and re-scoring; never serialised.
    arrays: Any = field(default=None, repr=False, compare=False)

    # -------------------------------------------------------------- queries
    def edit_names(self) -> list[EditName]:
        """E1..En with the short names of :func:`short_edit_names` (full names in ``.full``)."""
        return edit_names([edit.name for edit in self.edits])

    def metric_values(self, key: str) -> list[float | None]:
        return [edit.metrics.get(key) for edit in self.edits]

    def metric_keys(self, include_variants: bool = False) -> list[str]:
        """The metrics the report's tables show (:func:`~augclip_demo.metrics.suite.shown_metric_keys`; with
        ``include_variants``, every row present), in table order, then any key no row declares."""
        present = {key for edit in self.edits for key in edit.metrics}
        valued = {key for edit in self.edits for key, value in edit.metrics.items() if value is not None}
        keys = [key for key in METRICS if key in present] if include_variants else shown_metric_keys(present, valued)
        return keys + sorted(present - set(METRICS))

    def best(self, key: str) -> int | None:
        """Index of the best edit under ``key`` (lower is better for L2), None if unavailable."""
        return best_index(self.metric_values(key), key)

    def fit_notes(self) -> list[str]:
        """Where AugCLIP says nothing beyond CLIP-I: the fit put the ideal edit on the source (v = 0).

        A fit no more accurate than answering one class for every sample (0.5 for balanced sets) separates
        nothing (few attributes, untrained weights): a degenerate fit. Otherwise the source already lies on
        the target side of a working hyperplane."""
        degenerate, on_target_side = [], []
        for edit in self.edits:
            details = edit.augclip
            if details is None or details.v_norm != 0.0:
                continue
            n_source = sum(1 for name in details.fit_samples if name == "[source image]" or name.startswith("S: "))
            n_total = max(len(details.fit_samples), 1)
            one_class = max(n_source, n_total - n_source) / n_total  # accuracy of answering one class for all
            bucket = degenerate if not details.fit_accuracy > max(0.5, one_class) + 1e-9 else on_target_side
            bucket.append(edit)
        names = self.edit_names()
        notes = []
        if degenerate:
            accuracy = max(e.augclip.fit_accuracy for e in degenerate)
            notes.append(f"{DEGENERATE_FIT}: AugCLIP equals CLIP-I for {', '.join(names[e.index].tag for e in degenerate)} "
                         f"(fit accuracy {accuracy:.2f}, v = 0: the hyperplane does not separate the source and target "
                         "attributes, so the ideal edit is the source itself). More or more distinct attributes, or "
                         "trained weights, give a real fit.")
        if on_target_side:
            notes.append(f"AugCLIP equals CLIP-I for {', '.join(names[e.index].tag for e in on_target_side)}: the "
                         "source already lies on the target side of the hyperplane (v = 0).")
        return notes

    def verdict(self, keys: list[str] | None = None) -> str:
        """One line, e.g. ``AugCLIP prefers edit E2 (ours), CLIPdir prefers edit E1 (base)`` (short names)."""
        names = self.edit_names()
        parts = []
        for key in keys or ["augclip", "clip_dir", "bpm"]:
            if key not in METRICS or all(v is None for v in self.metric_values(key)):
                continue
            best = self.best(key)
            if best is None:
                continue
            parts.append(f"{METRICS[key].label} prefers edit {names[best].tag} ({names[best].short})")
        if not parts:
            return "no metric could rank the edits"
        text = ", ".join(parts)
        if len(self.edits) == 1:
            text = "one edit scored; " + text.replace(" prefers ", " scores ")
        if any(note.startswith(DEGENERATE_FIT) for note in self.fit_notes()):
            text += f" ({DEGENERATE_FIT}: AugCLIP = CLIP-I)"
        return text + (f" [{self.caveat}]" if self.caveat else "")

    @property
    def caveat(self) -> str | None:
        """What every showing of these scores must say about the model (:func:`model_caveat`)."""
        return model_caveat(self.untrained, self.model)

    # -------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("arrays", "attributes")}
        data["attributes"] = self.attributes.to_dict()
        data["notes"] = list(dict.fromkeys([*self.notes, *self.fit_notes()]))
        if self.caveat:
            data["warning"] = self.caveat
        return _json_safe(data)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        data = dict(data)
        data.pop("warning", None)
        attributes = Attributes.from_dict(data.pop("attributes"), origin="report")
        edits = [EditResult.from_dict(e) for e in data.pop("edits")]
        return cls(attributes=attributes, edits=edits, **data)

    @classmethod
    def from_json(cls, text: str) -> Report:
        return cls.from_dict(json.loads(text))

    def csv_rows(self, include_variants: bool = True) -> list[dict[str, Any]]:
        keys = self.metric_keys(include_variants=include_variants)
        rows = []
        names = self.edit_names()
        for edit in self.edits:
            name = names[edit.index]
            row: dict[str, Any] = {"edit": edit.index + 1, "name": edit.name}
            for key in keys:
                value = edit.metrics.get(key)
                row[key] = "" if value is None else value
            row["model"] = self.model.get("spec", "")
            row["untrained"] = self.untrained
            row["tag"], row["short_name"] = name.tag, name.short  # as the app and the CLI table show the edit
            rows.append(row)
        return rows

    def to_csv(self, include_variants: bool = True) -> str:
        rows = self.csv_rows(include_variants)
        buffer = io.StringIO()
        if rows:
            writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(spreadsheet_row(row) for row in rows)  # no cell runs as a formula
        return buffer.getvalue()


def _json_safe(value: Any) -> Any:
    """Replace NaN/inf by None so the JSON is standard (and say nothing false about them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value
