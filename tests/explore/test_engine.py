"""The Explore engine on a constructed run, against independent computations from the definitions and
against ``protocol``'s own numbers."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from augclip_demo.batch.protocol_tables import compute_protocols
from augclip_demo.batch.results import export_parquet
from augclip_demo.errors import InputError
from augclip_demo.explore import (
    HUMAN,
    OpenedFile,
    Slice,
    agreement,
    disagreements,
    exact,
    grid_page,
    item_record,
    leaderboard,
    make_slice,
    open_results,
    slice_from_json,
)
from tests.explore.constructed import (
    MODELS,
    RUN,
    constructed_records,
    write_jsonl,
    write_manifest_with_images,
)

TOY = Slice(name="toy", datasets=("toy",))


@pytest.fixture()
def run_file(tmp_path: Path) -> Path:
    return write_jsonl(constructed_records(), tmp_path / "results.jsonl")


@pytest.fixture()
def store(run_file: Path):
    opened = open_results([OpenedFile(run_file)])
    yield opened
    opened.close()


def toy_edits() -> list[tuple[dict, dict, int]]:
    return [(r, e, j) for r in constructed_records() if r["dataset"] == "toy" and r["status"] == "ok"
            for j, e in enumerate(r["edits"])]


def human_value(record: dict, index: int) -> float:
    """The protocols' per-model human value, from their definition: the score, else the 2AFC win."""
    human = record["human"]
    if "scores" in human:
        return human["scores"][index]
    return 1.0 if human["preferred"] == index else 0.0


def test_leaderboard_means_ranks_and_human_tau_match_an_independent_computation(store):
    board = leaderboard(store, TOY)
    rows = {row.model: row for row in board.rows}
    assert set(rows) == set(MODELS)
    for key, higher in (("augclip", True), ("l2", False)):
        means = {m: statistics.fmean(e["metrics"][key] for _, e, _ in toy_edits() if e["name"] == m) for m in MODELS}
        for m in MODELS:
            cell = rows[m].cells[key]
            assert cell.mean == pytest.approx(means[m], rel=1e-12)
            assert cell.n == 12
            assert cell.ci is not None and cell.ci[0] <= cell.mean <= cell.ci[1] and cell.ci_method == "bootstrap"
        order = sorted(MODELS, key=lambda m: -means[m] if higher else means[m])
        assert [rows[m].cells[key].rank for m in order] == [1.0, 2.0, 3.0]
        human = {m: statistics.fmean(human_value(r, j) for r, e, j in toy_edits() if e["name"] == m) for m in MODELS}
        oriented = [means[m] if higher else -means[m] for m in MODELS]
        expected_tau = stats.kendalltau(oriented, [human[m] for m in MODELS]).statistic
        assert board.tau[(1, key)] == pytest.approx(expected_tau)
        assert rows["A"].human_mean == pytest.approx(human["A"])
    assert [rows[m].human_rank for m in MODELS] == [1.0, 2.0, 3.0]
    assert all(row.untrained for row in board.rows)  # random:tiny: the label stays


def test_leaderboard_tau_and_agreement_equal_protocol(run_file, store):
    report = compute_protocols(run_file, n_boot=60, seed=0)
    mine = agreement(store, TOY, n_boot=60, seed=0)
    board = leaderboard(store, TOY)
    for key in ("augclip", "l2"):
        theirs, ours = report.datasets["toy"].metrics[key], mine.human[key]
        for figure in ("s2afc", "pearson", "spearman", "kendall", "pair_alignment", "model_spearman", "model_kendall"):
            a, b = getattr(theirs, figure), getattr(ours, figure)
            assert (a.value, a.ci, a.n) == (b.value, b.ci, b.n), (key, figure)
        assert board.tau[(1, key)] == pytest.approx(theirs.model_kendall.value, abs=1e-12)
        ranks = {row.name: (row.metric_rank, row.human_rank) for row in theirs.models}
        ours_ranks = {row.model: (row.cells[key].rank, row.human_rank) for row in board.rows}
        assert ours_ranks == ranks
    triplets = agreement(store, Slice(datasets=("trip",)), n_boot=60)
    for key in ("augclip", "l2"):
        a, b = report.datasets["trip"].metrics[key].acc_both, triplets.human[key].acc_both
        assert (a.value, a.ci, a.n) == (b.value, b.ci, b.n)
        assert b.value == 0.75  # trip-3's ep beats its gt under both metrics


def test_the_pages_bound_on_agreement_is_said(store):
    with pytest.raises(InputError, match="the slice has 12 items; the page computes agreement for at most 5"):
        agreement(store, TOY, n_boot=0, max_items=5)
    assert agreement(store, TOY, n_boot=0, max_items=12).n_items == 12


def test_a_slices_agreement_is_computed_once_per_store_and_bootstrap_settings(store):
    first = agreement(store, TOY, n_boot=40, seed=0)
    assert agreement(store, dataclasses.replace(TOY, name="same edits"), n_boot=40, seed=0) is first
    assert agreement(store, TOY, n_boot=40, seed=1) is not first  # other resamples: computed
    other = agreement(store, Slice(datasets=("trip",)), n_boot=40, seed=0)
    assert other is not first and other.n_items != first.n_items
    for n in range(store.MAX_REMEMBERED + 1):  # the bound: the oldest is forgotten
        agreement(store, TOY, n_boot=0, seed=100 + n)
    assert len(store._remembered) == store.MAX_REMEMBERED
    again = agreement(store, TOY, n_boot=40, seed=0)
    assert again is not first and again.human["augclip"].model_kendall == first.human["augclip"].model_kendall


def test_s2afc_and_metric_matrix_from_the_definitions(store):
    mine = agreement(store, TOY, n_boot=0)
    credits = []
    for record in (r for r in constructed_records() if r["dataset"] == "toy" and r["status"] == "ok"):
        values = [e["metrics"]["augclip"] for e in record["edits"]]
        credits.append(1.0 if int(np.argmax(values)) == record["human"]["preferred"] else 0.0)
    assert mine.human["augclip"].s2afc.value == pytest.approx(sum(credits) / len(credits))
    augclip = [e["metrics"]["augclip"] for _, e, _ in toy_edits()]
    negated_l2 = [-e["metrics"]["l2"] for _, e, _ in toy_edits()]
    assert mine.rho[("augclip", "l2")] == pytest.approx(stats.spearmanr(augclip, negated_l2).statistic)
    assert mine.rho[("l2", "augclip")] == mine.rho[("augclip", "l2")] and mine.rho[("l2", "l2")] == pytest.approx(1)


def test_missing_values_are_left_out_as_protocol_leaves_them(tmp_path):
    records = constructed_records()
    for i in (3, 4, 9):  # L2 unavailable on one edit of three items
        records[i]["edits"][1]["metrics"]["l2"] = None
    path = write_jsonl(records, tmp_path / "gaps.jsonl")
    store = open_results([OpenedFile(path)])
    try:
        mine = agreement(store, TOY, n_boot=30)
        pairs = [(e["metrics"]["augclip"], -e["metrics"]["l2"]) for r in records if r["dataset"] == "toy"
                 and r["status"] == "ok" for e in r["edits"] if e["metrics"]["l2"] is not None]
        assert mine.pairs[("augclip", "l2")] == len(pairs) == 33
        assert mine.rho[("augclip", "l2")] == pytest.approx(stats.spearmanr(*zip(*pairs)).statistic)
        theirs = compute_protocols(path, n_boot=30).datasets["toy"].metrics["l2"]
        for figure in ("s2afc", "kendall", "model_kendall"):
            a, b = getattr(theirs, figure), getattr(mine.human["l2"], figure)
            assert (a.value, a.ci, a.n) == (b.value, b.ci, b.n), figure
        row = next(r for r in leaderboard(store, TOY).rows if r.model == "B")
        assert row.cells["l2"].n == 9
        assert row.cells["l2"].mean == pytest.approx(statistics.fmean(
            r["edits"][1]["metrics"]["l2"] for r in records[:12] if r["edits"][1]["metrics"]["l2"] is not None))
    finally:
        store.close()


def test_disagreements_are_the_known_items_strongest_first(store):
    found = disagreements(store, TOY, "augclip", "l2")
    expected = set()
    for record in (r for r in constructed_records() if r["dataset"] == "toy" and r["status"] == "ok"):
        augclip = [e["metrics"]["augclip"] for e in record["edits"]]
        l2 = [e["metrics"]["l2"] for e in record["edits"]]
        if int(np.argmax(augclip)) != int(np.argmin(l2)):
            expected.add(record["id"])
    assert {"toy-0", "toy-1"} <= {d.id for d in found} == expected
    assert [d.strength for d in found] == sorted((d.strength for d in found), reverse=True)
    first = next(d for d in found if d.id == "toy-0")
    assert (first.winner_a, first.winner_b) == ("A [0]", "B [1]")
    with_humans = {d.id for d in disagreements(store, TOY, "augclip", HUMAN)}
    assert "toy-2" in with_humans and "toy-0" not in with_humans


def test_the_grid_pages_in_disagreement_order(store):
    found = disagreements(store, TOY, "augclip", "l2")
    page = grid_page(store, TOY, sort="l2", ranking=[d.item for d in found], page_size=200)
    assert page.total == 3 * len(found)
    assert [row.item for row in page.rows] == [d.item for d in found for _ in range(3)]
    assert [row.edit for row in page.rows[:3]] == [0, 1, 2]


def test_slices_filter_every_view(store, tmp_path):
    only_a = make_slice("A high", datasets=["toy"], models=["A"], ranges={"augclip": [1.0, None]})
    expected = [e for _, e, _ in toy_edits() if e["name"] == "A" and e["metrics"]["augclip"] >= 1.0]
    page = grid_page(store, only_a, sort="augclip", descending=True)
    assert page.total == len(expected) > 0
    assert [row.values["augclip"] for row in page.rows] == sorted((e["metrics"]["augclip"] for e in expected),
                                                                   reverse=True)
    board = leaderboard(store, only_a)
    assert [row.model for row in board.rows] == ["A"] and board.rows[0].cells["augclip"].n == len(expected)
    assert slice_from_json(only_a.to_json()) == only_a
    with pytest.raises(InputError, match="no metric 'nope'"):
        grid_page(store, make_slice("x", ranges={"nope": [0, 1]}))
    with pytest.raises(InputError, match="low 2 is above high 1"):
        make_slice("x", ranges={"augclip": [2, 1]})


def test_parquet_folder_gives_the_same_leaderboard(run_file, store, tmp_path):
    folder = export_parquet(run_file, tmp_path / "results.parquet", rows_per_part=5)
    parquet = open_results([OpenedFile(folder)])
    try:
        assert leaderboard(parquet, TOY).table() == leaderboard(store, TOY).table()
        assert parquet.n_records == store.n_records == len(constructed_records())
    finally:
        parquet.close()


def test_runs_with_other_settings_are_said_and_never_pooled(run_file, tmp_path):
    other_run = {**RUN, "model": "random:ViT-B-16", "version": "9.8-test"}
    other = write_jsonl(constructed_records(other_run), tmp_path / "other.jsonl")
    both = open_results([OpenedFile(run_file), OpenedFile(other)])
    try:
        assert len(both.runs) == 2
        differences = " | ".join(both.run_differences())
        assert "model differs" in differences and "random:ViT-B-16" in differences and "version differs" in differences
        board = leaderboard(both, TOY)
        assert sorted((row.run, row.model) for row in board.rows) == [(r, m) for r in (1, 2) for m in MODELS]
        with pytest.raises(InputError, match="2 runs with different settings"):
            agreement(both, TOY)
        assert agreement(both, Slice(datasets=("toy",), runs=(2,)), n_boot=0).n_items == 12
    finally:
        both.close()


def test_item_record_numbers_are_the_files_exactly(run_file, store):
    page = grid_page(store, TOY, sort="augclip", descending=True, page_size=1)
    view = item_record(store, page.rows[0].item)
    line = json.loads(run_file.read_text().splitlines()[page.rows[0].item])
    assert view.record["edits"] == line["edits"] and view.record["human"] == line["human"]
    headers, rows = view.score_rows(["augclip", "l2"])
    for row, edit in zip(rows, line["edits"]):
        assert [float(row[3]), float(row[4])] == [edit["metrics"]["augclip"], edit["metrics"]["l2"]]
        assert row[3] == repr(edit["metrics"]["augclip"])
    assert page.rows[0].values["augclip"] == 1.234567890123456
    assert exact(None) == "n/a"


def test_a_torn_last_line_is_counted_and_a_foreign_file_refused(tmp_path):
    path = write_jsonl(constructed_records(), tmp_path / "r.jsonl")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"id": "torn", "edits": [{"ind')
    store = open_results([OpenedFile(path)])
    try:
        assert store.files[0].unreadable_lines == 1 and store.n_records == len(constructed_records())
    finally:
        store.close()
    foreign = tmp_path / "f.jsonl"
    foreign.write_text('{"name": "not a result"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="f.jsonl: holds no batch result records"):
        open_results([OpenedFile(foreign)])


def test_a_file_with_a_non_number_value_still_opens(tmp_path):
    records = constructed_records()
    records[0]["edits"][0]["metrics"]["augclip"] = "high"  # a foreign writer: the typed read fails, the loose one not
    store = open_results([OpenedFile(write_jsonl(records, tmp_path / "r.jsonl"))])
    try:
        values = dict(store.query("SELECT edit, \"m:augclip\" FROM edits WHERE id = 'toy-0'"))
        assert values == {0: None, 1: records[0]["edits"][1]["metrics"]["augclip"],
                          2: records[0]["edits"][2]["metrics"]["augclip"]}
    finally:
        store.close()


def test_manifest_gives_edit_types_and_judgments(tmp_path):
    records = constructed_records()
    manifest = write_manifest_with_images(records, tmp_path / "bench")
    # the manifest's judgments are read, not the copy in the record: change one in the results
    records[3]["human"] = {"preferred": 2}
    results = write_jsonl(records, tmp_path / "results.jsonl")
    store = open_results([OpenedFile(results, manifest)])
    try:
        assert store.values("edit_type") == ["add", "remove"]
        adds = grid_page(store, make_slice("adds", edit_types=["add"]), page_size=200)
        assert {row.id for row in adds.rows} == {f"toy-{i}" for i in range(12) if i % 2}
        preferred = store.query("SELECT DISTINCT human_preferred FROM edits WHERE id = 'toy-3'")
        assert preferred == [(constructed_records()[3]["human"]["preferred"],)]
        view = item_record(store, 0)
        assert view.image(view.record["source"]) == tmp_path / "bench" / "src" / "0.png"
        assert view.image("../results.jsonl") is None  # outside the manifest's folder: refused
    finally:
        store.close()


def _wide_records(n_metrics: int, n_models: int) -> list[dict]:
    keys = [f"m{k}" for k in range(n_metrics)]
    return [{"id": f"w{i}", "dataset": "d", "status": "ok", "source": "s.png", "target_text": "t",
             "edits": [{"index": j, "name": f"model-{j}", "role": "candidate",
                        "metrics": {key: float(i + j + k) for k, key in enumerate(keys)}} for j in range(n_models)],
             "run": {"model": "random:x", "untrained": True}} for i in range(3)]


def test_a_file_with_thousands_of_metric_names_is_refused_when_opened(tmp_path):
    wide = write_jsonl(_wide_records(2000, 2), tmp_path / "wide.jsonl")
    with pytest.raises(InputError, match="2000 metrics"):
        open_results([OpenedFile(wide)])


def test_a_leaderboard_of_hundreds_of_models_gives_normal_intervals_said_so(tmp_path):
    from augclip_demo.explore.leaderboard import MAX_BOOTSTRAP_CELLS

    n_models = MAX_BOOTSTRAP_CELLS + 1
    opened = open_results([OpenedFile(write_jsonl(_wide_records(1, n_models), tmp_path / "many.jsonl"))])
    board = leaderboard(opened, Slice())
    opened.close()
    assert len(board.rows) == n_models
    assert any("all intervals are normal intervals" in note for note in board.notes)
    row = next(r for r in board.rows if r.model == "model-7")
    values = [i + 7.0 for i in range(3)]  # the values of model-7 (items 0..2)
    half = 1.959963984540054 * statistics.stdev(values) / np.sqrt(3)
    cell = row.cells["m0"]
    assert cell.ci_method == "normal" and cell.mean == pytest.approx(8.0)
    assert cell.ci == pytest.approx((8.0 - half, 8.0 + half))


# ---------------------------------------------------------------------------------------------- one reading
def _judged(item_id: str, models: list[str], augclip: dict[str, float], l2: dict[str, float],
            human: dict) -> dict:
    edits = [{"index": j, "path": f"edits/{m}/{item_id}.png", "name": m, "role": "candidate", "sha256": None,
              "metrics": {"augclip": augclip[m], "l2": l2[m]}, "unavailable": {}} for j, m in enumerate(models)]
    return {"id": item_id, "dataset": "five", "status": "ok", "source": f"src/{item_id}.png", "target_text": "a toy",
            "source_text": None, "instruction": None, "edits": edits, "human": human, "attributes": None,
            "meta": None, "run": RUN}


FIVE_AUGCLIP = {"X": 0.2, "A": 0.9, "B": 0.5, "C": 0.1}
FIVE_L2 = {"X": 0.7, "A": 0.1, "B": 0.4, "C": 0.6}
#: issue 44's records: x0's chosen edit (X) is outside a slice of A, B, C
FIVE = [("x0", ["X", "A"], 0), ("x1", ["A", "B"], 0), ("x2", ["B", "C"], 0), ("x3", ["B", "C"], 1),
        ("x4", ["B", "C"], 0)]


def test_leaderboard_and_agreement_read_a_slices_choices_alike(tmp_path):
    """A choice of an edit outside the slice is no choice in every view: x0 gives A no 2AFC value, so the
    human means are A 1.0, B 0.5, C 1/3 (from the definition below) and tau is 1.0 in both views."""
    records = [_judged(i, models, FIVE_AUGCLIP, FIVE_L2, {"preferred": p}) for i, models, p in FIVE]
    store = open_results([OpenedFile(write_jsonl(records, tmp_path / "five.jsonl"))])
    inside = ("A", "B", "C")
    human: dict[str, list[float]] = {}
    for _, models, chosen in FIVE:
        if models[chosen] in inside:  # the definition: the choice counts when the chosen edit is in the slice
            for j, m in enumerate(models):
                if m in inside:
                    human.setdefault(m, []).append(1.0 if j == chosen else 0.0)
    expected = {m: statistics.fmean(v) for m, v in human.items()}
    assert expected == pytest.approx({"A": 1.0, "B": 0.5, "C": 1 / 3})
    try:
        only = make_slice("ABC", models=list(inside))
        board = leaderboard(store, only, n_boot=0)
        mine = agreement(store, only, n_boot=0)
        assert {row.model: row.human_mean for row in board.rows} == pytest.approx(expected)
        for key, higher in (("augclip", True), ("l2", False)):
            means = {m: (FIVE_AUGCLIP if key == "augclip" else FIVE_L2)[m] for m in inside}
            tau = stats.kendalltau([means[m] if higher else -means[m] for m in inside],
                                   [expected[m] for m in inside]).statistic
            assert tau == pytest.approx(1.0)
            assert board.tau[(1, key)] == pytest.approx(tau, abs=1e-12)
            assert mine.human[key].model_kendall.value == pytest.approx(tau, abs=1e-12)
            assert {row.name: row.human_mean for row in mine.human[key].models} == pytest.approx(expected)
            assert {row.model: row.human_rank for row in board.rows} == {
                row.name: row.human_rank for row in mine.human[key].models}
        assert mine.human["augclip"].s2afc.n == 4  # x0 has no choice in the slice
    finally:
        store.close()


def test_disagreements_with_the_humans_remap_the_choice_to_the_slice(tmp_path):
    """Issue 44's record: L2 X 0.5, A 0.1, B 0.3, people chose X and scored [5, 1, 4]. In a slice of A and B the
    humans' winner is B (the choice is outside, so the highest score inside), L2's is A: a disagreement."""
    record = _judged("d0", ["X", "A", "B"], {"X": 0.5, "A": 0.5, "B": 0.5}, {"X": 0.5, "A": 0.1, "B": 0.3},
                     {"preferred": 0, "scores": [5, 1, 4]})
    store = open_results([OpenedFile(write_jsonl([record], tmp_path / "one.jsonl"))])
    try:
        found = disagreements(store, make_slice("AB", models=["A", "B"]), "l2", HUMAN)
        assert [(d.id, d.winner_a, d.winner_b) for d in found] == [("d0", "A [1]", "B [2]")]
        # the whole item: people chose X, L2 prefers A: also a disagreement, with the recorded choice
        whole = disagreements(store, Slice(), "l2", HUMAN)
        assert [(d.winner_a, d.winner_b) for d in whole] == [("A [1]", "X [0]")]
    finally:
        store.close()
