"""Protocol figures from batch results files: grouping, tables (like the papers'), JSON and CSV.

The statistics themselves are in :mod:`augclip_demo.metrics.agreement` (model-free); this module
reads results, groups items by dataset (the record's ``dataset``: the manifest's ``dataset`` field,
else the manifest's file name) and renders the tables.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bpm.components import BPMComponents, rescore_over_dataset
from ..config import Settings
from ..errors import InputError, WeightsUnavailableError
from ..hatie.tables import UNTRAINED_IQ, HatieTable, hatie_edits, hatie_table, image_quality_from_manifest
from ..inference.specs import shown_model
from ..io import spreadsheet_row
from ..metrics.agreement import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_LEVEL,
    DEFAULT_SEED,
    TRIPLET_ROLES,
    Figure,
    MetricProtocols,
    ProtocolEdit,
    ProtocolItem,
    evaluate_metric,
)
from ..metrics.suite import METRICS
from ..report import UNTRAINED_WARNING
from .manifest import load_manifest
from .results import iter_results


@dataclass
class DatasetProtocols:
    name: str
    n_items: int = 0
    n_failed: int = 0
    metrics: dict[str, MetricProtocols] = field(default_factory=dict)


@dataclass
class ProtocolReport:
    datasets: dict[str, DatasetProtocols]
    metrics: list[str]
    models: list[str]
    untrained: bool
    n_boot: int = DEFAULT_BOOTSTRAP
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL
    sources: list[str] = field(default_factory=list)
    hatie: dict[str, HatieTable] = field(default_factory=dict)  # results file -> HATIE's per-model table
    hatie_notes: list[str] = field(default_factory=list)

    # -------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "settings": {"bootstrap": self.n_boot, "seed": self.seed, "level": self.level},
            "results": self.sources, "models": self.models, "untrained": self.untrained, "metrics": self.metrics,
            "datasets": {name: {"n_items": ds.n_items, "n_failed": ds.n_failed,
                                "metrics": {key: mp.to_dict() for key, mp in ds.metrics.items()}}
                         for name, ds in self.datasets.items()},
        }
        if self.hatie or self.hatie_notes:
            data["hatie"] = {"tables": {path: table.to_dict() for path, table in self.hatie.items()},
                             "notes": self.hatie_notes}
        if self.untrained:
            data["warning"] = UNTRAINED_WARNING
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    def long_rows(self) -> list[dict[str, Any]]:
        """One row per (dataset, metric, figure): dataset, metric, figure, value, ci_low, ci_high, n; each model's
        mean is the figure ``mean:<model>``."""
        rows = []
        for name, ds in self.datasets.items():
            for key, mp in ds.metrics.items():
                for figure_name, figure in _figures(mp):
                    rows.append({"dataset": name, "metric": key, "figure": figure_name, **figure.to_dict()})
                for row in mp.model_means:
                    rows.append({"dataset": name, "metric": key, "figure": f"mean:{row.name}", **row.figure.to_dict()})
        return rows

    def to_csv(self) -> str:
        """The long rows, each also naming the model(s) and whether the weights were random (a CSV
        travels alone: figures from untrained models must say so on every row, as the results CSV does)."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["dataset", "metric", "figure", "value", "ci_low", "ci_high", "n",
                                                    "boot_resamples", "boot_undefined", "ci_note", "model", "untrained"])
        writer.writeheader()
        provenance = {"model": "+".join(self.models), "untrained": self.untrained}
        for row in self.long_rows():
            writer.writerow(spreadsheet_row({**{k: ("" if v is None else v) for k, v in row.items()}, **provenance}))
        return buffer.getvalue()

    def save(self, json_path: str | Path | None = None, csv_path: str | Path | None = None) -> list[Path]:
        written = []
        if json_path:
            path = Path(json_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.to_json() + "\n", encoding="utf-8")
            written.append(path)
        if csv_path:
            path = Path(csv_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.to_csv(), encoding="utf-8")
            written.append(path)
        return written

    # -------------------------------------------------------------- tables
    def wide_table(self, with_ci: bool = True) -> tuple[list[str], list[list[str]]]:
        """(headers, rows): one row per metric, one column per (dataset, figure) present (for the app)."""
        columns: list[tuple[str, str]] = []
        for name, ds in self.datasets.items():
            present: dict[str, None] = {}
            for mp in ds.metrics.values():
                for figure_name, _ in _figures(mp):
                    present.setdefault(figure_name, None)
            columns.extend((name, figure_name) for figure_name in _ordered(present))
        headers = ["metric"] + [f"{dataset} {_FIGURE_LABELS.get(fig, fig)}" for dataset, fig in columns]
        rows = []
        for key in self.metrics:
            row = [metric_label(key)]
            for dataset, fig in columns:
                mp = self.datasets[dataset].metrics.get(key)
                figure = dict(_figures(mp)).get(fig) if mp else None
                row.append(_cell(figure, with_ci))
            rows.append(row)
        return headers, rows

    def format(self, with_ci: bool = True) -> str:
        """Tables in the papers' layout: metric rows, dataset columns, one table per protocol."""
        blocks = []
        if self.untrained:
            blocks.append(f"!! {UNTRAINED_WARNING.upper()} !!")
        blocks.append(f"model(s): {', '.join(map(shown_model, self.models)) or 'n/a'} | bootstrap {self.n_boot} resamples, seed {self.seed}, "
                      f"{int(self.level * 100)}% CI in brackets")
        for figure_name, title in _TABLES:
            datasets = [name for name, ds in self.datasets.items()
                        if any(dict(_figures(mp)).get(figure_name) is not None for mp in ds.metrics.values())]
            if not datasets:
                continue
            rows = [[metric_label(key)] + [_cell(dict(_figures(self.datasets[d].metrics[key])).get(figure_name)
                                           if key in self.datasets[d].metrics else None, with_ci)
                                     for d in datasets] for key in self.metrics]
            blocks.append(_render(title, ["metric"] + datasets, rows))
        for name, ds in self.datasets.items():  # BPM Table 4 layout: shares of wins per role
            if not any(mp.wins for mp in ds.metrics.values()):
                continue
            rows = [[metric_label(key)] + [_cell(mp.wins[role], with_ci) for role in ("ep", "em", "gt")]
                    for key, mp in ds.metrics.items() if mp.wins]
            blocks.append(_render(f"Ground truth test, share of wins ({name}; each row sums to 1)",
                                  ["metric", "EP", "EM", "GT"], rows))
        for name, ds in self.datasets.items():
            models = {key: mp.models for key, mp in ds.metrics.items() if mp.models}
            if not models:
                continue
            by_name = {key: {row.name: row for row in rows} for key, rows in models.items()}
            first = next(iter(models.values()))
            headers = ["model", "human"] + [metric_label(key) for key in models]
            rows = []
            for row in sorted(first, key=lambda r: r.human_rank):
                cells = [row.name, f"{row.human_mean:.4f} (#{row.human_rank:g})"]
                for key in models:
                    other = by_name[key].get(row.name)
                    cells.append("n/a" if other is None else f"{other.metric_mean:.4f} (#{other.metric_rank:g})")
                rows.append(cells)
            blocks.append(_render(f"Per-model means and ranks ({name})", headers, rows))
        human_or_triplets = any(_figures(mp) for ds in self.datasets.values() for mp in ds.metrics.values())
        for name, ds in self.datasets.items():
            if not any(mp.models for mp in ds.metrics.values()):  # no human figures: the means alone
                blocks.extend(_means_table(name, ds, self.metrics, with_ci))
        for name, ds in self.datasets.items():
            if ds.n_failed:
                blocks.append(f"note: {ds.n_failed} failed item(s) in {name} are left out")
        if not human_or_triplets:
            blocks.append("note: the results have no human choices/scores and no gt/ep/em triplets: per-model means "
                          "only (add `human` to the manifest for s2AFC and the rank agreement)")
        for path, table in self.hatie.items():  # HATIE's paper table: criteria means, Image Quality (FID), total
            blocks.append(f"results {Path(path).name}:\n{table.format()}")
        blocks.extend(f"note: {note}" for note in self.hatie_notes)
        return "\n\n".join(blocks)


def _means_table(name: str, ds: DatasetProtocols, metrics: list[str], with_ci: bool) -> list[str]:
    """The per-model means of a dataset (model rows, metric columns), or nothing when no metric has one."""
    keys = [key for key in metrics if key in ds.metrics and ds.metrics[key].model_means]
    if not keys:
        return []
    by_key = {key: {row.name: row.figure for row in ds.metrics[key].model_means} for key in keys}
    models = list(dict.fromkeys(row.name for key in keys for row in ds.metrics[key].model_means))
    rows = [[model] + [_cell(by_key[key].get(model), with_ci) + (f" n={by_key[key][model].n}" if model in by_key[key]
                                                               else "") for key in keys] for model in models]
    return [_render(f"Per-model means ({name})", ["model"] + [metric_label(key) for key in keys], rows)]


_TABLES: list[tuple[str, str]] = [
    ("s2afc", "Human alignment s2AFC (higher is better)"),
    ("acc_both", "Ground truth test AccBoth (higher is better)"),
    ("model_spearman", "Per-model rank agreement with humans, Spearman rho"),
    ("model_kendall", "Per-model rank agreement with humans, Kendall tau"),
    ("pearson", "Correlation with human scores, Pearson r"),
    ("spearman", "Correlation with human scores, Spearman rho"),
    ("kendall", "Correlation with human scores, Kendall tau"),
    ("pair_alignment", "Pairwise alignment with human scores (BPM)"),
]
_FIGURE_LABELS = {"s2afc": "s2AFC", "acc_both": "AccBoth", "win_gt": "GT wins", "win_ep": "EP wins",
                 "win_em": "EM wins", "model_spearman": "model rho", "model_kendall": "model tau",
                 "pearson": "r", "spearman": "rho", "kendall": "tau", "pair_alignment": "pair align."}


def _figures(mp: MetricProtocols | None) -> list[tuple[str, Figure]]:
    if mp is None:
        return []
    out: list[tuple[str, Figure]] = []
    for key in ("s2afc", "acc_both"):
        if getattr(mp, key) is not None:
            out.append((key, getattr(mp, key)))
    if mp.wins:
        out.extend((f"win_{role}", mp.wins[role]) for role in TRIPLET_ROLES)
    for key in ("model_spearman", "model_kendall", "pearson", "spearman", "kendall", "pair_alignment"):
        if getattr(mp, key) is not None:
            out.append((key, getattr(mp, key)))
    return out


def _ordered(present: dict[str, None]) -> list[str]:
    order = list(_FIGURE_LABELS)
    return sorted(present, key=lambda k: order.index(k) if k in order else len(order))


def metric_label(key: str) -> str:
    """A metric's name in the tables (the derived dataset-normalised BPM included)."""
    if key == BPM_DATASET_KEY:
        return "BPM (dataset min-max)"
    return METRICS[key].label if key in METRICS else key


def _cell(figure: Figure | None, with_ci: bool) -> str:
    if figure is None or figure.value is None:
        return "n/a"
    text = f"{figure.value:.3f}"
    if with_ci and figure.ci is not None:
        text += f" [{figure.ci[0]:.2f}, {figure.ci[1]:.2f}]"
    elif with_ci and figure.ci_note:
        text += f" [no CI: {figure.boot_undefined}/{figure.boot_resamples} resamples undefined]"
    return text


def _render(title: str, headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(headers, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- reading
#: BPM with S_modify min-max normalised over each dataset of the results (BPM paper, Alg. 2 line 2), derived
#: from the components every batch record keeps; the per-pair ``bpm`` uses the fixed (x + 1) / 2 instead.
BPM_DATASET_KEY = "bpm_dataset"


def add_dataset_bpm(items: list[ProtocolItem], components: dict[int, dict[str, Any]]) -> bool:
    """Give every edit with BPM components the dataset-normalised BPM as metric ``bpm_dataset``.

    ``components`` maps ``id(edit)`` to the edit's recorded BPM components. Returns whether any edit got
    a value. Edits without components (no instruction, refused parse) get ``None``, like ``bpm``.
    """
    scored = [(edit, components[id(edit)]) for item in items for edit in item.edits if id(edit) in components]
    if not scored:
        return False
    fields = set(BPMComponents.__dataclass_fields__)
    rescored = rescore_over_dataset(BPMComponents(**{k: v for k, v in parts.items() if k in fields})
                                    for _, parts in scored)
    for (edit, _), result in zip(scored, rescored):
        edit.metrics[BPM_DATASET_KEY] = result.bpm
    for item in items:
        for edit in item.edits:
            edit.metrics.setdefault(BPM_DATASET_KEY, None)
    return True


def read_protocol_items(paths: list[str | Path]) -> tuple[dict[str, DatasetProtocols], dict[str, list[ProtocolItem]],
                                                           list[str], list[str], bool]:
    """Items of every results file, grouped by dataset; also metric keys, model specs, untrained flag."""
    datasets: dict[str, DatasetProtocols] = {}
    grouped: dict[str, list[ProtocolItem]] = {}
    metric_keys: dict[str, None] = {}
    models: dict[str, None] = {}
    untrained = False
    seen: dict[tuple[str, str], str] = {}
    bpm_components: dict[str, dict[int, dict[str, Any]]] = {}  # dataset -> id(edit) -> recorded components
    for path in paths:
        path = Path(path)
        for record in iter_results(path):
            name = str(record.get("dataset") or path.stem)
            ds = datasets.setdefault(name, DatasetProtocols(name))
            item_id = str(record["id"])
            if (name, item_id) in seen:
                raise InputError(f"results {path}: item {item_id!r} of dataset {name!r} also appears in {seen[(name, item_id)]}; "
                                 "give each file its own dataset name or remove the duplicate")
            seen[(name, item_id)] = str(path)
            run = record.get("run") or {}
            if run.get("model"):
                models.setdefault(str(run["model"]), None)
            untrained = untrained or bool(run.get("untrained"))
            for key in run.get("metrics", []):
                metric_keys.setdefault(key, None)
            if record.get("status") != "ok":
                ds.n_failed += 1
                continue
            ds.n_items += 1
            human = record.get("human") or {}
            edits = []
            for e in record.get("edits", []):
                edit = ProtocolEdit(name=str(e.get("name", "")), role=str(e.get("role", "candidate")),
                                    metrics=dict(e.get("metrics") or {}))
                parts = e.get("bpm")
                if isinstance(parts, dict) and isinstance((e.get("metrics") or {}).get("bpm"), (int, float)):
                    bpm_components.setdefault(name, {})[id(edit)] = parts
                edits.append(edit)
            for edit in edits:
                for key in edit.metrics:
                    metric_keys.setdefault(key, None)
            meta = record.get("meta")
            vote = meta.get("vote_kind") if isinstance(meta, dict) else None
            grouped.setdefault(name, []).append(ProtocolItem(
                id=item_id, edits=edits, preferred=human.get("preferred"), scores=human.get("scores"),
                vote=str(vote) if vote else None))
    for name, components in bpm_components.items():
        if add_dataset_bpm(grouped.get(name, []), components):
            metric_keys.setdefault(BPM_DATASET_KEY, None)
    return datasets, grouped, list(metric_keys), list(models), untrained


#: what the protocol report says when the results have HATIE values but no manifest was given
HATIE_IQ_NEEDS = ("HATIE Image Quality (FID of each model's sources vs its edits) and the totals that use it need the "
                  "run's manifest: add --manifest MANIFEST.jsonl (FID network: --hatie-fid, default "
                  "inception-v3-compat); without it the totals are the criterion part alone")


def _hatie_tables(paths: list[str | Path], manifests: list[str | Path] | None, *, fid: str = "inception-v3-compat",
                 weights: str = "published",
                 settings: Settings | None = None) -> tuple[dict[str, HatieTable], list[str]]:
    """HATIE's per-model table of each results file with HATIE values; Image Quality (the function
    ``hatie table --manifest`` uses) when ``manifests`` are given: one for all files or one per file, in order."""
    with_hatie = []
    for path in paths:
        try:
            with_hatie.append((path, hatie_edits(iter_results(path), path)))
        except InputError:
            continue
    if not with_hatie:
        return {}, []
    if manifests and len(manifests) not in (1, len(paths)):
        raise InputError(f"give one --manifest for all results files or one per results file, in order (got "
                         f"{len(manifests)} for {len(paths)})")
    tables: dict[str, HatieTable] = {}
    notes = [] if manifests else [HATIE_IQ_NEEDS]
    for path, edits in with_hatie:
        iq, missing, errors = None, HATIE_IQ_NEEDS, {}
        if manifests:
            manifest = manifests[0] if len(manifests) == 1 else manifests[paths.index(path)]
            try:  # with IQ's resampled error, so the total's error is `hatie table --manifest`'s
                iq, untrained = image_quality_from_manifest(edits, load_manifest(manifest), fid, settings, errors)
            except WeightsUnavailableError as exc:
                missing = f"HATIE Image Quality not computed: {str(exc).splitlines()[0]}"
                untrained = False
        table = hatie_table(edits, weights=weights, image_quality=iq, settings=settings, iq_missing=missing,
                            iq_errors=errors)
        if iq is not None and untrained:
            table.notes.append(UNTRAINED_IQ)
        tables[str(path)] = table
    return tables, notes


def read_chosen_metrics(paths: list[str | Path], metrics: list[str] | None) -> tuple[
        dict[str, DatasetProtocols], dict[str, list[ProtocolItem]], list[str], list[str], bool]:
    """:func:`read_protocol_items` of ``paths`` with the metrics to compute (``metrics``, each checked to be in
    the results, else every one present); refuses results without a record."""
    datasets, grouped, present, models, untrained = read_protocol_items(list(paths))
    if not datasets:
        raise InputError(f"no records in {', '.join(str(p) for p in paths)}: the results file(s) hold no item (a "
                         "batch that failed before its first item writes none); rerun `batch`")
    keys = present
    if metrics:
        missing = [key for key in metrics if key not in present]
        if missing:
            raise InputError(f"metric(s) {', '.join(missing)} not in the results; present: {', '.join(present) or 'none'}")
        keys = list(metrics)
    return datasets, grouped, keys, models, untrained


def compute_protocols(paths: list[str | Path] | str | Path, *, metrics: list[str] | None = None,
                      n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
                      level: float = DEFAULT_LEVEL, manifests: list[str | Path] | None = None,
                      hatie_fid: str = "inception-v3-compat", hatie_weights: str = "published",
                      settings: Settings | None = None) -> ProtocolReport:
    """Protocol figures for every metric present in the results (or the ``metrics`` asked for), and HATIE's
    per-model table when the results have HATIE values (see :func:`hatie_tables`)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise InputError("give at least one results file")
    if not 0 < level < 1:
        raise InputError(f"the confidence level must be between 0 and 1, got {level}")
    if n_boot < 0:
        raise InputError(f"the number of bootstrap resamples must be >= 0, got {n_boot}")
    datasets, grouped, keys, models, untrained = read_chosen_metrics(list(paths), metrics)
    for name, ds in datasets.items():
        items = grouped.get(name, [])
        for key in keys:
            higher = METRICS[key].higher_is_better if key in METRICS else True
            ds.metrics[key] = evaluate_metric(items, key, higher, n_boot=n_boot, seed=seed, level=level)
    tables, notes = _hatie_tables(list(paths), manifests, fid=hatie_fid, weights=hatie_weights, settings=settings)
    return ProtocolReport(datasets=datasets, metrics=keys, models=models, untrained=untrained, n_boot=n_boot,
                          seed=seed, level=level, sources=[str(p) for p in paths], hatie=tables, hatie_notes=notes)
