"""The evaluation report: plain dataclasses that serialise to JSON (round trip) and CSV."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .attributes.base import Attributes
from .metrics.suite import METRICS, best_index

UNTRAINED_WARNING = "untrained: computed with random weights, scores are not meaningful"


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
    def metric_values(self, key: str) -> list[float | None]:
        return [edit.metrics.get(key) for edit in self.edits]

    def metric_keys(self, include_variants: bool = False) -> list[str]:
        present = {key for edit in self.edits for key in edit.metrics}
        keys = [key for key in METRICS if key in present and (include_variants or METRICS[key].primary)]
        return keys + sorted(present - set(METRICS))

    def best(self, key: str) -> int | None:
        """Index of the best edit under ``key`` (lower is better for L2), None if unavailable."""
        return best_index(self.metric_values(key), key)

    def verdict(self, keys: list[str] | None = None) -> str:
        """One line, e.g. ``AugCLIP prefers edit 2 (ours), CLIPdir prefers edit 1 (base)``."""
        parts = []
        for key in keys or ["augclip", "clip_dir", "bpm"]:
            if key not in METRICS or all(v is None for v in self.metric_values(key)):
                continue
            best = self.best(key)
            if best is None:
                continue
            edit = self.edits[best]
            parts.append(f"{METRICS[key].label} prefers edit {best + 1} ({edit.name})")
        if not parts:
            return "no metric could rank the edits"
        text = ", ".join(parts)
        if len(self.edits) == 1:
            text = "one edit scored; " + text.replace(" prefers ", " scores ")
        return text + (f" [{UNTRAINED_WARNING}]" if self.untrained else "")

    # -------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("arrays", "attributes")}
        data["attributes"] = self.attributes.to_dict()
        if self.untrained:
            data["warning"] = UNTRAINED_WARNING
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
        for edit in self.edits:
            row: dict[str, Any] = {"edit": edit.index + 1, "name": edit.name}
            for key in keys:
                value = edit.metrics.get(key)
                row[key] = "" if value is None else value
            row["model"] = self.model.get("spec", "")
            row["untrained"] = self.untrained
            rows.append(row)
        return rows

    def to_csv(self, include_variants: bool = True) -> str:
        rows = self.csv_rows(include_variants)
        buffer = io.StringIO()
        if rows:
            writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
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
