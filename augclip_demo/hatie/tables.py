"""HATIE over the records of a results file: the per-model table of the paper (criteria means, Image Quality from FID,
total), totals per edit type, correlations with the manifest's human judgments, and calibrated weight
sets (fitted, saved and used by name).

Models are the edits' ``name`` fields. Image Quality needs the images again: FID between the model's
source images (each counted once, as the published code's folder of originals) and its edits (Eq. 1),
computed when a feature network is given. Reading the files is the caller's (``batch.results.iter_results``,
``batch.manifest.load_manifest``): this package sits below batch in the layers. Aggregation as the published code: each criterion's mean over
the edits that have it with a bootstrap standard error (10,000 resamples), the total
0.8 x weighted criteria + 0.2 x IQ with the errors combined as published, and per edit type the
criteria means weighted over the type's criteria with the code's per-type weights (OF 0.4, BF 0.2).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import InputError
from ..io import open_image
from ..metrics.agreement import resampled_means
from . import criteria as H
from .calibration import Fit, calibrate, correlations
from .criteria import HATIE_KEYS

_CRITERION_KEYS = {criterion: key for key, criterion in HATIE_KEYS.items()}  # criterion -> metric key
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_BOOTSTRAP = 10_000  # resamples of the criteria's bootstrap errors (published code)
_BOOTSTRAP_BATCH = 1_000
_FID_RESAMPLES = 30  # resamples of the edited set for Image Quality's error (published code)
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


def hatie_edits(records: Iterable[Mapping[str, Any]], path: str | Path) -> list[HatieEdit]:
    """Every edit with HATIE values among the records of a batch results file (``path`` names it in errors)."""
    out = []
    for record in records:
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
def _weights_folder(settings: Settings | None = None) -> Path:
    return (settings or Settings()).cache_dir / "hatie" / "weights"


def check_weight_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or name in H.TOTAL_WEIGHT_SETS:
        raise InputError(f"weight set name {name!r}: use letters, digits, '.', '_' or '-' (at most 64), not "
                         f"{' / '.join(H.TOTAL_WEIGHT_SETS)}")
    return name


def save_weights(name: str, fit: Fit, source: str, settings: Settings | None = None) -> Path:
    folder = _weights_folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{check_weight_name(name)}.json"
    path.write_text(json.dumps({"name": name, "fitted_on": source, **fit.to_dict()}, indent=2), encoding="utf-8")
    return path


def calibrated_sets(settings: Settings | None = None) -> dict[str, dict[str, float]]:
    """Every saved weight set by name (unreadable files are skipped)."""
    folder = _weights_folder(settings)
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


def fit_from_results(edits: list[HatieEdit], path: str | Path, *, step: float = 0.01, folds: int = 5,
                     seed: int = SEED) -> Fit:
    """Criterion weights fitted to the human judgments of a results file's edits (``path`` names it in errors;
    see :mod:`.calibration`)."""
    edits = [e for e in edits if e.rating is not None]
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
class TypeRow:
    """One edit type of one model: the criteria means and errors, and the type's total (published code)."""

    n: int
    means: dict[str, float | None]
    se: dict[str, float | None]
    total: float | None
    total_se: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "means": self.means, "se": self.se, "total": self.total, "total_se": self.total_se}


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
    total_se: float | None = None
    iq_se: float | None = None
    types: dict[str, TypeRow] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "n": self.n, "means": self.means, "se": self.se, "fid": self.fid,
                "image_quality": self.iq, "image_quality_se": self.iq_se, "total": self.total,
                "total_se": self.total_se, "by_type": self.by_type,
                "types": {t: row.to_dict() for t, row in self.types.items()}}


@dataclass
class HatieTable:
    rows: list[ModelRow]
    weights: dict[str, float]
    weight_name: str
    correlations: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    per_type: str = "code"

    def to_dict(self) -> dict[str, Any]:
        return {"weights": self.weights, "weight_set": self.weight_name, "per_type_weights": self.per_type,
                "models": [r.to_dict() for r in self.rows], "correlations": self.correlations, "notes": self.notes}

    def format(self) -> str:
        def cell(v: float | None, se: float | None = None) -> str:
            if v is None:
                return "-"
            return f"{v:.4f}" + (f" ±{se:.4f}" if se is not None else "")

        head = ["model", "n", "OF", "BF", "OC", "BC", "IQ", "Total"]
        lines = [f"HATIE per model (weights: {self.weight_name}; ranked by Total)", " | ".join(head)]
        for r in self.rows:
            lines.append(" | ".join([r.model, str(r.n)] + [cell(r.means[c], r.se[c]) for c in H.CRITERIA]
                                    + [cell(r.iq, r.iq_se), cell(r.total, r.total_se)]))
        types = [t for t in H.EDIT_TYPES if any(t in r.types for r in self.rows)]
        if types:
            lines += ["", f"HATIE total per edit type (criteria means weighted as the published code's per-type "
                          f"table: {self.per_type})", " | ".join(["model"] + types)]
            lines += [" | ".join([r.model] + [cell(r.types[t].total, r.types[t].total_se) if t in r.types else "-"
                                              for t in types]) for r in self.rows]
        if self.correlations:
            lines += ["", "correlation with the human judgments (edits with both)", "criterion | n | Pearson | Spearman"]
            for key, c in self.correlations.items():
                lines.append(f"{key} | {c['n']} | {cell(c['pearson'])} | {cell(c['spearman'])}")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def bootstrap_se(values: list[float], rng: np.random.Generator, resamples: int = _BOOTSTRAP) -> float | None:
    """The standard error of the mean by the bootstrap (``resamples`` resamples, drawn in batches)."""
    a = np.asarray(values, np.float64)
    if len(a) < 2:
        return None
    return float(resampled_means(a, resamples, rng, _BOOTSTRAP_BATCH).std(ddof=1))


def _mean_se(values: list[float], rng: np.random.Generator) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), bootstrap_se(values, rng)


_IQ_MISSING = ("Image Quality not computed (give the manifest: FID of each model's sources vs its edits); the "
              "totals are the criterion part alone")


def _criteria_stats(edits: list[HatieEdit], rng: np.random.Generator) -> tuple[dict, dict]:
    means, se = {}, {}
    for c in H.CRITERIA:
        means[c], se[c] = _mean_se([e.criteria[c] for e in edits if e.criteria[c] is not None], rng)
    return means, se


def _type_rows(mine: list[HatieEdit], per_type: dict[str, float], rng: np.random.Generator) -> dict[str, TypeRow]:
    rows = {}
    for t in H.EDIT_TYPES:
        of_type = [e for e in mine if e.edit_type == t]
        if not of_type:
            continue
        means, se = _criteria_stats(of_type, rng)
        rows[t] = TypeRow(len(of_type), means, se, H.edit_total(means, per_type), H.per_type_error(se, per_type))
    return rows


def hatie_table(edits: list[HatieEdit], *, weights: str = "published", image_quality: dict[str, tuple[float, float]] | None = None,
                settings: Settings | None = None, iq_missing: str = _IQ_MISSING, per_type: str = "code",
                iq_errors: dict[str, float] | None = None) -> HatieTable:
    """The per-model table of a results file's edits (``image_quality``: model -> (FID, IQ) from :func:`model_fids`,
    ``iq_errors``: model -> IQ's error; ``iq_missing``: the note shown without them; ``per_type``: the weights
    of the per-type table, :data:`~augclip_demo.hatie.criteria.PER_TYPE_WEIGHTS`)."""
    w = resolve_weights(weights, settings)
    if per_type not in H.PER_TYPE_WEIGHTS:
        raise InputError(f"per-type weights must be one of {', '.join(H.PER_TYPE_WEIGHTS)}, got {per_type!r}")
    type_weights = H.PER_TYPE_WEIGHTS[per_type]
    models = list(dict.fromkeys(e.model for e in edits))
    rows = []
    for model in models:
        mine = [e for e in edits if e.model == model]
        rng = np.random.default_rng(SEED)
        means, se = _criteria_stats(mine, rng)
        fid, iq = (image_quality or {}).get(model, (None, None))
        iq_se = (iq_errors or {}).get(model)
        types = _type_rows(mine, type_weights, rng)
        by_type = {t: row.total for t, row in types.items()}
        rows.append(ModelRow(model, len(mine), means, se, fid, iq, H.set_total(means, w, iq), by_type,
                             H.total_error(se, w, iq_se if iq is not None else None), iq_se, types))
    rows.sort(key=lambda r: -math.inf if r.total is None else -r.total)
    rated = [e for e in edits if e.rating is not None]
    corr: dict[str, dict[str, Any]] = {}
    if rated:
        columns = {_CRITERION_KEYS[c]: [e.criteria[c] for e in rated] for c in H.CRITERIA}
        columns["hatie"] = [H.edit_total(e.criteria, w) for e in rated]
        corr = correlations(columns, [e.rating for e in rated])  # type: ignore[arg-type]
    notes = []
    if image_quality is None:
        notes.append(iq_missing)
    else:
        without = [r.model for r in rows if r.iq is None]
        if without:
            notes.append(f"Image Quality not computed for {', '.join(without)}: FID needs at least two distinct "
                         "source images and two edits per model (each source counted once)")
    return HatieTable(rows, w, weights, corr, notes, per_type)


def model_fids(edits: list[HatieEdit], manifest_items: Iterable[Any], features: Any,
               errors: dict[str, float] | None = None) -> dict[str, tuple[float, float]]:
    """model -> (FID, IQ) between the model's source images, each counted once (the published code's folder
    of originals), and its edits (Eq. 1). With ``errors``, also model -> IQ's error: the standard deviation
    of IQ over 30 resamples of the edited set (published code). ``manifest_items``: the run's manifest items
    (``id``, ``source_path``, ``edits`` with ``path`` and ``resolved``)."""
    items = {item.id: item for item in manifest_items}
    by_model: dict[str, list[tuple[Path, Path]]] = {}
    for e in edits:
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
        unique_sources = list(dict.fromkeys(s for s, _ in pairs))
        if len(unique_sources) < 2:
            continue
        sources = features.fid_features([open_image(s).image for s in unique_sources])
        edited = np.asarray(features.fid_features([open_image(p).image for _, p in pairs]), np.float64)
        fid = H.fid_from_features(sources, edited)
        out[model] = (fid, H.image_quality(fid))
        if errors is not None:
            rng = np.random.default_rng(SEED)
            resampled = [H.image_quality(H.fid_from_features(sources, edited[rng.integers(0, len(edited), len(edited))]))
                         for _ in range(_FID_RESAMPLES)]
            errors[model] = float(np.std(resampled))
    return out


class _FidFeatures:
    """The ``fid_features`` that :func:`model_fids` asks for, from a FID network."""

    def __init__(self, network: Any):
        self.network = network

    def fid_features(self, images: list) -> Any:
        return self.network.features(images)


def image_quality_from_manifest(edits: list[HatieEdit], manifest_items: Iterable[Any], fid: str,
                                settings: Settings | None = None, errors: dict[str, float] | None = None,
                                ) -> tuple[dict[str, tuple[float, float]], bool]:
    """:func:`model_fids` with the FID network ``fid`` (loaded through the weights module); also whether that
    network is untrained (random weights). ``hatie table --manifest`` and ``protocol --manifest`` both use this."""
    from ..inference.fid import get_fid_network

    network = get_fid_network(fid, settings or Settings())
    return model_fids(edits, manifest_items, _FidFeatures(network), errors), bool(network.untrained)


UNTRAINED_IQ = "the FID network has random weights: Image Quality is untrained"


def weight_names(settings: Settings | None = None) -> Iterable[str]:
    return list(H.TOTAL_WEIGHT_SETS) + list(calibrated_sets(settings))
