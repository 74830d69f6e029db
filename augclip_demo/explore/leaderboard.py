"""The leaderboard: one row per editing model (per run), one column per metric: mean, 95% interval, rank,
beside the human rank and Kendall's tau between the models' metric means and human means.

* **Model** is the edit's ``name`` (the manifest's editing-model field; it defaults to the file name or
  the role there). Runs with other settings are never pooled: a model appears once per run.
* **Mean and interval** per (run, model, metric) over the slice's edits with a value. The interval is the
  percentile bootstrap of :func:`augclip_demo.metrics.agreement.mean_figure` (the protocols' function,
  1000 resamples, seed 0) up to :data:`_BOOTSTRAP_MAX_N` values; above it the normal interval
  ``mean +- z * sd / sqrt(n)``, which a bootstrap of a mean of that many values reproduces to within its own
  Monte-Carlo error, and which keeps a 100,000-item leaderboard interactive. Each cell says which.
* **Rank** under each metric: 1 = best (lower-is-better metrics such as L2 count reversed), average ranks
  on ties, within the run.
* **Human rank and tau** follow the protocols' per-model rank agreement (AugCLIP, Table 4 of the later
  version; :mod:`augclip_demo.metrics.agreement`): only ``gt`` / ``candidate`` edits with both a metric
  value and a human value (the human score, else the 2AFC win 1 / 0, the choice read within the slice as
  every view reads it: :func:`augclip_demo.explore.slices.slice_edits`) count; tau is Kendall's tau-b of the
  oriented metric means against the human means, as the protocols' :func:`kendall` computes it (from the pair
  counts of every run at once, :class:`_RunPairs`), so it equals ``protocol``'s ``model tau`` on the same edits.
* **Cost**: ranks and taus of every run come from one sort and one table of pairs, so a leaderboard is linear in
  its rows; a file holds at most ``store.MAX_RUNS`` runs and a leaderboard at most :data:`MAX_LEADERBOARD_CELLS`
  cells (both refused by name), and its work stops when its client cancels (:func:`.store.current_stop`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from ..errors import InputError
from ..metrics.agreement import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL, DEFAULT_SEED, kendall, mean_figure
from .slices import Slice, slice_edits
from .store import ResultsStore, current_stop, higher_is_better, metric_column

#: cells with more values than this get the normal interval instead of the bootstrap (see the module doc)
_BOOTSTRAP_MAX_N = 5000
#: the most cells bootstrapped in one leaderboard (each is a query and 1000 resamples: a slice with hundreds
#: of editing models would stall the page); above it every cell gets the normal interval, said in a note
MAX_BOOTSTRAP_CELLS = 200
#: the per-edit human value of the protocols' model ranking: the score, else the 2AFC win, the choice read
#: within the slice (:func:`augclip_demo.explore.slices.slice_edits`: a choice outside it is no choice)
_HUMAN_VALUE_SQL = ("CASE WHEN has_scores THEN human_score WHEN slice_preferred IS NOT NULL THEN "
                   "CAST(edit = slice_preferred AS DOUBLE) END")
_RANKED_ROLES_SQL = "role NOT IN ('ep', 'em')"
#: the most cells (rows of run and model times metrics) one leaderboard computes: a slice of thousands of editing
#: models under a hundred metrics would hold a worker for minutes and send the page a table nobody reads;
#: refused with the figures and what to narrow instead
MAX_LEADERBOARD_CELLS = 50_000


@dataclass
class Cell:
    mean: float | None
    n: int
    ci: tuple[float, float] | None = None
    ci_method: str = ""  # "bootstrap" or "normal"
    rank: float | None = None


@dataclass
class LeaderRow:
    run: int
    model: str
    untrained: bool
    n_edits: int
    cells: dict[str, Cell]
    human_mean: float | None = None
    human_rank: float | None = None


@dataclass
class Leaderboard:
    metrics: list[str]
    rows: list[LeaderRow]
    tau: dict[tuple[int, str], float | None] = field(default_factory=dict)  # (run, metric) -> Kendall's tau-b
    notes: list[str] = field(default_factory=list)

    def table(self) -> tuple[list[str], list[list[str]]]:
        """(headers, rows) for people: mean [low, high] (#rank) per metric, the human rank, then tau rows."""
        from .store import metric_label

        headers = ["run", "model", "edits", "human (#rank)"] + [metric_label(k) for k in self.metrics]
        rows = []
        for row in self.rows:
            human = "n/a" if row.human_mean is None else f"{row.human_mean:.4f} (#{row.human_rank:g})"
            cells = [_format_cell(row.cells[key]) for key in self.metrics]
            rows.append([str(row.run), row.model + (" [untrained]" if row.untrained else ""), str(row.n_edits),
                         human, *cells])
        for run in sorted({row.run for row in self.rows}):
            taus = [self.tau.get((run, key)) for key in self.metrics]
            if any(t is not None for t in taus):
                rows.append([str(run), "Kendall tau vs human ranks", "", "",
                             *("n/a" if t is None else f"{t:.3f}" for t in taus)])
        return headers, rows


def _format_cell(cell: Cell) -> str:
    if cell.mean is None:
        return "n/a"
    text = f"{cell.mean:.4f}"
    if cell.ci is not None:
        text += f" [{cell.ci[0]:.4f}, {cell.ci[1]:.4f}]" + ("" if cell.ci_method == "bootstrap" else " N")
    return text + (f" (#{cell.rank:g})" if cell.rank is not None else "")


def _group_ranks(groups: np.ndarray, means: Sequence[float | None], higher: bool) -> list[float | None]:
    """Ranks within each group at once (one sort, no per-group loop): 1 = best, average ranks on ties,
    None where there is no mean. Equals scipy's ``rankdata`` of the negated oriented means in each group."""
    values = np.array([np.nan if m is None else (m if higher else -m) for m in means], float)
    present = np.flatnonzero(~np.isnan(values))
    ranks: list[float | None] = [None] * len(values)
    if not len(present):
        return ranks
    order = present[np.lexsort((-values[present], groups[present]))]
    g, v = groups[order], values[order]
    new_group = np.r_[True, g[1:] != g[:-1]]
    new_block = new_group | np.r_[True, v[1:] != v[:-1]]  # a block: equal means within a group
    position = np.arange(len(order))
    ordinal = position - np.maximum.accumulate(np.where(new_group, position, 0)) + 1
    starts = np.flatnonzero(new_block)
    ends = np.r_[starts[1:], len(order)] - 1
    average = (ordinal[starts] + ordinal[ends]) / 2.0
    for index, rank in zip(order, np.repeat(average, ends - starts + 1)):
        ranks[index] = float(rank)
    return ranks


def leaderboard(store: ResultsStore, active: Slice, *, n_boot: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED,
                level: float = DEFAULT_LEVEL) -> Leaderboard:
    """The slice's leaderboard (one SQL aggregate; bootstrap values fetched only for small cells)."""
    where, params = active.where(store)
    stop = current_stop()
    (groups,), = store.query(f"SELECT count(DISTINCT (run, model)) FROM {store.table} WHERE {where}", params)
    cells = groups * max(1, len(store.metrics))
    if cells > MAX_LEADERBOARD_CELLS:
        raise InputError(f"the leaderboard of slice {active.name!r} would have {groups} rows (run and model) x "
                         f"{len(store.metrics)} metrics = {cells} cells; it computes at most {MAX_LEADERBOARD_CELLS}: "
                         "choose fewer runs or models in the slice")
    edits, edit_params = slice_edits(store, active)
    human = _HUMAN_VALUE_SQL
    aggregates = [f"avg({human}) FILTER (WHERE {_RANKED_ROLES_SQL})"]
    for key in store.metrics:
        col = metric_column(key)
        joint = f"{col} IS NOT NULL AND ({human}) IS NOT NULL AND {_RANKED_ROLES_SQL}"
        aggregates += [f"avg({col})", f"count({col})", f"stddev_samp({col})", f"avg({col}) FILTER (WHERE {joint})",
                       f"avg({human}) FILTER (WHERE {joint})"]
    sql = (f"SELECT run, model, bool_or(untrained), count(*), {', '.join(aggregates)} FROM {edits} "
           f"GROUP BY run, model ORDER BY run, model")
    fetched = store.query(sql, edit_params)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    small = sum(1 for record in fetched for i in range(len(store.metrics)) if 0 < record[6 + 5 * i] <= _BOOTSTRAP_MAX_N)
    if small > MAX_BOOTSTRAP_CELLS:
        n_boot = 0
    rows, joint_means = [], []
    for record in fetched:
        stop.check()
        run, model, untrained, n_edits, human_mean, *rest = record
        cells, joint = {}, {}
        for i, key in enumerate(store.metrics):
            mean, n, sd, joint_metric, joint_human = rest[5 * i: 5 * i + 5]
            cell = Cell(mean, int(n))
            if n and n <= _BOOTSTRAP_MAX_N and n_boot > 0:
                values = store.arrays(f"SELECT {metric_column(key)} v FROM {store.table} WHERE {where} AND run = ? AND "
                                      f"model = ? AND {metric_column(key)} IS NOT NULL ORDER BY item, edit",
                                      [*params, run, model])["v"]
                figure = mean_figure(values, n_boot=n_boot, seed=seed, level=level)
                cell.ci, cell.ci_method = figure.ci, "bootstrap"
            elif n and n > 1 and sd is not None:
                half = z * sd / math.sqrt(n)
                cell.ci, cell.ci_method = (mean - half, mean + half), "normal"
            cells[key] = cell
            joint[key] = (joint_metric, joint_human)
        rows.append(LeaderRow(int(run), str(model), bool(untrained), int(n_edits), cells, human_mean))
        joint_means.append(joint)
    board = Leaderboard(list(store.metrics), rows)
    runs = np.array([row.run for row in rows], dtype=np.int64)
    members: dict[int, list[int]] = {}  # the rows of each run, found once (not a scan of every row per run)
    for i, row in enumerate(rows):
        members.setdefault(row.run, []).append(i)
    pairs = _RunPairs.of(members)
    for key in store.metrics:
        stop.check()
        higher = higher_is_better(key)
        for row, rank in zip(rows, _group_ranks(runs, [row.cells[key].mean for row in rows], higher)):
            row.cells[key].rank = rank
        joint = [joint_means[i][key] for i in range(len(rows))]
        board.tau.update({(run, key): tau for run, tau in pairs.taus(joint, higher).items()})
        for run in pairs.large:
            board.tau[(run, key)] = _model_tau([joint[i] for i in members[run]], higher)
    for row, rank in zip(rows, _group_ranks(runs, [row.human_mean for row in rows], True)):
        row.human_rank = rank
    if small > MAX_BOOTSTRAP_CELLS:
        board.notes.append(f"{small} cells: all intervals are normal intervals (a bootstrap of more than "
                           f"{MAX_BOOTSTRAP_CELLS} cells would stall the page)")
    elif any(row.cells[k].ci_method == "normal" for row in rows for k in store.metrics):
        board.notes.append(f"intervals marked N are normal intervals (more than {_BOOTSTRAP_MAX_N} values); the "
                           f"others are percentile bootstrap intervals ({n_boot} resamples, seed {seed})")
    return board


def _model_tau(pairs: list[tuple[float | None, float | None]], higher: bool) -> float | None:
    """Kendall's tau-b between the models' oriented metric means and human means, over the models with both
    (as the protocols rank the models that have a ranked edit with both values); at least two models."""
    pairs = [(m, h) for m, h in pairs if m is not None and h is not None]
    if len(pairs) < 2:
        return None
    metric = [m if higher else -m for m, _ in pairs]  # type: ignore[operator]
    return kendall(metric, [h for _, h in pairs])  # type: ignore[misc]


#: runs with at most this many rows get Kendall's tau from all their pairs at once (:class:`_RunPairs`); larger
#: runs (few, under the cells bound) one call of the protocols' function each
_PAIRWISE_MAX_ROWS = 64


@dataclass
class _RunPairs:
    """Every pair of rows within the same small run, once per leaderboard: each metric's Kendall tau-b of every
    small run is then a few array operations over these pairs, not one library call per run and metric."""

    first: np.ndarray
    second: np.ndarray
    run_index: np.ndarray  # the pair's run, as an index into ``runs``
    runs: list[int]
    large: list[int]  # runs with more than _PAIRWISE_MAX_ROWS rows

    @classmethod
    def of(cls, members: dict[int, list[int]]) -> _RunPairs:
        first, second, index, runs, large = [], [], [], [], []
        for run, rows in members.items():
            if len(rows) > _PAIRWISE_MAX_ROWS:
                large.append(run)
                continue
            i, j = np.triu_indices(len(rows), k=1)
            chosen = np.asarray(rows, dtype=np.int64)
            first.append(chosen[i])
            second.append(chosen[j])
            index.append(np.full(len(i), len(runs), dtype=np.int64))
            runs.append(run)
        empty = np.zeros(0, dtype=np.int64)
        return cls(np.concatenate(first) if first else empty, np.concatenate(second) if second else empty,
                   np.concatenate(index) if index else empty, runs, large)

    def taus(self, joint: Sequence[tuple[float | None, float | None]], higher: bool) -> dict[int, float | None]:
        """Kendall's tau-b of each small run's oriented metric means against its human means (the rows with
        both), as :func:`_model_tau` gives it: scipy's tau-b from the pair counts, None below two rows or
        when either side is constant."""
        metric = np.array([np.nan if m is None or h is None else (m if higher else -m) for m, h in joint], float)
        human = np.array([np.nan if m is None or h is None else h for m, h in joint], float)
        dx = np.sign(metric[self.first] - metric[self.second])
        dy = np.sign(human[self.first] - human[self.second])
        valid = ~(np.isnan(dx) | np.isnan(dy))
        size = len(self.runs)

        def count(mask: np.ndarray) -> np.ndarray:
            return np.bincount(self.run_index[valid & mask], minlength=size).astype(np.int64)

        total = count(np.ones(len(valid), bool))
        x_tie, y_tie = count(dx == 0), count(dy == 0)
        both_tie, discordant = count((dx == 0) & (dy == 0)), count(dx * dy < 0)
        con_minus_dis = total - x_tie - y_tie + both_tie - 2 * discordant
        defined = (total > 0) & (x_tie < total) & (y_tie < total)
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = np.clip(con_minus_dis / np.sqrt(total - x_tie) / np.sqrt(total - y_tie), -1.0, 1.0)
        return {run: float(t) if ok else None for run, t, ok in zip(self.runs, tau.tolist(), defined.tolist())}
