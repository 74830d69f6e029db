"""Round three of the hardening (issue 42): the Explore leaderboard, forwarded addresses, metric names that
differ only in case, and results files DuckDB cannot take apart.

The quick tests check the pieces in process (ranks and Kendall's tau against scipy, the bounds, the stop
signal, the out-of-memory message). The families marked slow send the attacks to ``python app.py`` on
127.0.0.1, started with a proxy allow-list that does not hold 127.0.0.1, so every forged X-Forwarded-For of
these requests must be ignored. No assertion depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from scipy.stats import rankdata

from augclip_demo.errors import InputError
from augclip_demo.explore import OpenedFile, make_slice, open_results
from augclip_demo.explore import store as store_module
from augclip_demo.explore.store import Stop, ViewStopped, stopping
from augclip_demo.metrics.agreement import kendall
from tests.explore.constructed import constructed_records, write_jsonl
from tests.security import probes
from tests.security.servers import AppProcess, start_app
from tests.security.test_attack import SERVER_PATH, ExploreOpen, explore_refused, page_event
from tests.study.helpers import OPERATOR_TOKEN, write_study_manifest

board_module = sys.modules["augclip_demo.explore.leaderboard"]  # the package exports a function of that name


# ------------------------------------------------------------------------------------- 1: the leaderboard
def test_group_ranks_equal_scipys_ranks_in_every_group():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 40, 400)
    means = [None if rng.random() < 0.1 else float(rng.integers(0, 6)) for _ in range(400)]  # many ties
    for higher in (True, False):
        got = board_module._group_ranks(groups, means, higher)
        for group in np.unique(groups):
            index = [i for i in np.flatnonzero(groups == group) if means[i] is not None]
            oriented = np.array([means[i] if higher else -means[i] for i in index])
            assert [got[i] for i in index] == list(rankdata(-oriented)), group
            assert all(got[i] is None for i in np.flatnonzero(groups == group) if means[i] is None)


def test_run_taus_equal_the_protocols_kendall_per_run():
    rng = np.random.default_rng(4)
    members = {run: list(range(10 * run, 10 * run + size)) for run, size in enumerate([1, 2, 3, 7, 10])}
    rows = sum(len(v) for v in members.values()) + 10 * 5
    joint = [(None if rng.random() < 0.15 else float(rng.integers(0, 4)),
              None if rng.random() < 0.15 else float(rng.integers(0, 3))) for _ in range(rows)]
    for higher in (True, False):
        got = board_module._RunPairs.of(members).taus(joint, higher)
        for run, indices in members.items():
            pairs = [joint[i] for i in indices if joint[i][0] is not None and joint[i][1] is not None]
            expected = None if len(pairs) < 2 else kendall([m if higher else -m for m, _ in pairs],
                                                            [h for _, h in pairs])
            assert got[run] == expected, (run, got[run], expected)


def test_a_file_of_thousands_of_runs_is_refused_when_opened(tmp_path):
    path = probes.many_runs_results(tmp_path / "many.jsonl", records=store_module.MAX_RUNS + 1, metrics=8,
                                    per_edit=4)
    with pytest.raises(InputError, match=rf"many.jsonl: {store_module.MAX_RUNS + 1} runs \(records with different "
                                         rf"run settings\); the Explore view opens files with at most "
                                         rf"{store_module.MAX_RUNS} runs"):
        open_results([OpenedFile(path)])
    fine = probes.many_runs_results(tmp_path / "fine.jsonl", records=store_module.MAX_RUNS, metrics=8, per_edit=4)
    assert len(open_results([OpenedFile(fine)]).runs) == store_module.MAX_RUNS


def test_the_leaderboard_bounds_its_cells(tmp_path, monkeypatch):
    store = open_results([OpenedFile(probes.many_runs_results(tmp_path / "r.jsonl", records=20, metrics=8,
                                                              per_edit=4))])
    cells = 20 * 2 * 8  # 20 runs of two models, 8 metrics
    monkeypatch.setattr(board_module, "MAX_LEADERBOARD_CELLS", cells - 1)
    with pytest.raises(InputError, match=rf"would have 40 rows \(run and model\) x 8 metrics = {cells} cells; it "
                                         rf"computes at most {cells - 1}: choose fewer runs or models"):
        board_module.leaderboard(store, make_slice())
    narrowed = board_module.leaderboard(store, make_slice(runs=[1, 2, 3]))  # a slice under the bound: computed
    assert len(narrowed.rows) == 6
    monkeypatch.setattr(board_module, "MAX_LEADERBOARD_CELLS", cells)
    assert len(board_module.leaderboard(store, make_slice()).rows) == 40


def test_a_stopped_view_stops_before_and_during_its_query(tmp_path):
    store = open_results([OpenedFile(write_jsonl(constructed_records(), tmp_path / "r.jsonl"))])
    stop = Stop()
    stop.set()
    with stopping(stop), pytest.raises(ViewStopped, match="the view was stopped"):
        board_module.leaderboard(store, make_slice())
    # set while DuckDB runs a long query of this view: the query is interrupted
    stop, outcome = Stop(), []

    def run() -> None:
        with stopping(stop):
            try:
                store.query("SELECT count(*) FROM range(1000000000000) a")
            except ViewStopped as exc:
                outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    while stop.running is None and worker.is_alive():
        time.sleep(0.01)
    stop.set()
    worker.join(timeout=120)
    assert not worker.is_alive() and len(outcome) == 1, outcome
    assert len(board_module.leaderboard(store, make_slice()).rows) > 0  # the store answers the next view


def test_a_cancelled_event_stops_its_worker_thread(tmp_path):
    from augclip_demo.ui.stoppable import run_stoppable

    store = open_results([OpenedFile(write_jsonl(constructed_records(), tmp_path / "r.jsonl"))])
    outcome: list[Exception] = []

    def work() -> None:  # a view whose query would run for hours
        try:
            store.query("SELECT count(*) FROM range(1000000000000) a")
        except ViewStopped as exc:
            outcome.append(exc)

    async def cancel_when_running() -> None:
        task = asyncio.ensure_future(run_stoppable(work))
        while not store.lock.locked():  # the worker's query holds the store
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_when_running())
    deadline = time.monotonic() + 120  # a bound on the wait, not a speed asserted
    while not outcome and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(outcome) == 1 and "stopped" in str(outcome[0])
    assert store.query("SELECT count(*) FROM edits")[0][0] == store.n_edits


def test_a_view_that_needs_more_memory_than_the_store_has_is_said_as_such(tmp_path):
    store = open_results([OpenedFile(write_jsonl(constructed_records(), tmp_path / "r.jsonl"))])
    store.con.execute("SET memory_limit = '32MB'")  # opened, then given less memory than this view needs
    store.memory_limit_mb = 32
    with pytest.raises(InputError, match="this view needs more than the 32 MB of memory the server gives one "
                                         "results file; choose a smaller slice"):
        store.query("SELECT count(DISTINCT CAST(range AS VARCHAR) || 'padding to make each string long') "
                    "FROM range(30000000)")
    assert store.query("SELECT count(*) FROM edits")[0][0] == store.n_edits  # and it goes on answering


# ------------------------------------------------------------------------------------- 6: names and lines
def _metric_lines(metrics: str, n: int = 2) -> str:
    return "".join(json.dumps({"id": f"r{i}", "status": "ok", "edits": [{"name": "A", "metrics": json.loads(metrics)}]})
                   + "\n" for i in range(n))


def test_metric_names_that_differ_only_in_case_are_refused_by_name(tmp_path):
    path = probes.write(tmp_path / "case.jsonl", _metric_lines('{"Score": 1.0, "score": 2.0, "SCORE": 3.0}'))
    with pytest.raises(InputError) as info:
        open_results([OpenedFile(path)])
    text = str(info.value)
    assert "case.jsonl: metric names that differ only in case (" in text
    assert all(name in text for name in ("Score", "score", "SCORE")), text
    kept = open_results([OpenedFile(probes.write(tmp_path / "apart.jsonl", _metric_lines('{"score": 1.0, "s2": 2.0}')))])
    assert kept.metrics == ["score", "s2"]


def test_records_duckdb_cannot_take_apart_are_named_with_file_line_and_problem(tmp_path, monkeypatch):
    lines = _metric_lines('{"s": 1.0}') + '{"id": "r9", "status": "ok", "status": "failed", "edits": []}\n'
    path = probes.write(tmp_path / "dup.jsonl", lines)

    def duckdb_refuses(con, metrics):  # DuckDB's error when its JSON reader meets such a record
        raise RuntimeError("Invalid Input Error: Duplicate keys in object")

    monkeypatch.setattr(store_module, "_build_edits", duckdb_refuses)
    with pytest.raises(InputError, match=r"results dup.jsonl, line 3: the key 'status' appears twice in one object"):
        open_results([OpenedFile(path)])
    clean = probes.write(tmp_path / "clean.jsonl", _metric_lines('{"s": 1.0}'))
    with pytest.raises(InputError, match=r"results clean.jsonl: could not be read as batch results \(Invalid Input "
                                         r"Error: Duplicate keys in object\)"):
        open_results([OpenedFile(clean)])


def test_a_run_field_that_is_not_an_object_is_read_without_names(tmp_path):
    path = probes.write(tmp_path / "run.jsonl", json.dumps({"id": "a", "status": "ok", "run": [1, 2], "edits": [
        {"name": "A", "metrics": {"s": 1.0}}]}) + "\n")
    assert open_results([OpenedFile(path)]).metrics == ["s"]


# ------------------------------------------------------------------------------------- against a server
PROXY = "10.9.9.9"  # the only proxy the server believes; the tests connect from 127.0.0.1


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> AppProcess:
    runs = tmp_path_factory.mktemp("operator-runs")
    results = write_jsonl(constructed_records(), runs / "results.jsonl")
    app = start_app(tmp_path_factory.mktemp("round3"), env={"AUGCLIP_EXPLORE_FILES": str(results),
                                                             "AUGCLIP_STUDY_OPERATOR_TOKEN": OPERATOR_TOKEN,
                                                             "AUGCLIP_FORWARDED_ALLOW_IPS": PROXY})
    yield app
    app.stop()


class ExploreSession(ExploreOpen):
    """Explore's Open and then its views, in one browser session (the views read the session's state)."""

    def __init__(self, app: AppProcess):
        super().__init__(app)
        config = httpx.get(f"{self.url}config", timeout=60).json()
        self.views_fn = next(d["id"] for d in config["dependencies"] if d.get("trigger_after") == self.fn)

    def open_and_view(self, upload: dict) -> tuple[dict, dict | None]:
        session = uuid.uuid4().hex
        answers = []
        with httpx.Client(timeout=180) as http:
            for fn, data in ((self.fn, [None, upload, None]), (self.views_fn, [None, None, "id", False, 1])):
                joined = http.post(f"{self.url}gradio_api/queue/join", json={
                    "data": data, "fn_index": fn, "session_hash": session, "event_data": None})
                assert joined.status_code == 200, joined.text
                with http.stream("GET", f"{self.url}gradio_api/queue/data", params={"session_hash": session}) as s:
                    for line in s.iter_lines():
                        if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_completed":
                            answers.append(json.loads(line[5:]))
                            break
                if not answers[-1]["success"]:
                    return answers[0], answers[1] if len(answers) > 1 else None
        return answers[0], answers[1]


def _operator_opens(session: ExploreSession) -> None:
    answer = session("results.jsonl", None)
    assert answer["success"], answer
    assert f"{len(constructed_records())} records" in json.dumps(answer["output"]["data"])


@pytest.mark.slow
def test_1_a_file_of_many_runs_or_cells_is_refused_by_name_and_others_go_on(app, tmp_path):
    session = ExploreSession(app)
    crafted = probes.many_runs_results(tmp_path / "runs.jsonl")  # 3,000 runs, 120 metric names
    text = explore_refused(session(None, session.upload(crafted)))
    assert f"runs.jsonl: 3000 runs (records with different run settings); the Explore view opens files with at " \
           f"most {store_module.MAX_RUNS} runs" in text, text
    _operator_opens(session)
    # one run, 420 editing models under 120 metrics (50,400 cells): opens, and its leaderboard is refused
    wide = tmp_path / "wide.jsonl"
    names = [f"metric{k:03d}" for k in range(120)]
    models = board_module.MAX_LEADERBOARD_CELLS // len(names) + 4
    with open(wide, "w", encoding="utf-8") as handle:
        for i in range(2):
            handle.write(json.dumps({"id": f"i{i}", "status": "ok", "edits": [
                {"name": f"model{j}", "metrics": {key: (i + j + k) % 7 / 7 for k, key in enumerate(names)}}
                for j in range(models)]}) + "\n")
    opened, viewed = session.open_and_view(session.upload(wide))
    assert opened["success"], opened
    text = explore_refused(viewed)
    assert f"would have {models} rows (run and model) x 120 metrics = {models * 120} cells; it computes at most " \
           f"{board_module.MAX_LEADERBOARD_CELLS}" in text, text
    _operator_opens(session)


@pytest.fixture(scope="module")
def study(app, tmp_path_factory):
    from augclip_demo.study import store

    manifest = write_study_manifest(tmp_path_factory.mktemp("study") / "data", n_items=3)
    db = app.temp.parent / "cache" / "studies.sqlite3"
    store.create_study(db, "round3", manifest, questions=["text"], repeats=0)
    (bob,) = store.add_raters(db, "round3", labels=["bob"])
    return {"bob": bob.token}


@pytest.mark.slow
def test_2_forged_forwarded_addresses_do_not_escape_the_limits(app, study):
    config = httpx.get(f"{app.url}config", timeout=30).json()
    with ThreadPoolExecutor(4) as pool:  # wrong operator tokens, each "from" another address
        shown = list(pool.map(lambda n: page_event(app, config, "study-show", [f"wrong-{n}", "round3", None],
                                                   f"192.0.2.{n}")[0], range(12)))
    checked = [text for text in shown if "not right" in text]
    assert 1 <= len(checked) <= 6, shown  # the bucket of 127.0.0.1 (5 at once, one every 12 s), not 12 addresses
    assert any(text.startswith("Too many wrong operator tokens from your address") for text in shown), shown
    with httpx.Client(timeout=30) as http:  # made-up rater links, each "from" another address
        statuses = [http.get(f"{app.url}study/api/task", headers={
            "Authorization": f"Bearer guess-{n:027d}", "X-Forwarded-For": f"198.51.100.{n}"}).status_code
            for n in range(60)]
    assert statuses.count(429) > 0 and statuses.count(403) < 60, statuses
    # the refusals name no address a client could have chosen and no server folder
    answer = httpx.get(f"{app.url}study/api/task", headers={"Authorization": "Bearer guess",
                                                             "X-Forwarded-For": "203.0.113.9"}, timeout=30)
    assert not SERVER_PATH.search(answer.text) and "203.0.113.9" not in answer.text, answer.text


@pytest.mark.slow
def test_5_the_page_kept_in_memory_is_the_one_of_its_address(app):
    """The page is rendered once per address (ui/page_cache.py): a second address gets its own root URL, and
    neither is served the other's."""
    def root(page: str) -> str:
        found = re.search(r'"root":\s*"([^"]*)"', page)
        assert found, page[:300]
        return found.group(1)

    with httpx.Client(timeout=60) as http:
        plain = [http.get(app.url).text for _ in range(2)]
        lab = [http.get(app.url, headers={"Host": "lab.example:8080"}).text for _ in range(2)]
        proxied = http.get(app.url, headers={"X-Forwarded-Host": "edits.example.org",
                                             "X-Forwarded-Proto": "https"}).text
    assert plain[0] == plain[1] and lab[0] == lab[1]
    assert root(plain[1]) == app.url.rstrip("/") and root(lab[1]) == "http://lab.example:8080"
    assert root(proxied) == "https://edits.example.org"
    assert "lab.example" not in plain[1] + proxied and "edits.example.org" not in plain[1] + lab[1]


@pytest.mark.slow
def test_6_case_clashes_and_unreadable_records_are_named(app, tmp_path):
    session = ExploreSession(app)
    clash = probes.write(tmp_path / "clash.jsonl", _metric_lines('{"Score": 1.0, "score": 2.0, "SCORE": 3.0}'))
    text = explore_refused(session(None, session.upload(clash)))
    assert "clash.jsonl: metric names that differ only in case (" in text, text
    assert all(name in text for name in ("Score", "score", "SCORE")), text
    _operator_opens(session)
