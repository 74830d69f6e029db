"""A study made from an Explore slice: the slice's edits, and only they, become the units (store and CLI)."""

from __future__ import annotations

import json
from itertools import combinations

import pytest

from augclip_demo.cli import main
from augclip_demo.explore import make_slice, open_results
from augclip_demo.explore.store import OpenedFile
from augclip_demo.study import store
from augclip_demo.study.agreement import study_agreement
from augclip_demo.study.slices import create_study_from_slice, slice_selection
from tests.study.helpers import answer_all, write_results, write_study_manifest

# clip_i per item and edit (alpha, beta, gamma); the range test keeps values >= 0.25
VALUES = {"clip_i": {"item-0": [0.3, 0.2, 0.1], "item-1": [0.1, 0.2, 0.3], "item-2": [0.5, 0.4, 0.26],
                     "item-3": [0.0, 0.9, 0.1]}}


@pytest.fixture()
def opened(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=4)
    results = write_results(manifest, VALUES, tmp_path / "r.jsonl")
    store_ = open_results([OpenedFile(results, manifest)])
    yield manifest, results, store_
    store_.close()


def expected_pairs(keep) -> list[tuple[str, int, int]]:
    """Pairs of kept edits of each item, computed from VALUES directly."""
    out = []
    for item, values in VALUES["clip_i"].items():
        kept = [i for i, value in enumerate(values) if keep(i, value)]
        out += [(item, a, b) for a, b in combinations(kept, 2)]
    return out


def test_a_model_slice_becomes_the_pairs_of_those_models(tmp_path, opened):
    _, _, results = opened
    db = tmp_path / "s.sqlite3"
    study, selection = create_study_from_slice(db, "ab", results, make_slice("two models", models=["alpha", "beta"]),
                                               repeats=0)
    assert selection.n_edits == 8 and "model in alpha, beta" in selection.description
    data = store.load_study(db, "ab")
    assert [(u.item_id, u.edit_a, u.edit_b) for u in data.units] == expected_pairs(lambda i, _: i in (0, 1))
    assert all(len(edits) == 3 for edits in data.edits.values())  # items keep every edit (results still match)
    # the metric agreement still reads the results of the whole manifest (content hashes of all edits)
    rater, = store.add_raters(db, "ab", count=1)
    answer_all(db, rater.token, lambda view: {"overall": "left"})
    report = study_agreement(data := store.load_study(db, "ab"), [str(opened[1])], n_boot=20)
    assert not any("content hashes differ" in note for note in report.notes), report.notes
    assert len(data.judgments) == 4


def test_a_range_slice_and_ratings(tmp_path, opened):
    _, _, results = opened
    db = tmp_path / "s.sqlite3"
    create_study_from_slice(db, "hi", results, make_slice("high", ranges={"clip_i": [0.25, None]}), repeats=0)
    units = [(u.item_id, u.edit_a, u.edit_b) for u in store.load_study(db, "hi").units]
    assert units == expected_pairs(lambda _, value: value >= 0.25)
    # item-0 and item-1 have one edit each in range: no pair, so they are not in the study
    assert set(store.load_study(db, "hi").lines) == {u[0] for u in units} == {"item-2"}
    create_study_from_slice(db, "rate", results, make_slice("high", ranges={"clip_i": [0.25, None]}), kind="rating")
    singles = [(u.item_id, u.edit_a) for u in store.load_study(db, "rate").units]
    assert singles == [(item, i) for item, values in VALUES["clip_i"].items() for i, v in enumerate(values) if v >= 0.25]


def test_slices_that_cannot_become_a_study_are_refused_by_name(tmp_path, opened):
    manifest, results_path, results = opened
    db = tmp_path / "s.sqlite3"
    with pytest.raises(store.StudyError, match="holds no scored edit"):
        slice_selection(results, make_slice("none", models=["nobody"]))
    bare = open_results([OpenedFile(results_path)])
    try:
        with pytest.raises(store.StudyError, match="opened without their manifest"):
            slice_selection(bare, make_slice("all"))
    finally:
        bare.close()
    other = write_study_manifest(tmp_path / "other", n_items=2, n_edits=2)  # other edit names, fewer edits
    wrong = open_results([OpenedFile(results_path, other)])
    try:
        with pytest.raises(store.StudyError, match="made from another manifest"):
            slice_selection(wrong, make_slice("all"))
    finally:
        wrong.close()
    with pytest.raises(store.StudyError, match="are not in manifest"):
        store.create_study(db, "x", manifest, only={"nope": {0, 1}})
    with pytest.raises(store.StudyError, match=r"chosen edit\(s\) \[7\]"):
        store.create_study(db, "x", manifest, only={"item-0": {0, 7}})


def test_the_cli_makes_a_study_from_a_slice(tmp_path, opened, capsys):
    manifest, results, _ = opened
    db = str(tmp_path / "s.sqlite3")
    saved = tmp_path / "slice.json"
    saved.write_text(json.dumps({"name": "saved", "models": ["alpha", "gamma"]}))
    assert main(["study", "--db", db, "create", "cli", str(manifest), "--results", str(results), "--slice", str(saved),
                 "--model", "beta", "--range", "clip_i=:0.35", "--repeats", "0"]) == 0
    out = capsys.readouterr().out
    kept = expected_pairs(lambda _, value: value <= 0.35)
    assert f"{len(kept)} units" in out and "saved: model in alpha, gamma, beta; clip_i <= 0.35" in out
    assert [(u.item_id, u.edit_a, u.edit_b) for u in store.load_study(db, "cli").units] == kept
    assert main(["study", "--db", db, "create", "bad", str(manifest), "--model", "alpha"]) == 2
    assert "give them with --results" in capsys.readouterr().err
    assert main(["study", "--db", db, "create", "bad", str(manifest), "--results", str(results),
                 "--range", "clip_i"]) == 2
    assert "--range 'clip_i': write METRIC=LOW:HIGH" in capsys.readouterr().err


def test_a_study_from_a_slice_reads_its_manifest_once(tmp_path, opened, monkeypatch):
    """The selection's check and the study's design share one reading of the manifest (it is validated and
    parsed whole: a large manifest was read twice)."""
    from augclip_demo.study import slices

    manifest, _, results = opened
    reads = []
    real = slices.load_manifest

    def counted(path):
        reads.append(path)
        return real(path)

    monkeypatch.setattr(slices, "load_manifest", counted)
    monkeypatch.setattr(store, "load_manifest", counted)
    db = tmp_path / "s.sqlite3"
    study, selection = create_study_from_slice(db, "once", results, make_slice("two", models=["alpha", "beta"]),
                                               repeats=0)
    assert len(reads) == 1 and reads[0] == manifest.resolve()
    assert [item.id for item in selection.items] == [f"item-{i}" for i in range(4)]
    # the items given are the ones used: with the manifest gone, the same design gives the same units
    monkeypatch.undo()
    manifest.unlink()
    store.create_study(db, "again", selection.manifest, only=selection.only, items=selection.items, repeats=0)
    units = [(u.item_id, u.edit_a, u.edit_b) for u in store.load_study(db, "again").units]
    assert units == [(u.item_id, u.edit_a, u.edit_b) for u in store.load_study(db, study.name).units]
    assert units == expected_pairs(lambda i, _: i in (0, 1))
