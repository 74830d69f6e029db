"""Explore with a study's judgments in place of the recorded ones: a rater answers a 2AFC and a rating study over
the constructed run's manifest by a known rule; the leaderboard and agreement follow the study, computed here
independently from that rule."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.explore import HUMAN, Slice, agreement, leaderboard
from augclip_demo.explore.shelf import RECORDED, Shelf
from augclip_demo.study import store as study_store
from augclip_demo.ui.explore import handlers as on
from augclip_demo.ui.explore.handlers import ExploreContext
from augclip_demo.ui.explore.judgments import StudyReader
from augclip_demo.ui.storage import WorkFolders
from tests.explore.constructed import MODELS, constructed_records, write_jsonl, write_manifest_with_images

TOY = Slice(name="toy", datasets=("toy",))


def best_edit(item_id: str) -> int:
    """The rater's favourite edit of an item: A on the first six toy items, B on the next four, C on the last two."""
    number = int(item_id.split("-")[1]) if item_id.startswith("toy-") else 0
    return 0 if number < 6 else 1 if number < 10 else 2


def rating(item_id: str, index: int) -> int:
    return 5 if index == best_edit(item_id) else 1 + index


def answer_everything(db: Path, name: str, manifest: Path, kind: str) -> None:
    rater, = study_store.add_raters(db, name, labels=["ann"])
    data = study_store.load_study(db, name)
    where = {manifest.parent / edit["path"]: (item_id, i)
             for item_id, line in data.lines.items() for i, edit in enumerate(line["edits"])}
    while (view := study_store.rater_view(db, rater.token)).task is not None:
        position = view.task["position"]
        if kind == "rating":
            item_id, index = where[study_store.task_image(db, rater.token, position, "edit")[0]]
            answer = rating(item_id, index)
        else:
            item_id, left = where[study_store.task_image(db, rater.token, position, "left")[0]]
            _, right = where[study_store.task_image(db, rater.token, position, "right")[0]]
            best = best_edit(item_id)
            answer = "left" if left == best else "right" if right == best else ("left" if left < right else "right")
        study_store.submit_answer(db, rater.token, position, {"overall": answer})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("judged")
    records = constructed_records()
    manifest = write_manifest_with_images(records, folder / "bench")
    results = write_jsonl(records, folder / "results.jsonl")
    db = folder / "studies.sqlite3"
    study_store.create_study(db, "pairs", manifest, kind="2afc", per_unit=1, repeats=0)
    answer_everything(db, "pairs", manifest, "2afc")
    study_store.create_study(db, "ratings", manifest, kind="rating", per_unit=1, repeats=0)
    answer_everything(db, "ratings", manifest, "rating")
    return Shelf([f"{results}={manifest}"], judgments=StudyReader(db))


def toy_items() -> list[dict]:
    return [r for r in constructed_records() if r["dataset"] == "toy" and r["status"] == "ok"]


def test_the_study_questions_are_offered_and_nothing_else_is_taken(run):
    assert run.judgment_choices() == [RECORDED, "study pairs (overall)", "study ratings (overall)"]
    with pytest.raises(InputError, match="choose one of the listed sources"):
        run.store("named:results.jsonl", "study ../../etc (overall)")


def test_a_2afc_study_gives_the_items_choices(run):
    view = run.store("named:results.jsonl", "study pairs (overall)")
    assert view.judgments == "study pairs (overall)"
    board = leaderboard(view, TOY)
    wins = {m: statistics.fmean(1.0 if best_edit(r["id"]) == j else 0.0 for r in toy_items())
            for j, m in enumerate(MODELS)}
    assert {row.model: row.human_mean for row in board.rows} == pytest.approx(wins)
    assert [row.human_rank for row in sorted(board.rows, key=lambda r: r.model)] == [1.0, 2.0, 3.0]
    credits = [1.0 if int(np.argmax([e["metrics"]["augclip"] for e in r["edits"]])) == best_edit(r["id"]) else 0.0
               for r in toy_items()]
    assert agreement(view, TOY, n_boot=0).human["augclip"].s2afc.value == pytest.approx(statistics.fmean(credits))
    # the recorded judgments are still there for the plain store (another session's choice)
    recorded = leaderboard(run.store("named:results.jsonl"), TOY)
    assert {row.model: row.human_mean for row in recorded.rows} != {row.model: row.human_mean for row in board.rows}


def test_a_rating_study_gives_per_edit_scores(run):
    view = run.store("named:results.jsonl", "study ratings (overall)")
    board = leaderboard(view, TOY)
    means = {m: statistics.fmean(rating(r["id"], j) for r in toy_items()) for j, m in enumerate(MODELS)}
    assert {row.model: row.human_mean for row in board.rows} == pytest.approx(means)
    spearman = agreement(view, TOY, n_boot=0).human["augclip"].spearman
    from scipy import stats

    pairs = [(e["metrics"]["augclip"], rating(r["id"], j)) for r in toy_items() for j, e in enumerate(r["edits"])]
    assert spearman.value == pytest.approx(stats.spearmanr(*zip(*pairs)).statistic)


class CountedReader(StudyReader):
    """The app's study reader over a real database, counting how often it lists the database's studies."""

    def __init__(self, db: Path):
        super().__init__(db)
        self.listings = 0

    def _offered(self) -> dict[str, tuple[str, str]]:
        self.listings += 1
        return super()._offered()


def test_a_studys_judgments_are_read_once_per_choice_and_every_view_reuses_them(run, tmp_path):
    """Picking a study lists the studies once; the views that follow (and the next file opened) use the
    judgments read then, even once the database is gone; picking again reads it anew."""
    db = shutil.copy(run.judgments.db, tmp_path / "studies.sqlite3")
    named = run.named["results.jsonl"][0]
    reader = CountedReader(db)
    ctx = ExploreContext(Settings(), Shelf([f"{named.results}={named.manifest}"], judgments=reader),
                         WorkFolders(tmp_path))
    state = on.open_results_file(ctx, "results.jsonl", None, None)[0]
    assert reader.listings == 0  # the recorded judgments: no study read
    on.pick_judgments(ctx, state, "study pairs (overall)")
    assert reader.listings == 1 and state["judgments"] == "study pairs (overall)"
    Path(db).unlink()  # what the views show now comes from the judgments read when picked
    views = on.views(ctx, state, None, "id", False, 1)
    on.details(ctx, state, "augclip", HUMAN, "id", False, 1)
    on.regrid(ctx, state, "augclip", True, 2)
    on.refound(ctx, state, "l2", HUMAN)
    on.open_results_file(ctx, "results.jsonl", None, state)
    assert reader.listings == 1
    wins = {m: statistics.fmean(1.0 if best_edit(r["id"]) == j else 0.0 for r in toy_items())
            for j, m in enumerate(MODELS)}
    board = views[2]
    humans = {row[1].removesuffix(" [untrained]"): row[3] for row in board["data"]}
    assert all(humans[m].startswith(f"{wins[m]:.4f} (#") for m in MODELS)  # the study's win rates
    with pytest.raises(gr.Error, match="choose one of the listed sources"):  # picked again: read anew, and gone
        on.pick_judgments(ctx, state, "study pairs (overall)")
