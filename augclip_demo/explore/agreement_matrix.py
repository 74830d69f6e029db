"""Agreement over a slice: metric-metric rank correlations and each metric's agreement with the humans.

The metric-human figures are :func:`augclip_demo.metrics.agreement.evaluate_metric` itself (the function
``protocol`` runs per dataset) on the slice's items, rebuilt from the edits table in file order, so on the
same items the numbers are ``protocol``'s. The metric-metric matrix is Spearman's rho (the protocols'
:func:`spearman`) over the slice's edits where both metrics have a value, pooled.

Runs with other settings are not pooled: a slice spanning several runs is refused here with the reason
(choose a run in the slice), while the leaderboard shows them side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
    edits, params = slice_edits(store, active)
    columns = ", ".join(metric_column(k) for k in store.metrics)
    rows = store.query(f"SELECT item, id, model, role, edit, slice_preferred, has_scores, human_score"
                       f"{', ' + columns if columns else ''} FROM {edits} ORDER BY item, edit", params)
    items: list[ProtocolItem] = []
    current: Any = None
    for row in rows:
        item, item_id, model, role, edit, preferred, has_scores, score, *values = row
        if current is None or current[0] != item:
            current = (item, ProtocolItem(id=str(item_id), edits=[], preferred=None,
                                          scores=[] if has_scores else None))
            items.append(current[1])
        entry = current[1]
        if preferred == edit:  # slice_preferred: None unless the chosen edit is in the slice
            entry.preferred = len(entry.edits)
        entry.edits.append(ProtocolEdit(name=model, role=role, metrics=dict(zip(store.metrics, values))))
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
        count = store.query(f"SELECT count(DISTINCT item) FROM {store.table} WHERE {where}", params)[0][0]
        if count > max_items:
            raise InputError(f"the slice has {count} items; the page computes agreement for at most {max_items}: "
                             "narrow the slice, or run `augclip-demo protocol` on the results file")
    return store.remember(("agreement", store.table, where, tuple(params), n_boot, seed, level),
                          lambda: _agreement(store, active, n_boot=n_boot, seed=seed, level=level))


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
