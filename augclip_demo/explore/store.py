"""Results files opened in place with DuckDB: one row per edit, one column per metric, queried per slice.

A results file (JSONL, one ``.parquet`` part, or a folder of Parquet parts as the local runner and the
Ray engine write them; docs/batch.md has the record format) is scanned once by DuckDB into an in-memory
columnar table ``edits`` (item fields, the edit's name / role / path, each metric as a DOUBLE, the human
judgment of that edit, the run it came from). Nothing is loaded into Python objects: the leaderboard,
filters, sorts and pages are SQL over that table, and only the rows a view shows come back.

Several files, or one file written by runs with other settings, are kept apart: every record carries
its run signature (model, numerics, metrics, options, package version, ...; ``run`` in the record), each
distinct signature becomes a numbered *run*, the views group or filter by it, and
:meth:`ResultsStore.run_differences` says what differs between them.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..batch.results_parquet import PART_PREFIX, is_parquet_results, part_files
from ..errors import InputError
from ..lru import LRUCache
from ..metrics.suite import METRICS

_T = TypeVar("_T")

#: run keys that make two runs' numbers different quantities (the resume check's keys, plus the version)
_RUN_KEYS_SHOWN = ("model", "version", "precision", "matmul", "metrics", "options", "bpm", "judge", "features")
#: the columns a slice may filter on with a list of values (``run`` is the run number)
_CATEGORY_FIELDS = ("dataset", "model", "role", "edit_type", "status", "run")
#: the most metric names a results file may hold (the suite has a few dozen; a file with thousands of names
#: would make every view a query of thousands of columns: refused when opened, with the reason)
_MAX_METRICS = 128
#: the most runs (distinct run signatures) a results file may hold: a batch run has one, a few files or resumed
#: runs a handful; a file where every record has its own signature makes every view a view of thousands of runs
MAX_RUNS = 256
_RECORD_COLUMNS = {"id": "VARCHAR", "dataset": "VARCHAR", "status": "VARCHAR", "error": "VARCHAR",
                  "source": "VARCHAR", "target_text": "VARCHAR", "source_text": "VARCHAR",
                  "instruction": "VARCHAR", "edits": "JSON", "human": "JSON", "attributes": "JSON", "meta": "JSON",
                  "run": "JSON"}


def metric_column(key: str) -> str:
    """The ``edits`` table's column of metric ``key`` (quoted: keys are data, never spliced unquoted)."""
    return '"m:' + key.replace('"', '""') + '"'


def masked_to_nan(array: Any) -> np.ndarray:
    """A fetched DuckDB column as float with NaN for NULL (fetchnumpy gives masked arrays for NULLs)."""
    if isinstance(array, np.ma.MaskedArray):
        return array.astype(float).filled(np.nan)
    return np.asarray(array, dtype=float)


def higher_is_better(key: str) -> bool:
    return METRICS[key].higher_is_better if key in METRICS else True


def metric_label(key: str) -> str:
    return METRICS[key].label if key in METRICS else key


@dataclass
class RunInfo:
    """One run signature found in the opened files: its number, where it came from, its settings."""

    number: int
    file: str  # the file's name (never its folder: labels may reach a web page)
    signature: dict[str, Any]
    n_records: int = 0

    @property
    def untrained(self) -> bool:
        return bool(self.signature.get("untrained"))

    def label(self) -> str:
        model = self.signature.get("model", "?")
        version = self.signature.get("version")
        return f"run {self.number}: {model}" + (f", v{version}" if version else "") + f" ({self.file})" + (
            " [untrained]" if self.untrained else "")


@dataclass
class OpenedFile:
    results: Path
    manifest: Path | None = None
    unreadable_lines: int = 0


class ViewStopped(InputError):
    """A view's work stopped before its end because its client cancelled it (or the page went away)."""


@dataclass
class Stop:
    """A view's stop signal: :meth:`set` from another thread (the client cancelled) makes the view's next
    :meth:`check` raise :class:`ViewStopped` and interrupts its DuckDB query if one is running."""

    event: threading.Event = field(default_factory=threading.Event)
    running: Any = None  # the DuckDB connection running this view's query, set by ResultsStore while it runs
    lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self) -> None:
        with self.lock:
            self.event.set()
            running = self.running is not None
        if running:  # an interrupt that lands before DuckDB starts the query is lost: repeated until it ends
            threading.Thread(target=self._interrupt_until_done, daemon=True).start()

    def _interrupt_until_done(self) -> None:
        while True:
            with self.lock:  # cleared under this lock while the store's lock is still held: never another query
                if self.running is None:
                    return
                self.running.interrupt()
            time.sleep(0.05)

    def check(self) -> None:
        if self.event.is_set():
            raise ViewStopped("the view was stopped: its request was cancelled")


_stops = threading.local()


def current_stop() -> Stop:
    """The stop signal of the view this thread computes (a fresh one that is never set outside :func:`stopping`)."""
    return getattr(_stops, "stop", None) or Stop()


class stopping:  # noqa: N801 - used as ``with stopping(stop):``
    """Within this block the thread's views check ``stop`` (:func:`current_stop`)."""

    def __init__(self, stop: Stop):
        self.stop = stop

    def __enter__(self) -> Stop:
        self.previous, _stops.stop = getattr(_stops, "stop", None), self.stop
        return self.stop

    def __exit__(self, *exc: object) -> None:
        _stops.stop = self.previous


@dataclass
class ResultsStore:
    """The opened results: a DuckDB connection holding table ``edits``, the runs and the metric keys."""

    con: Any
    files: list[OpenedFile]
    runs: list[RunInfo]
    metrics: list[str]
    n_records: int
    n_edits: int
    memory_limit_mb: int = 0  # DuckDB's bound for this store (open_results sets it; the out-of-memory message)
    lock: threading.Lock = field(default_factory=threading.Lock)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage of opening
    table: str = "edits"  # the per-edit table the views read (another one: the same edits, a study's judgments)
    judgments: str = "recorded"  # whose human judgments: "recorded" (manifest / records) or a study's label
    _judged: dict[str, ResultsStore] = field(default_factory=dict)  # views with a study's judgments, by label
    _remembered: LRUCache[Any] = field(default_factory=lambda: LRUCache(ResultsStore.MAX_REMEMBERED))  # remember()

    MAX_JUDGED_VIEWS = 4  # each is a copy of the edits table: the oldest is dropped beyond this
    MAX_REMEMBERED = 16

    def remember(self, key: tuple[Any, ...], compute: Callable[[], _T]) -> _T:
        """``compute()``, once per ``key`` for this store: for figures that take seconds (a slice's bootstrap
        intervals) and that the page asks for again on each change of an unrelated control. The opened
        edits never change, so a kept result stays right; the least recently used is forgotten beyond
        MAX_REMEMBERED."""
        value = self._remembered.get(key)
        if value is not None:
            return value
        value = compute()  # outside any lock: the computation queries the store
        self._remembered.put(key, value)
        return value

    def judged(self, label: str) -> ResultsStore | None:
        """The view made by :meth:`with_judgments` for ``label``, if it is still kept."""
        with self.lock:
            return self._judged.get(label)

    def with_judgments(self, found: Any, *, fresh: bool = False) -> ResultsStore:
        """This store with the human judgments of a study (:class:`~augclip_demo.explore.judgments.
        StudyJudgments`) in place of the recorded ones: a view sharing the connection, its own edits table
        (made once per study question and kept for the next request; ``fresh``: made again, with the
        judgments given now)."""
        with self.lock:
            if fresh and found.key in self._judged:
                self.con.execute(f"DROP TABLE IF EXISTS {self._judged.pop(found.key).table}")
            if found.key in self._judged:
                return self._judged[found.key]
            name = f"edits_judged_{abs(hash((found.key, len(self._judged), time.time_ns())))}"
            self.con.execute(f"CREATE TEMP TABLE {name}_h (id VARCHAR, human JSON)")
            if found.human:
                self.con.executemany(f"INSERT INTO {name}_h VALUES (?, ?)",
                                     [[item, json.dumps(human)] for item, human in found.human.items()])
            _, item_columns, edit_columns = _human_judgment_sql()
            self.con.execute(f"""
                CREATE TABLE {name} AS
                WITH j AS (SELECT id AS judged_id, human AS judgment FROM {name}_h),
                     h AS (SELECT judged_id, {item_columns} FROM j)
                SELECT e.* REPLACE ({edit_columns}) FROM edits e LEFT JOIN h ON h.judged_id = e.id
            """)
            self.con.execute(f"DROP TABLE {name}_h")
            while len(self._judged) >= self.MAX_JUDGED_VIEWS:
                oldest = self._judged.pop(next(iter(self._judged)))
                self.con.execute(f"DROP TABLE IF EXISTS {oldest.table}")
            view = dataclasses.replace(self, table=name, judgments=found.label, _judged={}, _remembered=LRUCache(self.MAX_REMEMBERED))
            self._judged[found.key] = view
            return view

    # ------------------------------------------------------------------ queries
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (one connection shared by the app's threads: a cursor each, serialised)."""
        return self._run(sql, params, lambda result: result.fetchall())

    def arrays(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any]:
        """Columns of ``sql`` as numpy arrays."""
        return self._run(sql, params, lambda result: result.fetchnumpy())

    def _run(self, sql: str, params: Sequence[Any], fetch: Callable[[Any], _T]) -> _T:
        """One query under the store's lock, stoppable by the thread's view (:func:`current_stop`); DuckDB's
        out-of-memory and interrupt errors become messages that say what happened."""
        stop = current_stop()
        stop.check()
        with self.lock:
            with stop.lock:  # set before the query starts, or interrupted by set() while it runs: never missed
                stop.running = self.con
                stopped = stop.event.is_set()
            try:
                if stopped:
                    raise ViewStopped("the view was stopped: its request was cancelled")
                return fetch(self.con.execute(sql, list(params)))
            except Exception as exc:
                kind = type(exc).__name__
                if kind == "OutOfMemoryException":
                    raise InputError(f"this view needs more than the {self.memory_limit_mb} MB of memory the server "
                                     "gives one results file; choose a smaller slice (fewer runs, models or "
                                     "metrics) or a smaller file") from None
                if kind == "InterruptException" and stop.event.is_set():
                    raise ViewStopped("the view was stopped: its request was cancelled") from None
                raise
            finally:
                with stop.lock:
                    stop.running = None

    def values(self, column: str) -> list[str]:
        """The distinct values of a category column, for the filter menus."""
        if column not in _CATEGORY_FIELDS:
            raise InputError(f"no filter field {column!r}; fields: {', '.join(_CATEGORY_FIELDS)}")
        rows = self.query(f"SELECT DISTINCT CAST({column} AS VARCHAR) v FROM {self.table} WHERE v IS NOT NULL "
                          "ORDER BY v")
        return [row[0] for row in rows]

    def metric_range(self, key: str) -> tuple[float | None, float | None]:
        rows = self.query(f"SELECT min({metric_column(key)}), max({metric_column(key)}) FROM {self.table}")
        return rows[0][0], rows[0][1]

    @property
    def untrained(self) -> bool:
        return any(run.untrained for run in self.runs)

    def run_differences(self) -> list[str]:
        """What differs between the runs, one line per setting (empty when there is one run)."""
        if len(self.runs) < 2:
            return []
        lines = []
        for key in _RUN_KEYS_SHOWN:
            seen = [run.signature.get(key) for run in self.runs]
            if any(value != seen[0] for value in seen[1:]):
                shown = "; ".join(f"run {run.number}: {_short(value)}" for run, value in zip(self.runs, seen))
                lines.append(f"{key} differs ({shown})")
        if not lines:  # same settings under two files: still two runs, said as such
            lines.append("the same settings, from different files")
        return lines

    def close(self) -> None:
        with self.lock:
            self.con.close()


def _short(value: Any, limit: int = 80) -> str:
    if value is None:
        return "not recorded"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- opening
#: DuckDB's bounds per opened store (docs/security.md, "Bounds on every input"): its memory (a query that needs
#: more fails with :func:`_duckdb_reason`'s message, said as such), its worker threads (two: the app's other
#: requests keep the rest of a small machine), and no spilling to disk (``temp_directory`` empty: an upload
#: cannot fill the server's disk through DuckDB's temporary files)
DEFAULT_MEMORY_MB = 1024
DEFAULT_THREADS = 2


def _connect(memory_limit_mb: int, threads: int) -> Any:
    try:
        import duckdb
    except ImportError:
        raise InputError("the Explore view needs DuckDB: pip install 'augclip-demo[app]' (or pip install duckdb)")\
            from None
    threads = max(1, min(int(threads), os.cpu_count() or 1))
    return duckdb.connect(":memory:", config={"memory_limit": f"{int(memory_limit_mb)}MB", "threads": threads,
                                              "temp_directory": "", "preserve_insertion_order": True})


def duckdb_settings(store: ResultsStore) -> dict[str, str]:
    """The bounds a store runs under, as DuckDB reports them (for the tests and the docs)."""
    names = ("memory_limit", "threads", "temp_directory")
    rows = store.query("SELECT name, value FROM duckdb_settings() WHERE name IN (?, ?, ?)", names)
    return dict(rows)


def _scan_sql(path: Path, *, strict: bool = False) -> tuple[str, list[Any]]:
    """A DuckDB table function over a results file in place, giving :data:`_RECORD_COLUMNS` (``strict``: a JSONL
    line that is not a JSON object is an error instead of being skipped)."""
    if is_parquet_results(path):
        if path.is_dir():
            if not part_files(path):
                raise InputError(f"results {path.name}: the folder holds no {PART_PREFIX}*.parquet files")
            pattern = str(path / f"{PART_PREFIX}*.parquet")
        else:
            pattern = str(path)
        # Parquet results keep nested fields as JSON text (results_parquet.COLUMNS); `fields` and `extra`
        # only restore key order and stage fields, which no view needs.
        casts = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in _RECORD_COLUMNS.items())
        return f"(SELECT {casts} FROM read_parquet(?, union_by_name = true))", [pattern]
    columns = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in _RECORD_COLUMNS.items()) + "}"
    errors = "false" if strict else "true"
    return (f"read_json(?, format = 'newline_delimited', columns = {columns}, ignore_errors = {errors}, "
            f"maximum_object_size = 67108864)"), [str(path)]


def _duckdb_reason(exc: Exception) -> str:
    """DuckDB's first line about a file, with every quoted absolute path cut to its file name (the message may
    reach a web client, which never sees where the server keeps files)."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return re.sub(r"""(['"])(?:[A-Za-z]:)?[/\\][^'"]*?([^/\\'"]*)\1""", r"\1\2\1", first)


def _count_records(path: Path) -> int:
    """Non-blank lines of a JSONL file (what DuckDB should have read; the difference is unreadable lines)."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def _count_lines(path: Path) -> int:
    """Lines of a file, a last one without its newline included: a quick upper bound of :func:`_count_records`
    (bytes.count over large blocks; a line-by-line walk costs five times as much on a 200 MB file)."""
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 23):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def _ends_cleanly(path: Path) -> bool:
    """Whether the file's last line is a whole JSON object (an interrupted run tears it): then DuckDB may read
    the file strictly, which is faster than with ``ignore_errors`` (damage elsewhere falls back to that)."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - (1 << 20)))
        tail = handle.read().rstrip()
    last = tail.rsplit(b"\n", 1)[-1]
    try:
        return size > 0 and isinstance(json.loads(last), dict)
    except ValueError:
        return False


def _load_records(con: Any, number: int, opened: OpenedFile) -> int:
    """Insert the file's records (in file order: ``records.rowid`` is the item number); returns their count."""
    path = opened.results
    if not path.exists():
        raise InputError(f"results {path.name}: not found")
    parquet = is_parquet_results(path)
    lines: list[int] = []
    counter = None
    if not parquet:  # counted while DuckDB reads (the file is in the page cache by then or soon)
        counter = threading.Thread(target=lambda: lines.append(_count_lines(path)), daemon=True)
        counter.start()
    strict = not parquet and _ends_cleanly(path)
    before = con.execute("SELECT count(*) FROM records").fetchone()[0]
    try:
        try:
            scan, params = _scan_sql(path, strict=strict)
            con.execute(f"INSERT INTO records SELECT {number} AS file_no, * FROM {scan} WHERE id IS NOT NULL", params)
        except Exception:  # noqa: BLE001 - a damaged line somewhere (the failed INSERT left nothing): read again,
            if not strict:  # skipping what cannot be read
                raise
            scan, params = _scan_sql(path, strict=False)
            con.execute(f"INSERT INTO records SELECT {number} AS file_no, * FROM {scan} WHERE id IS NOT NULL", params)
    except Exception as exc:  # DuckDB's own errors for a damaged or foreign file
        if type(exc).__name__ == "OutOfMemoryException":
            raise
        raise InputError(f"results {path.name}: could not be read as batch results ({_duckdb_reason(exc)})")\
            from None
    count = con.execute("SELECT count(*) FROM records").fetchone()[0] - before
    if count == 0:
        raise InputError(f"results {path.name}: holds no batch result records (one JSON object per line, each "
                         "with an id, as `augclip-demo batch` writes them)")
    if counter is not None:
        counter.join()
        # the quick count equals the records read on a clean file; otherwise count exactly (blank lines)
        opened.unreadable_lines = 0 if lines[0] == count else max(0, _count_records(path) - count)
    return count


def _load_manifest(con: Any, number: int, manifest: Path) -> None:
    """Manifest fields the records do not keep (``edit_type``) and the human judgments, joined by id."""
    if not manifest.is_file():
        raise InputError(f"manifest {manifest.name}: not found")
    columns = "{'id': 'VARCHAR', 'edit_type': 'VARCHAR', 'human': 'JSON'}"
    try:
        con.execute(f"INSERT INTO manifest SELECT {number}, id, edit_type, human FROM read_json(?, format = "
                    f"'newline_delimited', columns = {columns}, ignore_errors = true)", [str(manifest)])
    except Exception as exc:
        raise InputError(f"manifest {manifest.name}: could not be read ({_duckdb_reason(exc)})") from None


def _human_judgment_sql() -> tuple[str, str, str]:
    """The one place the Explore views read human judgments (the manifest's ``human`` field: ``preferred``, the
    2AFC choice, and ``scores``, one per edit), as SQL: the item's judgment (the manifest given with the
    results, else the copy each record keeps), the item-level columns parsed from it once per record, and the
    per-edit columns made from those (``human_preferred``, ``human_score`` of this edit, ``has_scores``)."""
    judgment = "coalesce(m.human, r.human)"
    item_columns = ("TRY_CAST(json_extract_string(judgment, '$.preferred') AS INTEGER) AS judged_preferred, "
                    "json_extract(judgment, '$.scores') AS judged_scores")
    edit_columns = ("judged_preferred AS human_preferred, "
                    "TRY_CAST(json_extract_string(judged_scores, edit) AS DOUBLE) AS human_score, "
                    "coalesce(json_type(judged_scores) = 'ARRAY', false) AS has_scores")
    return judgment, item_columns, edit_columns


def open_results(files: Sequence[OpenedFile], *, memory_limit_mb: int = DEFAULT_MEMORY_MB,
                 threads: int = DEFAULT_THREADS) -> ResultsStore:
    """Scan ``files`` into one store; raises :class:`InputError` naming the file that cannot be read.
    The store's ``timings`` keep each stage's seconds (for the benchmark)."""
    if not files:
        raise InputError("no results file to open")
    # the statistics need scipy.stats (about 0.5 s to import): imported while DuckDB scans, off the critical path
    threading.Thread(target=importlib.import_module, args=("scipy.stats",), daemon=True).start()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = timings.get(stage, 0.0) + now - clock
        clock = now

    con = _connect(memory_limit_mb, threads)
    con.execute("CREATE TABLE records (file_no INTEGER, "
                + ", ".join(f"{name} {kind}" for name, kind in _RECORD_COLUMNS.items()) + ")")
    con.execute("CREATE TABLE manifest (file_no INTEGER, id VARCHAR, edit_type VARCHAR, human JSON)")
    lap("connect")
    n_records = 0
    try:
        for number, opened in enumerate(files):
            n_records += _load_records(con, number, opened)
            lap("scan records")
            if opened.manifest is not None:
                _load_manifest(con, number, opened.manifest)
                lap("scan manifest")
        try:
            runs = _number_runs(con, files)
            metrics = _metric_keys(con, files)
            lap("runs and metrics")
            _build_edits(con, metrics)
        except Exception as exc:  # noqa: BLE001 - DuckDB's reading of the records' JSON: said with file and line
            if type(exc).__name__ == "OutOfMemoryException" or isinstance(exc, InputError):
                raise
            raise InputError(_unreadable(files, exc)) from None
        n_edits = con.execute("SELECT count(*) FROM edits").fetchone()[0]
        con.execute("DROP TABLE manifest")
        lap("edits table")
    except BaseException as exc:
        con.close()
        if type(exc).__name__ == "OutOfMemoryException":  # duckdb's, wherever it struck
            names = ", ".join(f.results.name for f in files)
            raise InputError(f"results {names}: needs more than the {int(memory_limit_mb)} MB of memory the server "
                             "gives one results file to open it; open a smaller file or a part of the run (the "
                             "operator can list large files with AUGCLIP_EXPLORE_FILES)") from None
        raise
    return ResultsStore(con=con, files=list(files), runs=runs, metrics=metrics, n_records=n_records, n_edits=n_edits,
                        memory_limit_mb=int(memory_limit_mb), timings=timings)


def _number_runs(con: Any, files: Sequence[OpenedFile]) -> list[RunInfo]:
    """Give every distinct (file, run signature) a run number, in order of first appearance."""
    con.execute("CREATE TABLE runs AS SELECT file_no, CAST(run AS VARCHAR) AS signature, min(rowid) AS first, "
                "count(*) AS n FROM records GROUP BY ALL ORDER BY file_no, first")
    count = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    if count > MAX_RUNS:
        names = ", ".join(f.results.name for f in files)
        raise InputError(f"results {names}: {count} runs (records with different run settings); the Explore view "
                         f"opens files with at most {MAX_RUNS} runs (is every record's `run` its own?)")
    rows = con.execute("SELECT file_no, signature, n FROM runs ORDER BY file_no, first").fetchall()
    runs = []
    for number, (file_no, signature, n) in enumerate(rows, start=1):
        parsed = json.loads(signature) if signature else {}
        runs.append(RunInfo(number, files[file_no].results.name, parsed if isinstance(parsed, dict) else {}, n))
    con.execute("ALTER TABLE runs ADD COLUMN number INTEGER")
    con.execute("ALTER TABLE runs ADD COLUMN untrained BOOLEAN")
    con.execute("UPDATE runs SET untrained = coalesce(TRY_CAST(json_extract_string(signature, '$.untrained') AS "
                "BOOLEAN), false)")
    con.execute("UPDATE runs SET number = t.number FROM (SELECT file_no, signature, row_number() OVER "
                "(ORDER BY file_no, first) AS number FROM runs) t WHERE runs.file_no = t.file_no AND "
                "runs.signature IS NOT DISTINCT FROM t.signature")
    return runs


def _unreadable(files: Sequence[OpenedFile], exc: Exception) -> str:
    """What to tell about records DuckDB scanned but could not take apart: the first line of the files that a
    strict JSON reading refuses (duplicate keys, broken JSON) with its problem, else DuckDB's own reason."""
    for opened in files:
        found = _first_bad_line(opened.results)
        if found is not None:
            return f"results {opened.results.name}, line {found[0]}: {found[1]}"
    names = ", ".join(f.results.name for f in files)
    return f"results {names}: could not be read as batch results ({_duckdb_reason(exc)})"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} appears twice in one object")
        seen[key] = value
    return seen


def _first_bad_line(path: Path) -> tuple[int, str] | None:
    """(line number, problem) of the first non-blank line of a JSONL file that is not one JSON object with each
    key once; None for a clean file or a Parquet one (read within the upload bound, after DuckDB failed)."""
    if is_parquet_results(path):
        return None
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw, object_pairs_hook=_no_duplicate_keys)
            except ValueError as exc:  # JSONDecodeError included, and the duplicate key
                return number, str(exc).split(": line ")[0]
            except RecursionError:
                return number, "nested too deeply"
            if not isinstance(value, dict):
                return number, "not a JSON object"
    return None


def _metric_keys(con: Any, files: Sequence[OpenedFile] = ()) -> list[str]:
    """Every metric named by a run or present in an edit, in the runs' order first. Names that differ only in
    case are refused: DuckDB's columns and struct fields ignore case, so they would be one column."""
    keys: dict[str, None] = {}
    for (signature,) in con.execute("SELECT signature FROM runs ORDER BY number").fetchall():
        parsed = json.loads(signature) if signature else {}
        named = parsed.get("metrics") if isinstance(parsed, dict) else None  # a foreign `run`: no names from it
        for key in named if isinstance(named, list) else []:
            keys.setdefault(str(key), None)
    # the runner writes every metric of the run in every edit: one ok record per run shows the rest
    rows = con.execute("SELECT DISTINCT unnest(json_keys(json_extract(e, 'metrics'))) FROM (SELECT "
                       "unnest(CAST(any_value(edits) AS JSON[])) AS e FROM records WHERE status = 'ok' "
                       "GROUP BY file_no, CAST(run AS VARCHAR))").fetchall()
    for (key,) in rows:
        keys.setdefault(str(key), None)
    by_case: dict[str, list[str]] = {}
    for key in keys:
        by_case.setdefault(key.casefold(), []).append(key)
    clashes = [names for names in by_case.values() if len(names) > 1]
    if clashes:
        where = ", ".join(f.results.name for f in files) or "the results"
        shown = "; ".join(", ".join(names) for names in clashes[:5])
        raise InputError(f"results {where}: metric names that differ only in case ({shown}); the Explore view "
                         "cannot keep them apart: rename them so that each name differs in more than case")
    if len(keys) > _MAX_METRICS:
        raise InputError(f"the results name {len(keys)} metrics; the Explore view opens files with at most "
                         f"{_MAX_METRICS} (is this a batch results file?)")
    return list(keys)


def _build_edits(con: Any, metrics: Sequence[str]) -> None:
    """Table ``edits``: each record's edits parsed once into typed columns (metric values as DOUBLE); a file
    whose metric values are not all numbers (a foreign writer) takes the slower per-value JSON path."""
    typed = json.dumps([{"name": "VARCHAR", "role": "VARCHAR", "path": "VARCHAR",
                         "metrics": {key: "DOUBLE" for key in metrics} if metrics else "JSON"}])
    try:
        _edits_table(con, f"from_json(edits, {_literal(typed)})", metrics,
                     [f"struct_extract(e.metrics, {_literal(key)})" for key in metrics])
    except Exception:  # noqa: BLE001 - DuckDB's conversion error: fall back to reading each value as JSON
        loose = json.dumps([{"name": "VARCHAR", "role": "VARCHAR", "path": "VARCHAR", "metrics": "JSON"}])
        _edits_table(con, f"from_json(edits, {_literal(loose)})", metrics,
                     [f"TRY_CAST(json_extract_string(e.metrics, {_literal(key)}) AS DOUBLE)" for key in metrics])


def _edits_table(con: Any, parsed_sql: str, metrics: Sequence[str], metric_values: Sequence[str]) -> None:
    """One row per edit. ``item`` is the record's ``rowid`` (file order, across the files in their order); the
    table is left unordered (every view orders what it reads: sorting 300,000 rows here cost a third of it)."""
    metric_sql = "".join(f", {value} AS {metric_column(key)}" for key, value in zip(metrics, metric_values))
    judgment, item_columns, edit_columns = _human_judgment_sql()
    con.execute(f"""
        CREATE OR REPLACE TABLE edits AS
        WITH r AS (SELECT r.rowid AS item, r.file_no, r.id, r.dataset, r.status, r.source, r.target_text,
                          r.instruction, {parsed_sql} AS parsed, {judgment} AS judgment, m.edit_type AS edit_type,
                          runs.number AS run, runs.untrained AS untrained
                   FROM records r
                   JOIN runs ON runs.file_no = r.file_no AND runs.signature IS NOT DISTINCT FROM CAST(r.run AS VARCHAR)
                   LEFT JOIN manifest m ON m.file_no = r.file_no AND m.id = r.id),
             h AS (SELECT * EXCLUDE (judgment), {item_columns} FROM r),
             x AS (SELECT * EXCLUDE (parsed), unnest(parsed) AS e, generate_subscripts(parsed, 1) - 1 AS edit FROM h)
        SELECT item, file_no, id, dataset, status, run, untrained, edit_type, source, target_text, instruction, edit,
               coalesce(e.name, '') AS model, coalesce(e.role, 'candidate') AS role, e.path AS path,
               {edit_columns}
               {metric_sql}
        FROM x
    """)


def _literal(text: str) -> str:
    """A SQL string literal (metric keys come from the file: quoted, never spliced raw)."""
    return "'" + text.replace("'", "''") + "'"
