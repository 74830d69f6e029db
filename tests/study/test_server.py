"""The rater routes over real HTTP on 127.0.0.1 (``python app.py``): refusals, concurrent raters, kill -9."""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time

import pytest

from augclip_demo.study import store
from tests.study.helpers import http, start_study_app, write_study_manifest

pytestmark = pytest.mark.slow


def answer(url, token, position, answers, elapsed=None):
    body = json.dumps({"position": position, "answers": answers, "elapsed_ms": elapsed}).encode()
    return http(url + "study/api/answer", "POST", token, body)


def test_the_rater_api_refuses_what_it_must(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=2)
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "s", manifest, questions=["text"])
    ann, bob = store.add_raters(db, "s", labels=["ann", "bob"])
    app = start_study_app(tmp_path, db)
    try:
        url = app.url
        status, headers, page = http(url + "study/rate")
        assert status == 200 and b"/study/rate.js" in page
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["referrer-policy"] == "no-referrer" and headers["cache-control"] == "no-store"
        assert http(url + "study/api/task")[0] == 401
        assert http(url + "study/api/task", token="y" * 32)[0] == 403
        status, _, body = http(url + "study/api/task", token=ann.token)
        view = json.loads(body)
        assert status == 200 and view["total"] == 6 + 2 and view["done"] == 0
        assert set(view) == {"title", "kind", "questions", "done", "total", "closed", "task"}
        assert set(view["task"]) == {"position", "text", "slots"}  # no metric, no edit names, no other answers
        position = view["task"]["position"]
        status, headers, picture = http(url + f"study/api/image/{position}/left", token=ann.token)
        assert status == 200 and headers["content-type"] == "image/jpeg" and picture[:2] == b"\xff\xd8"
        assert http(url + f"study/api/image/{position}/left", token=bob.token)[0] in (200, 404)  # bob: his own task
        assert http(url + f"study/api/image/{position}/edit", token=ann.token)[0] == 404
        assert http(url + "study/api/image/999/left", token=ann.token)[0] == 404
        assert http(url + f"study/api/image/{position + 3}/left", token=ann.token)[0] == 404  # not the current task
        assert http(url + f"study/api/image/{2 ** 70}/left", token=ann.token)[0] == 404  # beyond SQLite's integers
        assert http(url + "study/api/image/-1/left", token=ann.token)[0] == 404
        # bounded input: a body over the limit, a body that is not JSON, unknown fields
        assert http(url + "study/api/answer", "POST", ann.token, b"{" + b" " * 10_000 + b"}")[0] == 413
        assert http(url + "study/api/answer", "POST", ann.token, b"\xff\xfe")[0] == 400
        status, _, body = http(url + "study/api/answer", "POST", ann.token, b"[" * 2000 + b"]" * 2000)
        assert status == 400 and b"not valid JSON" in body  # nesting within 4 KB that json's recursion cannot take
        big = json.dumps({"position": position, "answers": {"overall": "left", "text": "left"}, "extra": 1}).encode()
        assert http(url + "study/api/answer", "POST", ann.token, big)[0] == 400
        status, _, body = answer(url, ann.token, position, {"overall": "left", "text": "sideways"})
        assert status == 400 and b"must be 'left', 'right' or 'tie'" in body
        assert answer(url, ann.token, position, {"overall": "left", "text": "tie"}, 900)[0] == 200
        status, _, body = answer(url, ann.token, position, {"overall": "right", "text": "tie"})
        assert status == 409 and b"answered this task already" in body
        store.close_study(db, "s")
        status, _, body = answer(url, bob.token, 0, {"overall": "left", "text": "tie"})
        assert status == 409 and b"closed" in body
        assert b"/" not in json.loads(body)["error"].encode()  # no server path in what a rater sees
    finally:
        app.stop()


def rater_loop(url, token, seed, acked, stop, errors):
    """Answer tasks until told to stop or the server is gone; ``acked`` gets (token, position, answer) per 200."""
    rng = random.Random(seed)
    while not stop.is_set():
        try:
            status, headers, body = http(url + "study/api/task", token=token, timeout=10)
            if status == 429:  # over the rate: wait as told, like the page does
                time.sleep(int(headers["retry-after"]))
                continue
            if status != 200:
                errors.append((status, body))
                return
            view = json.loads(body)
            if view["task"] is None:
                return
            choice = rng.choice(["left", "right", "tie"])
            position = view["task"]["position"]
            status, headers, body = answer(url, token, position, {"overall": choice}, rng.randint(100, 5000))
            while status == 429:
                time.sleep(int(headers["retry-after"]))
                status, headers, body = answer(url, token, position, {"overall": choice}, rng.randint(100, 5000))
        except OSError:
            return  # the server was killed: this answer was never acknowledged
        if status == 200:
            acked.append((token, position, choice))
        else:
            errors.append((status, body))
            return


def stored_answers(db):
    """(rater token hash, position) -> (answer, shown_left, edit_a) as stored, read straight from SQLite."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT r.token_sha256, t.position, j.answer, j.shown_left, u.edit_a FROM judgments j "
                            "JOIN tasks t ON t.id = j.task_id JOIN raters r ON r.id = j.rater_id "
                            "JOIN units u ON u.id = j.unit_id").fetchall()
    out = {}
    for token_hash, position, stored, shown_left, edit_a in rows:
        assert (token_hash, position) not in out, "a task was answered twice"
        out[(token_hash, position)] = (stored, shown_left, edit_a)
    return out


def side_of(stored, shown_left, edit_a):
    """The side the rater pressed, recovered from the stored (edit-based) answer."""
    if stored == "tie":
        return "tie"
    chosen_is_a = stored == "a"
    return "left" if chosen_is_a == (shown_left == edit_a) else "right"


def test_concurrent_raters_lose_no_acknowledged_judgment_when_the_server_is_killed(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=8)  # 24 pairs
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "load", manifest, repeats=2)
    raters = store.add_raters(db, "load", count=8)
    app = start_study_app(tmp_path, db)
    acked, errors, stop = [], [], threading.Event()
    threads = [threading.Thread(target=rater_loop, args=(app.url, r.token, k, acked, stop, errors))
               for k, r in enumerate(raters)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while len(acked) < 80 and time.monotonic() < deadline and any(t.is_alive() for t in threads):
        time.sleep(0.05)
    assert sum(t.is_alive() for t in threads) >= 2, "the raters finished before the kill: no load to kill under"
    app.process.kill()  # SIGKILL while the raters are still sending
    app.stop()  # (already dead: deletes its temporary folders)
    at_kill = len(acked)
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors[:3]
    assert at_kill >= 80
    stored = stored_answers(db)
    hashes = {r.token: store.token_hash(r.token) for r in raters}
    for token, position, choice in acked:
        assert (hashes[token], position) in stored, "an acknowledged judgment was lost"
        assert side_of(*stored[(hashes[token], position)]) == choice
    assert len(stored) <= len(acked) + len(raters)  # at most one unacknowledged answer in flight per rater

    # the raters come back to a restarted server and finish where they stopped
    app = start_study_app(tmp_path, db)
    try:
        stop.clear()
        more = []
        threads = [threading.Thread(target=rater_loop, args=(app.url, r.token, 100 + k, more, stop, errors))
                   for k, r in enumerate(raters)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not errors, errors[:3]
    finally:
        app.stop()
    final = stored_answers(db)
    assert len(final) == len(raters) * (24 + 2)  # every task answered exactly once
    for token, position, choice in acked + more:
        assert side_of(*final[(hashes[token], position)]) == choice
