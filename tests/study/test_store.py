"""The study database: design of the task lists, tokens, refusals and what one judgment row holds."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter

import pytest

from augclip_demo.io import open_image
from augclip_demo.study import store
from augclip_demo.study.agreement import study_agreement
from augclip_demo.study.questions import QUESTION_SETS
from tests.study.helpers import answer_all, write_study_manifest


@pytest.fixture()
def study(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=4)  # 4 items x 3 pairs = 12 units
    db = tmp_path / "studies.sqlite3"
    store.create_study(db, "pilot", manifest, questions=["text"], per_unit=3, per_rater=6, repeats=2, seed=7)
    return db, manifest


def tasks_of(db, label):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT t.position, u.number, t.swapped, t.repeat_of FROM tasks t JOIN raters r ON "
                            "r.id = t.rater_id JOIN units u ON u.id = t.unit_id WHERE r.label = ? ORDER BY t.position",
                            (label,)).fetchall()


def test_the_design_spreads_units_evenly_with_repeats_later_and_swapped(study):
    db, _ = study
    raters = store.add_raters(db, "pilot", count=6)
    assert len({r.token for r in raters}) == 6 and all(len(r.token) >= 32 for r in raters)
    first_answers = Counter()
    for rater in raters:
        rows = tasks_of(db, rater.label)
        originals = [r for r in rows if r[3] is None]
        repeats = [r for r in rows if r[3] is not None]
        assert len(originals) == 6 and len({r[1] for r in originals}) == 6  # 6 distinct units
        assert len(repeats) == 2
        for position, unit, swapped, repeat_of in repeats:
            original = rows[repeat_of]
            assert original[1] == unit and original[3] is None
            assert position >= repeat_of + 3  # at least 3 tasks on
            assert swapped != original[2]  # sides swapped
        first_answers.update(r[1] for r in originals)
    # 6 raters x 6 units over 12 units: every unit exactly 3 times (the per_unit asked for)
    assert sorted(first_answers.values()) == [3] * 12


def test_the_design_is_reproducible_from_the_seed(tmp_path, study):
    db, manifest = study
    other = tmp_path / "other.sqlite3"
    store.create_study(other, "pilot", manifest, questions=["text"], per_unit=3, per_rater=6, repeats=2, seed=7)
    store.add_raters(db, "pilot", labels=["ann", "bob"])
    store.add_raters(other, "pilot", labels=["ann", "bob"])
    assert tasks_of(db, "ann") == tasks_of(other, "ann") and tasks_of(db, "bob") == tasks_of(other, "bob")
    assert tasks_of(db, "ann") != tasks_of(db, "bob")


def test_tokens_are_stored_only_as_hashes(study):
    db, _ = study
    rater = store.add_raters(db, "pilot", labels=["ann"])[0]
    raw = b"".join(p.read_bytes() for p in db.parent.glob("studies.sqlite3*"))
    assert rater.token.encode() not in raw
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT token_sha256 FROM raters WHERE label = 'ann'").fetchone()[0]
    assert stored == hashlib.sha256(rater.token.encode()).hexdigest()


def test_refusals(study):
    db, _ = study
    ann, bob = store.add_raters(db, "pilot", labels=["ann", "bob"])
    view = store.rater_view(db, ann.token)
    position = view.task["position"]
    good = {"overall": "left", "text": "tie"}
    with pytest.raises(store.StudyError, match="not valid") as bad_token:
        store.submit_answer(db, "x" * 32, position, good)
    assert bad_token.value.status == 403
    for answers, message in (({"overall": "left"}, "exactly these questions"),
                             ({**good, "source": "left"}, "'answers' must map|exactly these"),
                             ({"overall": "up", "text": "tie"}, "must be 'left', 'right' or 'tie'"),
                             ({"overall": 3, "text": "tie"}, "must be 'left'")):
        with pytest.raises(store.StudyError, match=message):
            store.submit_answer(db, ann.token, position, answers)
    with pytest.raises(store.StudyError, match="not one of yours"):
        store.submit_answer(db, ann.token, 999, good)
    with pytest.raises(store.StudyError, match="in the order the page shows") as skipped:
        store.submit_answer(db, ann.token, position + 1, good)  # no skipping ahead (to a repeat, say)
    assert skipped.value.status == 409
    store.submit_answer(db, ann.token, position, good, elapsed_ms=2500)
    with pytest.raises(store.StudyError, match="answered this task already") as twice:
        store.submit_answer(db, ann.token, position, {"overall": "right", "text": "right"})
    assert twice.value.status == 409
    # bob's own task list is his: ann's answer did not touch his progress
    assert store.rater_view(db, bob.token).done == 0 and store.rater_view(db, ann.token).done == 1
    store.close_study(db, "pilot")
    with pytest.raises(store.StudyError, match="closed") as closed:
        store.submit_answer(db, bob.token, store.rater_view(db, bob.token).total - 1, good)
    assert closed.value.status == 409
    assert store.rater_view(db, bob.token).task is None and store.rater_view(db, bob.token).closed


def test_one_row_per_judgment_with_rater_time_hashes_and_wording(study):
    db, manifest = study
    ann = store.add_raters(db, "pilot", labels=["ann"])[0]
    view = store.rater_view(db, ann.token)
    left_path, _ = store.task_image(db, ann.token, view.task["position"], "left")
    store.submit_answer(db, ann.token, view.task["position"], {"overall": "left", "text": "right"}, 1234)
    data = store.load_study(db, "pilot")
    assert len(data.judgments) == 2
    overall = next(j for j in data.judgments if j.question == "overall")
    text = next(j for j in data.judgments if j.question == "text")
    edits = data.lines[overall.item_id]["edits"]
    left_index = next(i for i, e in enumerate(edits) if manifest.parent / e["path"] == left_path)
    # "left" is stored as the edit shown on the left, whatever its side; "right" as the other one
    assert overall.answer == ("a" if left_index == overall.edit_a else "b")
    assert text.answer == ("b" if left_index == overall.edit_a else "a")
    assert overall.shown_left == left_index
    assert overall.rater == "ann" and overall.question_version == "2afc-v1" and overall.elapsed_ms == 1234
    assert overall.created_at.endswith("Z") and not overall.is_repeat
    source = manifest.parent / data.lines[overall.item_id]["source"]
    assert overall.source_sha256 == open_image(source).sha256
    assert overall.edit_a_sha256 == open_image(manifest.parent / edits[overall.edit_a]["path"]).sha256
    assert overall.edit_b_sha256 == open_image(manifest.parent / edits[overall.edit_b]["path"]).sha256
    assert QUESTION_SETS["2afc-v1"]["overall"].prompt in [q["prompt"] for q in view.questions]


def test_progress_resumes_and_ends(study):
    db, _ = study
    ann = store.add_raters(db, "pilot", labels=["ann"])[0]
    first = store.rater_view(db, ann.token)
    store.submit_answer(db, ann.token, first.task["position"], {"overall": "tie", "text": "tie"})
    again = store.rater_view(db, ann.token)  # a new "session": the next unanswered task
    assert (again.done, again.total) == (1, 8) and again.task["position"] != first.task["position"]
    assert answer_all(db, ann.token, lambda view: {"overall": "left", "text": "left"}) == 7
    assert store.rater_view(db, ann.token).task is None
    row, = study_agreement(store.load_study(db, "pilot")).raters
    # 6 first answers (2 of the 8 tasks are repeats); timed tasks took 1000 ms each, the first was not timed
    assert (row.rater, row.answered, row.median_seconds) == ("ann", 6, 1.0)


def test_creation_refusals(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=1, n_edits=1)
    db = tmp_path / "s.sqlite3"
    with pytest.raises(store.StudyError, match="no pair of edits"):
        store.create_study(db, "one", manifest)
    with pytest.raises(store.StudyError, match="study name"):
        store.create_study(db, "bad name!", manifest, kind="rating")
    store.create_study(db, "one", manifest, kind="rating")
    with pytest.raises(store.StudyError, match="exists already"):
        store.create_study(db, "one", manifest, kind="rating")
    with pytest.raises(store.StudyError, match="unknown question"):
        store.create_study(db, "two", manifest, kind="rating", questions=["beauty"])


def test_the_database_is_in_wal_mode_and_syncs_every_commit(study):
    db, _ = study
    with sqlite3.connect(db) as conn:  # WAL is a property of the file: a plain connection sees it
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with store.connect(db) as conn:  # synchronous is per connection: 2 = FULL (an fsync before each ack)
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_pictures_only_of_the_current_task_and_the_one_just_answered(study):
    db, _ = study
    ann = store.add_raters(db, "pilot", labels=["ann"])[0]
    assert store.task_image(db, ann.token, 0, "left")[0].is_file()
    for ahead in (2, 5):  # later tasks: refused, so a rater cannot make the server decode every picture in turn
        with pytest.raises(store.StudyError, match="no such image") as refused:
            store.task_image(db, ann.token, ahead, "source")
        assert refused.value.status == 404
    store.submit_answer(db, ann.token, 0, {"overall": "tie", "text": "tie"})
    store.submit_answer(db, ann.token, 1, {"overall": "tie", "text": "tie"})
    assert store.task_image(db, ann.token, 1, "source")[0].is_file()  # just answered (the page may still load it)
    assert store.task_image(db, ann.token, 2, "source")[0].is_file()  # current
    with pytest.raises(store.StudyError, match="no such image"):
        store.task_image(db, ann.token, 0, "source")
    answer_all(db, ann.token, lambda view: {"overall": "left", "text": "left"})
    last = len(tasks_of(db, "ann")) - 1
    assert store.task_image(db, ann.token, last, "source")[0].is_file()  # all done: the last one still loads


@pytest.mark.parametrize("n_units", [3, 4, 6, 24])
def test_every_repeat_comes_at_least_three_tasks_after_its_original_for_every_seed(n_units):
    """Issue 44: over 2,000 seeds (originals drawn from the last positions too), each repeat is 3 or more
    positions after its original, and as many repeats as asked are placed when the list has room."""
    import random

    from augclip_demo.study.design import task_list

    for seed in range(2000):
        tasks = task_list(list(range(n_units)), pairs=True, repeats=2, rng=random.Random(seed))
        repeats = [t for t in tasks if t.repeat_of is not None]
        assert len(repeats) == min(2, n_units - 2)
        for repeat in repeats:
            original = tasks[repeat.repeat_of]
            assert original.repeat_of is None and original.unit == repeat.unit and original.swapped != repeat.swapped
            assert repeat.position - original.position >= 3, (seed, repeat, original)
        assert [t.position for t in tasks] == list(range(n_units + len(repeats)))
        assert sorted(t.unit for t in tasks if t.repeat_of is None) == list(range(n_units))
