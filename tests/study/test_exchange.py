"""Export (manifest, CSV with formula cells neutralised) and import (CSV into the same table)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from augclip_demo.batch.manifest import load_manifest
from augclip_demo.study import store
from augclip_demo.study.exchange import export_csv, export_lines, export_manifest, import_csv, neutral
from tests.study.helpers import answer_all, write_study_manifest


@pytest.fixture()
def answered(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=3)
    # an item id that a spreadsheet would run as a formula
    lines = manifest.read_text().splitlines()
    first = json.loads(lines[0])
    first["id"] = "=HYPERLINK(\"http://x\")"
    manifest.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "s", manifest, questions=["source"], repeats=1)
    raters = store.add_raters(db, "s", labels=["-ann", "bob", "cy"])
    for k, rater in enumerate(raters):
        answer_all(db, rater.token, lambda view, k=k: {"overall": ["left", "right", "tie"][k], "source": "left"})
    return db, manifest


def test_csv_cells_that_look_like_formulas_are_quoted(answered):
    db, _ = answered
    text = export_csv(store.load_study(db, "s"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())
    assert {r["rater"] for r in rows} == {"'-ann", "bob", "cy"}
    assert any(r["item_id"] == "'=HYPERLINK(\"http://x\")" for r in rows)
    assert neutral("+1") == "'+1" and neutral("@a") == "'@a" and neutral("\tx") == "'\tx" and neutral("ok") == "ok"
    data = store.load_study(db, "s")
    assert len(rows) == len(data.judgments) == 3 * (9 + 1) * 2  # 3 raters x (9 pairs + 1 repeat) x 2 questions


def test_the_manifest_export_is_a_valid_manifest_with_the_verdicts(answered):
    db, manifest = answered
    data = store.load_study(db, "s")
    path = export_manifest(data)
    assert path.parent == manifest.parent
    items = load_manifest(path)  # validated like any manifest: every path resolves
    assert len(items) == 9
    by_id = {item.id: item for item in items}
    # votes per pair: one "a"-side, one "b"-side and one tie in some order -> even split unless the sides
    # mapped both answers to the same edit; the verdict is checked against the stored rows here
    for line in export_lines(data):
        study_meta = line["meta"]["study"]
        unit = (study_meta["item"], *study_meta["edits"])
        firsts = [j.answer for j in data.judgments
                  if (j.item_id, j.edit_a, j.edit_b) == unit and j.question == "overall" and not j.is_repeat]
        a, b = firsts.count("a"), firsts.count("b")
        assert study_meta["votes"] == {"a": a, "b": b, "tie": firsts.count("tie")}
        human = by_id[line["id"]].human
        if a == b:
            assert human is None
        else:
            assert human.preferred == (0 if a > b else 1)
        original = next(i for i in load_manifest(manifest) if i.id == study_meta["item"])
        assert [e.path for e in by_id[line["id"]].edits] == [original.edits[k].path for k in study_meta["edits"]]
    first_meta = next(line["meta"] for line in export_lines(data) if line["meta"]["study"]["item"] == "item-1")
    assert first_meta["item_meta"] == {"n": 1}  # the item's own meta is kept
    with pytest.raises(store.StudyError, match="manifest folder"):
        export_manifest(data, manifest.parent.parent / "elsewhere.jsonl")


def test_a_csv_goes_back_into_a_fresh_study(answered, tmp_path):
    db, manifest = answered
    data = store.load_study(db, "s")
    exported = tmp_path / "judgments.csv"
    exported.write_text(export_csv(data))
    other = tmp_path / "other.sqlite3"
    store.create_study(other, "s", manifest, questions=["source"])
    assert import_csv(other, "s", exported) == len(data.judgments)
    assert import_csv(other, "s", exported) == 0  # a second import adds nothing
    back = store.load_study(other, "s")

    def key(j):
        return (j.rater, j.item_id, j.edit_a, j.edit_b, j.question, j.answer, j.is_repeat, j.created_at,
                j.source_sha256, j.edit_a_sha256, j.edit_b_sha256)
    assert sorted(map(key, back.judgments)) == sorted(map(key, data.judgments))
    assert export_lines(back) == export_lines(data)


def test_a_bad_csv_is_refused_whole_with_every_problem(answered, tmp_path):
    db, _ = answered
    bad = tmp_path / "bad.csv"
    bad.write_text("rater,item_id,edit_a,edit_b,answer,question,edit_a_sha256\n"
                   "x,item-1,0,1,maybe,overall,\n"
                   "x,nope,0,1,a,overall,\n"
                   "x,item-1,0,1,a,beauty,\n"
                   "x,item-1,0,7,a,overall,\n"
                   "x,item-1,0,1,a,overall,deadbeef\n"
                   "bob,item-1,0,1,a,overall,\n")
    before = len(store.load_study(db, "s").judgments)
    with pytest.raises(store.StudyError) as error:
        import_csv(db, "s", bad)
    message = str(error.value)
    for expected in ("line 2: answer 'maybe'", "line 3: item_id 'nope'", "line 4: question 'beauty'",
                     "line 5: item 'item-1' has no pair 0-7", "line 6: edit_a_sha256 differs"):
        assert expected in message
    assert len(store.load_study(db, "s").judgments) == before
    clash = tmp_path / "clash.csv"
    clash.write_text("rater,item_id,edit_a,edit_b,answer\nbob,item-1,1,0,a\n")
    with pytest.raises(store.StudyError, match="rates on the study's page"):
        import_csv(db, "s", clash)
    reversed_pair = tmp_path / "reversed.csv"
    reversed_pair.write_text("rater,item_id,edit_a,edit_b,answer\nsurvey-7,item-1,1,0,a\n")
    assert import_csv(db, "s", reversed_pair) == 1
    row = store.load_study(db, "s").judgments[-1]
    assert (row.rater, row.edit_a, row.edit_b, row.answer) == ("survey-7", 0, 1, "b")  # same choice, by index order


def test_an_import_never_drops_or_changes_an_answer_silently(answered, tmp_path):
    db, _ = answered
    before = len(store.load_study(db, "s").judgments)
    twice = tmp_path / "twice.csv"  # one rater, one pair, two different answers in one file
    twice.write_text("rater,item_id,edit_a,edit_b,answer\nsurvey-1,item-1,0,1,a\nsurvey-1,item-1,1,0,a\n")
    with pytest.raises(store.StudyError, match="line 3: rater 'survey-1' answered this on line 2 already"):
        import_csv(db, "s", twice)
    assert len(store.load_study(db, "s").judgments) == before
    same = tmp_path / "same.csv"  # the same answer twice (here once as b, a) is one judgment
    same.write_text("rater,item_id,edit_a,edit_b,answer\nsurvey-1,item-1,0,1,a\nsurvey-1,item-1,1,0,b\n")
    assert import_csv(db, "s", same) == 1
    changed = tmp_path / "changed.csv"  # a later file with another answer: refused, the stored one stays
    changed.write_text("rater,item_id,edit_a,edit_b,answer\nsurvey-1,item-1,0,1,tie\n")
    with pytest.raises(store.StudyError, match="line 2: rater 'survey-1' has another answer to this stored"):
        import_csv(db, "s", changed)
    rows = [j for j in store.load_study(db, "s").judgments if j.rater == "survey-1"]
    assert [(j.edit_a, j.edit_b, j.answer) for j in rows] == [(0, 1, "a")]
