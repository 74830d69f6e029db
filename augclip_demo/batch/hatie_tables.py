"""HATIE over a results file: the per-model table of the paper (criteria means, Image Quality from FID,
total), totals per edit type, correlations with the manifest's human judgments, and calibrated weight
sets (fitted, saved and used by name).

Models are the edits' ``name`` fields. Image Quality needs the images again: FID between the model's
source images and its edits (Eq. 1), computed when a feature network is given.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import InputError
from ..io import open_image
from ..metrics import hatie as H
from ..metrics.hatie_calibration import Fit, calibrate, correlations
from ..metrics.suite import HATIE_KEYS
from .results import iter_results

CRITERION_KEYS = {criterion: key for key, criterion in HATIE_KEYS.items()}  # criterion -> metric key
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
BOOTSTRAP = 200
SEED = 0


@dataclass
class HatieEdit:
    """One scored edit of a results file, as HATIE's tables need it."""

    item: str
    model: str
    edit_type: str | None
    criteria: dict[str, float | None]
    rating: float | None
    source: str
    path: str


def read_hatie_edits(path: str | Path) -> list[HatieEdit]:
    """Every edit with HATIE values in a batch results file."""
    out = []
    for record in iter_results(path):
        if record.get("status") != "ok":
            continue
        ratings = _ratings(record.get("human"), len(record.get("edits", [])))
        for i, edit in enumerate(record.get("edits", [])):
            detail = edit.get("hatie")
            if not isinstance(detail, dict):
                continue
            crit = detail.get("criteria") or {}
            values = {c: (crit.get(c) or {}).get("value") for c in H.CRITERIA}
            kind = (detail.get("edit_type") or {}).get("edit_type")
            out.append(HatieEdit(str(record.get("id")), str(edit.get("name") or f"edit {i}"), kind, values,
                                 ratings[i], str(record.get("source")), str(edit.get("path"))))
    if not out:
        raise InputError(f"{path}: no edit has HATIE values; run `batch` with --metrics ...,hatie,hatie_of,hatie_bf,"
                         "hatie_oc,hatie_bc")
    return out


def _ratings(human: Any, n: int) -> list[float | None]:
    """Per edit: the human score, or 1 / 0 for the preferred edit / the others, or None."""
    if not isinstance(human, dict):
        return [None] * n
    scores = human.get("scores")
    if isinstance(scores, list) and len(scores) == n:
        return [float(s) if isinstance(s, (int, float)) else None for s in scores]
    preferred = human.get("preferred")
    if isinstance(preferred, int) and 0 <= preferred < n:
        return [1.0 if i == preferred else 0.0 for i in range(n)]
    return [None] * n


# ---------------------------------------------------------------------------------------------- weight sets
def weights_folder(settings: Settings | None = None) -> Path:
    return (settings or Settings.from_env()).cache_dir / "hatie" / "weights"


def check_weight_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name) or name in H.TOTAL_WEIGHT_SETS:
        raise InputError(f"weight set name {name!r}: use letters, digits, '.', '_' or '-' (at most 64), not "
                         f"{' / '.join(H.TOTAL_WEIGHT_SETS)}")
    return name


def save_weights(name: str, fit: Fit, source: str, settings: Settings | None = None) -> Path:
    folder = weights_folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{check_weight_name(name)}.json"
    path.write_text(json.dumps({"name": name, "fitted_on": source, **fit.to_dict()}, indent=2), encoding="utf-8")
    return path


def calibrated_sets(settings: Settings | None = None) -> dict[str, dict[str, float]]:
    """Every saved weight set by name (unreadable files are skipped)."""
    folder = weights_folder(settings)
    out: dict[str, dict[str, float]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out[path.stem] = {c: float(data["weights"][c]) for c in H.CRITERIA}
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def resolve_weights(name: str, settings: Settings | None = None) -> dict[str, float]:
    try:
        return H.total_weights(name, calibrated_sets(settings))
    except ValueError as exc:
        raise InputError(f"{exc} (fit one with `augclip-demo hatie calibrate`)") from None


def fit_from_results(path: str | Path, *, step: float = 0.01, folds: int = 5, seed: int = SEED) -> Fit:
    """Criterion weights fitted to the human judgments of a results file (see :mod:`..metrics.hatie_calibration`)."""
    edits = [e for e in read_hatie_edits(path) if e.rating is not None]
    if not edits:
        raise InputError(f"{path}: no edit has both HATIE values and a human judgment (human.scores or "
                         "human.preferred in the manifest)")
    x = np.asarray([[np.nan if e.criteria[c] is None else e.criteria[c] for c in H.CRITERIA] for e in edits])
    y = np.asarray([e.rating for e in edits], np.float64)
    try:
        return calibrate(x, y, step=step, folds=folds, seed=seed, groups=[e.item for e in edits])
    except ValueError as exc:
        raise InputError(f"calibration on {path}: {exc}") from None


# ---------------------------------------------------------------------------------------------- tables
@dataclass
class ModelRow:
    model: str
    n: int
    means: dict[str, float | None]
    se: dict[str, float | None]
    fid: float | None = None
    iq: float | None = None
    total: float | None = None
    by_type: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "n": self.n, "means": self.means, "se": self.se, "fid": self.fid,
                "image_quality": self.iq, "total": self.total, "by_type": self.by_type}


@dataclass
class HatieTable:
    rows: list[ModelRow]
    weights: dict[str, float]
    weight_name: str
    correlations: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"weights": self.weights, "weight_set": self.weight_name, "models": [r.to_dict() for r in self.rows],
                "correlations": self.correlations, "notes": self.notes}

    def format(self) -> str:
        def cell(v: float | None, se: float | None = None) -> str:
            if v is None:
                return "-"
            return f"{v:.4f}" + (f" ±{se:.4f}" if se is not None else "")

        head = ["model", "n", "OF", "BF", "OC", "BC", "IQ", "Total"]
        lines = [f"HATIE per model (weights: {self.weight_name}; ranked by Total)", " | ".join(head)]
        for r in self.rows:
            lines.append(" | ".join([r.model, str(r.n)] + [cell(r.means[c], r.se[c]) for c in H.CRITERIA]
                                    + [cell(r.iq), cell(r.total)]))
        types = [t for t in H.EDIT_TYPES if any(r.by_type.get(t) is not None for r in self.rows)]
        if types:
            lines += ["", "HATIE total per edit type (mean of the edits' totals)", " | ".join(["model"] + types)]
            lines += [" | ".join([r.model] + [cell(r.by_type.get(t)) for t in types]) for r in self.rows]
        if self.correlations:
            lines += ["", "correlation with the human judgments (edits with both)", "criterion | n | Pearson | Spearman"]
            for key, c in self.correlations.items():
                lines.append(f"{key} | {c['n']} | {cell(c['pearson'])} | {cell(c['spearman'])}")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def _mean_se(values: list[float], rng: np.random.Generator) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    a = np.asarray(values, np.float64)
    if len(a) < 2:
        return float(a.mean()), None
    boots = a[rng.integers(0, len(a), size=(BOOTSTRAP, len(a)))].mean(axis=1)
    return float(a.mean()), float(boots.std(ddof=1))


IQ_MISSING = ("Image Quality not computed (give the manifest: FID of each model's sources vs its edits); the "
              "totals are the criterion part alone")


def hatie_table(path: str | Path, *, weights: str = "published", image_quality: dict[str, tuple[float, float]] | None = None,
                settings: Settings | None = None, iq_missing: str = IQ_MISSING) -> HatieTable:
    """The per-model table of a results file (``image_quality``: model -> (FID, IQ) from :func:`model_fids`;
    ``iq_missing``: the note shown without it)."""
    w = resolve_weights(weights, settings)
    edits = read_hatie_edits(path)
    models = list(dict.fromkeys(e.model for e in edits))
    rows = []
    for model in models:
        mine = [e for e in edits if e.model == model]
        rng = np.random.default_rng(SEED)
        means, se = {}, {}
        for c in H.CRITERIA:
            means[c], se[c] = _mean_se([e.criteria[c] for e in mine if e.criteria[c] is not None], rng)
        fid, iq = (image_quality or {}).get(model, (None, None))
        by_type = {}
        for t in H.EDIT_TYPES:
            totals = [H.edit_total(e.criteria, w) for e in mine if e.edit_type == t]
            kept = [v for v in totals if v is not None]
            by_type[t] = float(np.mean(kept)) if kept else None
        rows.append(ModelRow(model, len(mine), means, se, fid, iq, H.set_total(means, w, iq), by_type))
    rows.sort(key=lambda r: -math.inf if r.total is None else -r.total)
    rated = [e for e in edits if e.rating is not None]
    corr: dict[str, dict[str, Any]] = {}
    if rated:
        columns = {CRITERION_KEYS[c]: [e.criteria[c] for e in rated] for c in H.CRITERIA}
        columns["hatie"] = [H.edit_total(e.criteria, w) for e in rated]
        corr = correlations(columns, [e.rating for e in rated])  # type: ignore[arg-type]
    notes = []
    if image_quality is None:
        notes.append(iq_missing)
    return HatieTable(rows, w, weights, corr, notes)


def model_fids(path: str | Path, manifest: str | Path, features: Any) -> dict[str, tuple[float, float]]:
    """model -> (FID, IQ) between the sources of the model's edits and the edits (Eq. 1)."""
    from .manifest import load_manifest

    items = {item.id: item for item in load_manifest(manifest)}
    by_model: dict[str, list[tuple[Path, Path]]] = {}
    for e in read_hatie_edits(path):
        item = items.get(e.item)
        if item is None:
            continue
        edit = next((x for x in item.edits if x.path == e.path), None)
        if edit is not None:
            by_model.setdefault(e.model, []).append((item.source_path, edit.resolved))
    out = {}
    for model, pairs in by_model.items():
        if len(pairs) < 2:
            continue
        # the input set holds each edit's source (Eq. 1: input images vs their outputs), repeats included
        sources = features.fid_features([open_image(s).image for s, _ in pairs])
        edited = features.fid_features([open_image(p).image for _, p in pairs])
        fid = H.fid_from_features(sources, edited)
        out[model] = (fid, H.image_quality(fid))
    return out


class _FidFeatures:
    """The ``fid_features`` that :func:`model_fids` asks for, from a FID network."""

    def __init__(self, network: Any):
        self.network = network

    def fid_features(self, images: list) -> Any:
        return self.network.features(images)


def image_quality_from_manifest(path: str | Path, manifest: str | Path, fid: str,
                                settings: Settings | None = None) -> tuple[dict[str, tuple[float, float]], bool]:
    """:func:`model_fids` with the FID network ``fid`` (loaded through the weights module); also whether that
    network is untrained (random weights). ``hatie table --manifest`` and ``protocol --manifest`` both use this."""
    from ..inference.fid import get_fid_network

    network = get_fid_network(fid, settings or Settings.from_env())
    return model_fids(path, manifest, _FidFeatures(network)), bool(network.untrained)


UNTRAINED_IQ = "the FID network has random weights: Image Quality is untrained"


def weight_names(settings: Settings | None = None) -> Iterable[str]:
    return list(H.TOTAL_WEIGHT_SETS) + list(calibrated_sets(settings))
