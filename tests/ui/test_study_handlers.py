"""Each Study-tab handler (and the Explore tab's "Make a study from this slice") called as the page's events call
it: a real SQLite study in a tmp folder, a real request from a client address, and what the operator would see
checked against the database itself (read with sqlite3, not through the store) and the files on disk."""

from __future__ import annotations

import csv
import inspect
import io
import json
import sqlite3
from pathlib import Path

import gradio as gr
import pytest
from starlette.requests import Request

from augclip_demo.config import Settings
from augclip_demo.explore import make_slice
from augclip_demo.explore.shelf import Shelf
from augclip_demo.study import store
from augclip_demo.ui.binding import bind
from augclip_demo.ui.storage import WorkFolders
from augclip_demo.ui.study import handlers as on
from augclip_demo.ui.study.operator import NOT_OPERATOR, Operator
from tests.study.helpers import OPERATOR_TOKEN, answer_all, write_results, write_study_manifest

N_ITEMS = 3  # three edits each: three pairs per item


@pytest.fixture(autouse=True)
def operator_token(monkeypatch):
    monkeypatch.setenv("AUGCLIP_STUDY_OPERATOR_TOKEN", OPERATOR_TOKEN)


@pytest.fixture()
def study(tmp_path):
    """A 2AFC study "pairs" (overall + text) that ann answered whole ("left") and bob not at all."""
    manifest = write_study_manifest(tmp_path / "data", n_items=N_ITEMS)
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "pairs", manifest, questions=["text"], repeats=0)
    ann, bob = store.add_raters(db, "pairs", labels=["ann", "bob"])
    answer_all(db, ann.token, lambda view: {"overall": "left", "text": "left"})
    return {"db": db, "manifest": manifest, "ann": ann, "bob": bob, "tmp": tmp_path}


@pytest.fixture()
def ctx(study) -> on.StudyContext:
    settings = Settings.from_env(study_db=study["db"], cache_dir=study["tmp"] / "cache")
    (study["tmp"] / "work").mkdir()
    return on.StudyContext(settings=settings, folders=WorkFolders(study["tmp"] / "work"), operator=Operator())


def request(host: str = "203.0.113.5", session: str = "session-1") -> gr.Request:
    """What Gradio hands a handler: the client's HTTP request (address, headers, base URL) and the session."""
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "scheme": "http",
             "headers": [(b"host", b"127.0.0.1:7860")], "client": (host, 50000), "server": ("127.0.0.1", 7860),
             "query_string": b"", "root_path": ""}
    return gr.Request(request=Request(scope), session_hash=session)


def rows(db, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def test_bind_hands_gradio_the_handlers_request_parameter(ctx):
    bound = bind(on.show_agreement, ctx)
    assert list(inspect.signature(bound).parameters) == ["token_value", "study", "results_file", "request"]
    assert gr.utils.get_type_hints(bound)["request"] is gr.Request  # how Gradio finds the request parameter


def test_show_agreement_reports_the_studys_judgments_and_refuses_a_wrong_token(ctx, study):
    db = study["db"]
    judgments = rows(db, "SELECT COUNT(*) FROM judgments")[0][0]
    answering = rows(db, "SELECT COUNT(DISTINCT rater_id) FROM judgments")[0][0]
    units = rows(db, "SELECT COUNT(*) FROM units")[0][0]
    assert (judgments, answering, units) == (2 * 3 * N_ITEMS, 1, 3 * N_ITEMS)  # ann: every pair, two questions
    shown = on.show_agreement(ctx, OPERATOR_TOKEN, " pairs ", None, request())
    assert shown.startswith(f"study pairs (2afc): {judgments} judgments (one per question answered) from "
                            f"{answering} rater(s); 0 of {units} units have their judgments\n\n")  # per_unit 3: none complete
    assert "**Agreement between raters (first answers)**" in shown
    assert "| question | Krippendorff's alpha |" in shown
    answered = rows(db, "SELECT COUNT(*) FROM judgments WHERE question = 'overall'")[0][0]
    assert f"\n| ann | {answered} |" in shown
    # with a results file of the manifest: each model's mean metric value and its rank beside the raters'
    values = {"alpha": 0.3, "beta": 0.2, "gamma": 0.1}
    results = write_results(study["manifest"], {"clip_i": {f"item-{i}": list(values.values()) for i in range(N_ITEMS)}},
                            study["tmp"] / "r.jsonl")
    shown = on.show_agreement(ctx, OPERATOR_TOKEN, "pairs", str(results), request())
    model_rows = {line.split(" | ")[0][2:]: line for line in shown.splitlines() if line[2:].startswith(tuple(values))}
    ranked = sorted(values, key=values.get, reverse=True)
    assert {model: line.endswith(f"| {values[model]:.4f} (#{ranked.index(model) + 1}) |")
            for model, line in model_rows.items()} == dict.fromkeys(values, True)
    assert on.show_agreement(ctx, "wrong-token", "pairs", None, request()) == NOT_OPERATOR
    missing = on.show_agreement(ctx, OPERATOR_TOKEN, "nope", None, request())
    assert "no study named 'nope'" in missing and "pairs" in missing and str(study["tmp"]) not in missing


def test_follow_answers_turns_the_timer_on_and_off():
    assert on.follow_answers(True).active is True
    assert on.follow_answers(False).active is False
    assert on.follow_answers(None).active is False


def test_add_raters_gives_working_links_on_the_servers_address(ctx, study):
    before = rows(study["db"], "SELECT label FROM raters")
    shown = on.add_raters(ctx, OPERATOR_TOKEN, "pairs", 2, request())
    added = [label for (label,) in rows(study["db"], "SELECT label FROM raters")][len(before):]
    links = [line for line in shown.splitlines() if line.startswith("- ")]
    assert len(added) == len(links) == 2
    for label, line in zip(added, links):
        prefix = f"- {label}: `http://127.0.0.1:7860/study/rate#t="
        assert line.startswith(prefix) and line.endswith("`")
        view = store.rater_view(study["db"], line[len(prefix):-1])  # the link's token is that rater's
        assert view.done == 0 and view.total == 3 * N_ITEMS and view.task is not None
    assert on.add_raters(ctx, "wrong-token", "pairs", 2, request()) == NOT_OPERATOR
    assert len(rows(study["db"], "SELECT label FROM raters")) == len(before) + 2  # the refusal added nobody


def test_close_study_closes_it_for_the_raters(ctx, study):
    assert on.close_study(ctx, "wrong-token", "pairs", request()) == NOT_OPERATOR
    assert rows(study["db"], "SELECT status FROM studies WHERE name = 'pairs'") == [("open",)]
    shown = on.close_study(ctx, OPERATOR_TOKEN, "pairs", request())
    (status, closed_at), = rows(study["db"], "SELECT status, closed_at FROM studies WHERE name = 'pairs'")
    assert status == "closed" and shown == f"Study pairs is closed (since {closed_at}); raters' pages now say so."
    view = store.rater_view(study["db"], study["bob"].token)
    assert view.closed and view.task is None


def test_export_judgments_writes_them_into_the_sessions_folder(ctx, study):
    paths, said = on.export_judgments(ctx, OPERATOR_TOKEN, "pairs", request(session="s-export"))
    assert said == on.EXPORTED and [p.rsplit("/", 1)[1] for p in paths] == ["pairs-judgments.csv",
                                                                              "pairs-overall.jsonl"]
    assert all(p.startswith(str(ctx.folders.root)) for p in paths)
    csv_file, manifest_lines = (Path(path) for path in paths)
    table = list(csv.DictReader(io.StringIO(csv_file.read_text(encoding="utf-8"))))
    assert len(table) == rows(study["db"], "SELECT COUNT(*) FROM judgments")[0][0]
    lines = [json.loads(line) for line in manifest_lines.read_text(encoding="utf-8").splitlines()]
    judged = rows(study["db"], "SELECT u.item_id, u.edit_a, u.edit_b FROM judgments j JOIN units u ON u.id = j.unit_id "
                               "WHERE j.question = 'overall' ORDER BY u.number")
    assert [line["id"] for line in lines] == [f"{item}:pair-{a}-{b}" for item, a, b in judged]
    assert all(sum(line["meta"]["study"]["votes"].values()) == 1 for line in lines)  # ann's one answer per pair
    assert ctx.folders.release("s-export") == 1  # the folder is the session's: it goes when the session ends
    assert on.export_judgments(ctx, "wrong-token", "pairs", request()) == ([], NOT_OPERATOR)


def test_export_judgments_is_refused_when_the_disk_space_is_used_up(ctx, study):
    full = on.StudyContext(settings=ctx.settings, folders=WorkFolders(study["tmp"] / "work", max_bytes=0),
                           operator=ctx.operator)
    paths, said = on.export_judgments(full, OPERATOR_TOKEN, "pairs", request())
    assert paths == [] and said.startswith("The export was refused: the server's space")
    assert not list((study["tmp"] / "work").iterdir())


def test_make_study_from_slice_makes_the_slices_pairs(ctx, study):
    manifest = study["manifest"]
    results = write_results(manifest, {"clip_i": {f"item-{i}": [0.3, 0.2, 0.1] for i in range(N_ITEMS)}},
                            study["tmp"] / "explored.jsonl")
    shelf = Shelf([f"{results}={manifest}"])
    slice_ctx = on.SliceStudyContext(settings=ctx.settings, shelf=shelf, operator=ctx.operator)
    key = f"named:{shelf.labels[0]}"
    state = {"key": key, "active": make_slice("ab", models=["alpha", "beta"]).to_json()}
    said = on.make_study_from_slice(slice_ctx, OPERATOR_TOKEN, "from-slice", "2afc", ["text"], 2, 0, 0, state,
                                    request())
    (study_id, per_unit, per_rater, questions), = rows(
        study["db"], "SELECT id, per_unit, per_rater, questions FROM studies WHERE name = 'from-slice'")
    units = rows(study["db"], "SELECT item_id, edit_a, edit_b FROM units WHERE study_id = ? ORDER BY number", study_id)
    assert units == [(f"item-{i}", 0, 1) for i in range(N_ITEMS)]  # alpha and beta are edits 0 and 1
    assert (per_unit, per_rater, json.loads(questions)) == (2, N_ITEMS, ["overall", "text"])
    assert said == (f"Study **from-slice**: {N_ITEMS} units (2afc) from ab: model in alpha, beta "
                    f"({2 * N_ITEMS} edits of {N_ITEMS} items); {N_ITEMS} per rater, so 2 raters give each unit "
                    "2 judgments. Add raters in the Study tab.")
    # empty fields: 'overall' alone, 3 judgments per unit, every unit per rater, 2 attention checks
    every = on.make_study_from_slice(slice_ctx, OPERATOR_TOKEN, "all-pairs", "2afc", None, None, 0, None,
                                     {"key": key, "active": None}, request())
    assert f"{3 * N_ITEMS} units (2afc)" in every and f"{3 * N_ITEMS} per rater, so 3 raters" in every
    assert rows(study["db"], "SELECT per_unit, per_rater, repeats, questions FROM studies WHERE name = 'all-pairs'"
                ) == [(3, 3 * N_ITEMS, 2, '["overall"]')]
    odd = on.make_study_from_slice(slice_ctx, OPERATOR_TOKEN, "odd", "2afc", None, 3, 2, 0, state, request())
    assert f"2 per rater, so {-(-N_ITEMS * 3 // 2)} raters give each unit 3 judgments" in odd  # rounded up
    assert on.make_study_from_slice(slice_ctx, "wrong-token", "x", "2afc", None, 3, 0, 2, state,
                                    request()) == NOT_OPERATOR
    assert "open a results file first" in on.make_study_from_slice(slice_ctx, OPERATOR_TOKEN, "x", "2afc", None, 3,
                                                                   0, 2, {"key": None}, request())
    taken = on.make_study_from_slice(slice_ctx, OPERATOR_TOKEN, "from-slice", "2afc", None, 3, 0, 2, state, request())
    assert "exists already" in taken
    assert rows(study["db"], "SELECT name FROM studies ORDER BY id") == [("pairs",), ("from-slice",), ("all-pairs",),
                                                                              ("odd",)]


def test_the_refusal_says_which_the_token_is_wrong_missing_or_not_set(ctx, monkeypatch):
    """Wrong, not typed and not set on the server are three different things to fix: each is said."""
    from augclip_demo.ui.study.operator import NO_TOKEN_TYPED, NOT_SET, operator_off

    assert on.show_agreement(ctx, "wrong-token", "pairs", None, request()) == NOT_OPERATOR
    assert on.show_agreement(ctx, "", "pairs", None, request("203.0.113.6")) == NO_TOKEN_TYPED
    assert operator_off() is None
    monkeypatch.delenv("AUGCLIP_STUDY_OPERATOR_TOKEN")
    assert on.show_agreement(ctx, OPERATOR_TOKEN, "pairs", None, request("203.0.113.7")) == NOT_SET
    assert operator_off() == NOT_SET and "AUGCLIP_STUDY_OPERATOR_TOKEN is not set" in NOT_SET
    monkeypatch.setenv("AUGCLIP_STUDY_OPERATOR_TOKEN", "short")
    assert "at least 16 characters" in operator_off()


def test_the_token_lists_the_servers_studies_for_the_pick(ctx, study):
    db = study["db"]
    assert on.list_studies(ctx, "wrong-token", None, request())[1] == NOT_OPERATOR
    store.create_study(db, "later", study["manifest"], repeats=0)
    names = [name for (name,) in rows(db, "SELECT name FROM studies ORDER BY id")]
    listed, said = on.list_studies(ctx, OPERATOR_TOKEN, None, request())
    assert listed.choices == [(n, n) for n in names] and listed.value == names[-1]  # the newest picked
    assert said == f"2 studies on this server: {', '.join(names)}."
    # the pick kept: the reply leaves the value out (Gradio then changes only the choices), so a listing that
    # arrives after the user picked another study does not undo that pick
    kept = on.list_studies(ctx, OPERATOR_TOKEN, "pairs", request())[0]
    assert kept.constructor_args == {"choices": names}
    # a custom value that is not a name is refused with what to do
    assert on.show_agreement(ctx, OPERATOR_TOKEN, None, None, request()).startswith("Pick a study first")
    assert on.close_study(ctx, OPERATOR_TOKEN, ["pairs"], request()).startswith("Pick a study first")
