"""Agreement over a slice: metric-metric rank correlations and each metric's agreement with the humans.

The metric-human figures are :func:`augclip_demo.metrics.agreement.evaluate_metric` itself (the function
``protocol`` runs per dataset) on the slice's items, rebuilt from the edits table in file order, so on the
same items the numbers are ``protocol``'s. The metric-metric matrix is Spearman's rho (the protocols'
:func:`spearman`) over the slice's edits where both metrics have a value, pooled. The per-set table of
``augclip-demo agreement`` (pairwise accuracy with and without human ties, s2AFC, Spearman / Kendall for
ratings, the paired test of the best two) is that command's own function on the slice's items grouped by set.

Runs with other settings are not pooled: a slice spanning several runs is refused here with the reason
(choose a run in the slice), while the leaderboard shows them side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..batch.agreement_tables import (
    FIGURE_LABELS,
    NO_JUDGMENTS_IN_SET,
    AgreementReport,
    agreement_report,
    check_settings,
    has_judgments,
)
from ..batch.protocol_tables import BPM_DATASET_KEY, add_dataset_bpm
from ..choices import DEFAULT_AGREEMENT_SEED
from ..errors import InputError
from ..metrics.agreement import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_LEVEL,
    DEFAULT_SEED,
    MetricProtocols,
    ProtocolEdit,
    ProtocolItem,
    evaluate_metric,
    spearman,
)
from .slices import Slice, slice_edits
from .store import ResultsStore, higher_is_better, masked_to_nan, metric_column

#: figures of the metric-human table, in the protocol tables' order: (label, attribute of MetricProtocols)
_HUMAN_FIGURES = (("s2AFC", "s2afc"), ("AccBoth", "acc_both"), ("Pearson r", "pearson"), ("Spearman rho", "spearman"),
                 ("Kendall tau", "kendall"), ("model rank tau", "model_kendall"))
#: bootstrap work bound for a web request: resamples x items (a larger slice gets fewer resamples, or none
#: below :data:`_MIN_BOOTSTRAP`, said so; ``augclip-demo protocol`` has no bound)
_MAX_BOOTSTRAP_WORK = 2_000_000
_MIN_BOOTSTRAP = 50
#: the page's bound on the per-set human agreement's work (:func:`sets_work` units: a unit of the rank
#: correlations took about 2.5 ns on one core of the development machine, so about 4 s)
PAGE_SETS_WORK = 1.5e9
#: the most items the page computes agreement for (a web request; Python API callers choose their own)
PAGE_AGREEMENT_ITEMS = 20_000


@dataclass
class Agreement:
    metrics: list[str]
    rho: dict[tuple[str, str], float | None]  # metric-metric Spearman's rho over edits with both values
    pairs: dict[tuple[str, str], int]
    human: dict[str, MetricProtocols]
    n_items: int
    n_boot: int
    notes: list[str] = field(default_factory=list)

    def matrix(self) -> tuple[list[str], list[list[str]]]:
        from .store import metric_label

        headers = ["rho"] + [metric_label(k) for k in self.metrics]
        rows = [[metric_label(a)] + [_number(self.rho.get((a, b))) for b in self.metrics] for a in self.metrics]
        return headers, rows

    def human_table(self) -> tuple[list[str], list[list[str]]]:
        from .store import metric_label

        headers = ["metric"] + [label for label, _ in _HUMAN_FIGURES]
        rows = []
        for key in self.metrics:
            mp = self.human[key]
            cells = []
            for _, attribute in _HUMAN_FIGURES:
                figure = getattr(mp, attribute)
                if figure is None or figure.value is None:
                    cells.append("n/a")
                    continue
                text = f"{figure.value:.3f}"
                if figure.ci is not None:
                    text += f" [{figure.ci[0]:.2f}, {figure.ci[1]:.2f}]"
                cells.append(text + f" n={figure.n}")
            rows.append([metric_label(key), *cells])
        return headers, rows


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def single_run(store: ResultsStore, active: Slice) -> None:
    """Refuse a slice whose edits come from more than one run (metrics of other settings are not pooled)."""
    where, params = active.where(store)
    runs = [row[0] for row in store.query(f"SELECT DISTINCT run FROM {store.table} WHERE {where} ORDER BY run", params)]
    if len(runs) > 1:
        raise InputError(f"the slice holds edits of {len(runs)} runs with different settings ("
                         + "; ".join(store.runs[r - 1].label() for r in runs)
                         + "): choose one run in the slice's Run filter; their numbers are not pooled")


def protocol_items(store: ResultsStore, active: Slice) -> list[ProtocolItem]:
    """The slice's items as the protocols read them: edits in the file's order, the human choice remapped to
    the edits in the slice (:func:`~augclip_demo.explore.slices.slice_edits`: a choice of an edit outside it is
    no choice), per-edit scores aligned."""
    return [item for _, item, _ in _slice_items(store, active)]


def items_by_set(store: ResultsStore, active: Slice) -> tuple[dict[str, list[ProtocolItem]], list[str]]:
    """The slice's items grouped by set as ``augclip-demo agreement`` groups a results file's (the record's
    ``dataset``, else the file's stem; sets in order of first appearance, items in file order), each with its
    vote kind (the record's ``meta.vote_kind``, with the file's own judgments only: a study's are ratings or
    choices), and the dataset-normalised BPM over the slice's items of each set where the edits kept their BPM
    components. Also the metric keys, as the command lists them (the store's, then ``bpm_dataset``)."""
    recorded = store.judgments == "recorded"
    grouped: dict[str, list[ProtocolItem]] = {}
    components: dict[str, dict[int, dict[str, Any]]] = {}
    for dataset, item, extra in _slice_items(store, active, with_records=True):
        vote, parts = extra
        if recorded and vote:
            item.vote = str(vote)
        grouped.setdefault(dataset, []).append(item)
        for edit, recorded_parts in zip(item.edits, parts):
            if recorded_parts is not None:
                components.setdefault(dataset, {})[id(edit)] = recorded_parts
    keys = list(store.metrics)
    for dataset, found in components.items():
        if add_dataset_bpm(grouped[dataset], found) and BPM_DATASET_KEY not in keys:
            keys.append(BPM_DATASET_KEY)
    return grouped, keys


def _slice_items(store: ResultsStore, active: Slice, *, with_records: bool = False) -> list[tuple[str, ProtocolItem, Any]]:
    """(set, item, extra) of the slice's items in file order; ``with_records``: extra is (the record's vote kind,
    each edit's recorded BPM components or None), read from the records table, else None."""
    edits, params = slice_edits(store, active)
    columns = "".join(f", s.{metric_column(k)}" for k in store.metrics)
    extra, join = "", ""
    if with_records:  # as the command reads them: components only where the edit has a BPM value
        scored = f"s.{metric_column('bpm')} IS NOT NULL" if "bpm" in store.metrics else "false"
        path = "'$[' || s.edit || '].bpm'"
        extra = (f", json_extract_string(r.meta, '$.vote_kind') AS vote, CASE WHEN {scored} AND "
                 f"json_type(r.edits, {path}) = 'OBJECT' THEN CAST(json_extract(r.edits, {path}) AS VARCHAR) END")
        join = " JOIN records r ON r.rowid = s.item"
    rows = store.query(f"SELECT s.item, s.id, s.file_no, s.dataset, s.model, s.role, s.edit, s.slice_preferred, "
                       f"s.has_scores, s.human_score{extra}{columns} FROM {edits} s{join} ORDER BY s.item, s.edit",
                       params)
    items: list[tuple[str, ProtocolItem, Any]] = []
    current: Any = None
    for row in rows:
        item, item_id, file_no, dataset, model, role, edit, preferred, has_scores, score, *rest = row
        vote, parts, values = (rest[0], rest[1], rest[2:]) if with_records else (None, None, rest)
        if current is None or current[0] != item:
            current = (item, ProtocolItem(id=str(item_id), edits=[], preferred=None,
                                          scores=[] if has_scores else None), [])
            name = dataset or store.files[file_no].results.stem
            items.append((str(name), current[1], (vote, current[2]) if with_records else None))
        entry = current[1]
        if preferred == edit:  # slice_preferred: None unless the chosen edit is in the slice
            entry.preferred = len(entry.edits)
        entry.edits.append(ProtocolEdit(name=model, role=role, metrics=dict(zip(store.metrics, values))))
        current[2].append(json.loads(parts) if parts is not None else None)
        if entry.scores is not None:
            entry.scores.append(score)
    return items


def agreement(store: ResultsStore, active: Slice, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
              level: float = DEFAULT_LEVEL, max_items: int | None = None) -> Agreement:
    """The slice's agreement figures; ``max_items`` refuses a larger slice with the reason (the page's bound:
    the protocols walk the items in Python, about 4 s per 20,000 items on one core). Computed once per slice
    and bootstrap settings for a store (:meth:`ResultsStore.remember`): treat the result as read-only."""
    single_run(store, active)
    where, params = active.where(store)
    if max_items is not None:
        _refuse_above(store, active, max_items)
    return store.remember(("agreement", store.table, where, tuple(params), n_boot, seed, level),
                          lambda: _agreement(store, active, n_boot=n_boot, seed=seed, level=level))


def _refuse_above(store: ResultsStore, active: Slice, max_items: int) -> None:
    """Refuse a slice of more than ``max_items`` items (the page's bound), with the reason."""
    where, params = active.where(store)
    count = store.query(f"SELECT count(DISTINCT item) FROM {store.table} WHERE {where}", params)[0][0]
    if count > max_items:
        raise InputError(f"the slice has {count} items; the page computes agreement for at most {max_items}: "
                         "narrow the slice, or run `augclip-demo protocol` (or `agreement`) on the results file")


def _agreement(store: ResultsStore, active: Slice, *, n_boot: int, seed: int, level: float) -> Agreement:
    items = protocol_items(store, active)
    notes = []
    if n_boot > 0 and items and n_boot * len(items) > _MAX_BOOTSTRAP_WORK:
        reduced = _MAX_BOOTSTRAP_WORK // len(items)
        reduced = reduced if reduced >= _MIN_BOOTSTRAP else 0
        notes.append(f"{len(items)} items: " + (f"intervals from {reduced} bootstrap resamples instead of {n_boot}"
                     if reduced else "no intervals (too many items to resample within a page's time)")
                     + "; a smaller slice, or `augclip-demo protocol`, gives the full count")
        n_boot = reduced
    human = {key: evaluate_metric(items, key, higher_is_better(key), n_boot=n_boot, seed=seed, level=level)
             for key in store.metrics}
    rho, pairs = metric_correlations(store, active)
    return Agreement(list(store.metrics), rho, pairs, human, len(items), n_boot, notes)


@dataclass
class SetsAgreement:
    """The slice's table of ``augclip-demo agreement`` (None: no human judgments in the slice), with the
    resamples it used and what the page's bound changed."""

    report: AgreementReport | None
    n_items: int
    n_boot: int
    notes: list[str] = field(default_factory=list)

    def table(self) -> tuple[list[str], list[list[str]]]:
        """Every set's rows of the command's table in one: set, metric, then each figure any set has (n/a where
        a set's metrics lack it); sets without human judgments have no rows (:meth:`lines` says so)."""
        if self.report is None:
            return ["set", "metric"], []
        tables = {name: self.report.table(name) for name in self.report.sets}
        labels = [label for label in FIGURE_LABELS.values() if any(label in h for h, _ in tables.values())]
        rows = []
        for name, (headers, found) in tables.items():
            for row in found:
                cells = dict(zip(headers[1:], row[1:]))
                rows.append([name, row[0], *(cells.get(label, "n/a") for label in labels)])
        return ["set", "metric", *labels], rows

    def lines(self) -> list[str]:
        """In words: the settings, each set's human data and the paired test of its best two, the page's notes."""
        if self.report is None:
            return [f"{self.n_items} items; no human judgments in this slice.", *self.notes]
        report = self.report
        out = [report.settings_line()]
        for name in report.sets:
            test = report.test_line(name)
            _, rows = report.table(name)
            out.append(f"{name}: {report.counts(name)}" + ("" if rows else f"; {NO_JUDGMENTS_IN_SET}")
                       + (f". {test}" if test else ""))
        return out + self.notes


def human_sets(store: ResultsStore, active: Slice, *, n_boot: int = DEFAULT_BOOTSTRAP,
               seed: int = DEFAULT_AGREEMENT_SEED, level: float = DEFAULT_LEVEL, tolerance: float | None = None,
               max_items: int | None = None, max_work: float | None = None) -> SetsAgreement:
    """Which metric agrees with the slice's human judgments, per set and pooled: the report of
    :func:`~augclip_demo.batch.agreement_tables.agreement_report`, the function ``augclip-demo agreement`` runs,
    on the slice's items (:func:`items_by_set`); on a whole results file its figures are the command's.
    ``max_items`` refuses a larger slice; ``max_work`` bounds the statistics' work (:func:`sets_work`): fewer
    resamples (said), or a refusal when the figures alone exceed it. Computed once per slice and settings."""
    check_settings(n_boot, level, tolerance)
    single_run(store, active)
    if max_items is not None:
        _refuse_above(store, active, max_items)
    where, params = active.where(store)
    key = ("human_sets", store.table, where, tuple(params), n_boot, seed, level, tolerance, max_work)
    return store.remember(key, lambda: _human_sets(store, active, n_boot=n_boot, seed=seed, level=level,
                                                   tolerance=tolerance, max_work=max_work))


def _human_sets(store: ResultsStore, active: Slice, *, n_boot: int, seed: int, level: float,
                tolerance: float | None, max_work: float | None) -> SetsAgreement:
    grouped, keys = items_by_set(store, active)
    n_items = sum(len(items) for items in grouped.values())
    if not has_judgments(grouped):
        return SetsAgreement(None, n_items, n_boot)
    notes = []
    if max_work is not None:
        per_pass = sets_work(grouped, keys)  # the figures once, and again per resample
        if per_pass > max_work:
            raise InputError(f"the slice's human ratings make the rank correlations too much work for a page ("
                             f"{n_items} items): narrow the slice, or run `augclip-demo agreement` on the results file")
        allowed = int((max_work - per_pass) // per_pass) if per_pass else n_boot
        if allowed < n_boot:
            reduced = allowed if allowed >= _MIN_BOOTSTRAP else 0
            notes.append(f"{n_items} items: " + (f"intervals from {reduced} bootstrap resamples instead of {n_boot}"
                         if reduced else "no intervals (too much work to resample within a page's time)")
                         + "; a smaller slice, or `augclip-demo agreement`, gives the full count")
            n_boot = reduced
    where, params = active.where(store)
    runs = [store.runs[row[0] - 1] for row in store.query(f"SELECT DISTINCT run FROM {store.table} WHERE {where} "
                                                           "ORDER BY run", params)]
    report = agreement_report(grouped, keys, n_boot=n_boot, seed=seed, level=level, tolerance=tolerance,
                              untrained=any(run.untrained for run in runs),
                              sources=[opened.results.name for opened in store.files],  # names, never folders
                              models=list(dict.fromkeys(str(run.signature["model"]) for run in runs
                                                        if run.signature.get("model"))))
    return SetsAgreement(report, n_items, n_boot, notes)


def sets_work(grouped: dict[str, list[ProtocolItem]], keys: list[str]) -> float:
    """The work of one pass of the human-set figures (the point estimate, or one bootstrap resample), in units
    of about one multiply-add: Kendall's tau-b of rated edits is quadratic in them (three forms per metric), the
    rest linear in pairs and items; the pooled table of several sets counts again."""
    def one(items: list[ProtocolItem]) -> float:
        rated = sum(len(item.scores) for item in items if item.scores is not None and item.vote is None)
        pairs = sum(len(item.scores) * (len(item.scores) - 1) // 2 for item in items if item.scores is not None)
        return len(keys) * (3.0 * rated * rated + 10.0 * (pairs + len(items)))

    total = sum(one(items) for items in grouped.values())
    if len(grouped) > 1:
        total += one([item for items in grouped.values() for item in items])
    return total


def metric_correlations(store: ResultsStore, active: Slice) -> tuple[dict[tuple[str, str], float | None],
                                                                      dict[tuple[str, str], int]]:
    """Spearman's rho of every pair of metrics over the slice's edits with both values (oriented: +1 = the two
    metrics order the edits the same way, whichever direction each counts as better)."""
    where, params = active.where(store)
    keys = store.metrics
    data = store.arrays(f"SELECT {', '.join(f'{metric_column(k)} AS c{i}' for i, k in enumerate(keys))} FROM {store.table} "
                        f"WHERE {where}", params) if keys else {}
    columns = [masked_to_nan(data[f"c{i}"]) * (1 if higher_is_better(k) else -1) for i, k in enumerate(keys)]
    rho: dict[tuple[str, str], float | None] = {}
    pairs: dict[tuple[str, str], int] = {}
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            if j < i:
                rho[(a, b)], pairs[(a, b)] = rho[(b, a)], pairs[(b, a)]
                continue
            both = ~np.isnan(columns[i]) & ~np.isnan(columns[j])
            pairs[(a, b)] = int(both.sum())
            rho[(a, b)] = spearman(columns[i][both], columns[j][both])
    return rho, pairs
