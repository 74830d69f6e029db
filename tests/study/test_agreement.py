"""Live agreement on constructed votes, each figure against a computation written here."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import spearmanr

from augclip_demo.batch.protocol_tables import compute_protocols
from augclip_demo.study import store
from augclip_demo.study.agreement import study_agreement
from augclip_demo.study.exchange import export_manifest
from tests.study.helpers import write_results, write_study_manifest

N_ITEMS = 6


@pytest.fixture()
def setting(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=N_ITEMS)
    rng = np.random.default_rng(0)
    # clip_i ranks alpha > beta > gamma in every item; "noise" is a metric unrelated to anything
    values = {"clip_i": {f"item-{i}": [0.9 - 0.01 * i, 0.5, 0.1 + 0.01 * i] for i in range(N_ITEMS)},
              "noise": {f"item-{i}": [float(v) for v in rng.random(3)] for i in range(N_ITEMS)},
              "l2": {f"item-{i}": [float(v) for v in rng.random(3)] for i in range(N_ITEMS)}}
    results = write_results(manifest, values, tmp_path / "results.jsonl")
    db = tmp_path / "studies.sqlite3"
    store.create_study(db, "s", manifest, per_unit=3, repeats=4, seed=1)
    return db, manifest, values, results


def rate(db, manifest, token, pick):
    """Answer all of a rater's tasks; ``pick(item_id, left, right)`` -> "left" / "right" / "tie"."""
    data = store.load_study(db, "s")
    where = {manifest.parent / edit["path"]: (item_id, i)
             for item_id, line in data.lines.items() for i, edit in enumerate(line["edits"])}
    while (view := store.rater_view(db, token)).task is not None:
        position = view.task["position"]
        item_id, left = where[store.task_image(db, token, position, "left")[0]]
        _, right = where[store.task_image(db, token, position, "right")[0]]
        store.submit_answer(db, token, position, {"overall": pick(item_id, left, right)})


def follows(values, metric, higher=True):
    def pick(item_id, left, right):
        a, b = values[metric][item_id][left], values[metric][item_id][right]
        return "left" if (a > b) == higher else "right"
    return pick


def test_a_rater_who_follows_a_metric_and_one_who_does_not(setting):
    db, manifest, values, results = setting
    oracle, = store.add_raters(db, "s", labels=["oracle"])
    rate(db, manifest, oracle.token, follows(values, "clip_i"))
    report = study_agreement(store.load_study(db, "s"), [results], n_boot=200)
    # s2AFC of the metric the rater followed is 1 on every pair
    assert report.metrics["clip_i"].s2afc.value == 1.0 and report.metrics["clip_i"].s2afc.n == 3 * N_ITEMS
    # the unrelated metric: the share of pairs where its larger value is the rater's choice, counted here
    agree = sum((values["noise"][f"item-{i}"][a] > values["noise"][f"item-{i}"][b])
                == (values["clip_i"][f"item-{i}"][a] > values["clip_i"][f"item-{i}"][b])
                for i in range(N_ITEMS) for a, b in ((0, 1), (0, 2), (1, 2)))
    assert report.metrics["noise"].s2afc.value == pytest.approx(agree / (3 * N_ITEMS))
    # l2 is lower-is-better: its credit is for the smaller value
    agree_l2 = sum((values["l2"][f"item-{i}"][a] < values["l2"][f"item-{i}"][b])
                   == (values["clip_i"][f"item-{i}"][a] > values["clip_i"][f"item-{i}"][b])
                   for i in range(N_ITEMS) for a, b in ((0, 1), (0, 2), (1, 2)))
    assert report.metrics["l2"].s2afc.value == pytest.approx(agree_l2 / (3 * N_ITEMS))
    # the raters' AccBoth: gt (alpha) chosen over ep (beta) and em (gamma) in every triplet; clip_i's too
    assert report.human_acc_both.value == 1.0 and report.metric_acc_both["clip_i"].value == 1.0
    # repeats: a rater following a metric is consistent on every repeated pair
    assert [(c.rater, c.repeats, c.same) for c in report.consistency] == [("oracle", 4, 4)]
    # Bradley-Terry: alpha > beta > gamma, as clip_i ranks them (rank correlation 1)
    scores = dict(zip(report.ranking.names, report.ranking.scores))
    assert scores["alpha"] > scores["beta"] > scores["gamma"]
    clip_rank = next(m for m in report.metric_rankings if m.metric == "clip_i")
    assert clip_rank.spearman_with_humans == pytest.approx(1.0)


def test_a_rater_answering_at_random(setting):
    db, manifest, values, results = setting
    coin, = store.add_raters(db, "s", labels=["coin"])
    rng = random.Random(4)
    rate(db, manifest, coin.token, lambda item_id, left, right: rng.choice(["left", "right"]))
    data = store.load_study(db, "s")
    report = study_agreement(data, [results], n_boot=500)
    firsts = [j for j in data.judgments if not j.is_repeat]
    expected = np.mean([float(j.answer == "a") for j in firsts])  # clip_i always prefers the lower index
    figure = report.metrics["clip_i"].s2afc
    assert figure.value == pytest.approx(expected)
    assert figure.ci[0] < 0.5 < figure.ci[1]  # no better than chance, as it should be
    # consistency on repeats, counted here from the stored rows
    first = {(j.item_id, j.edit_a, j.edit_b): j.answer for j in firsts}
    same = [first[(j.item_id, j.edit_a, j.edit_b)] == j.answer for j in data.judgments if j.is_repeat]
    assert [(c.repeats, c.same) for c in report.consistency] == [(len(same), sum(same))]


def test_rater_agreement_between_an_oracle_a_contrarian_and_a_copy(setting):
    db, manifest, values, results = setting
    oracle, contrarian, copy = store.add_raters(db, "s", labels=["oracle", "contrarian", "copy"])
    rate(db, manifest, oracle.token, follows(values, "clip_i"))
    rate(db, manifest, copy.token, follows(values, "clip_i"))
    rate(db, manifest, contrarian.token, follows(values, "clip_i", higher=False))
    report = study_agreement(store.load_study(db, "s"), n_boot=0)
    inter = report.inter[0]
    # per pair: oracle == copy, both != contrarian: 1 agreeing pair of 3
    assert (inter.percent.agreeing_pairs, inter.percent.pairs) == (3 * N_ITEMS, 9 * N_ITEMS)
    # alpha by hand: per unit values {x, x, y}; D_o = (1/n) sum_u (1/2) * 4 = 2U/3U = 2/3 with n = 3U;
    # pooled: half "a", half "b" over units whose a/b split mirrors -> D_e = (n^2/2)/(n(n-1)) = n/(2(n-1))
    pooled = [v for j in store.load_study(db, "s").judgments if not j.is_repeat for v in [j.answer]]
    n = len(pooled)
    counts = {v: pooled.count(v) for v in set(pooled)}
    d_e = (n * n - sum(c * c for c in counts.values())) / (n * (n - 1))
    assert inter.alpha == pytest.approx(1 - (2 / 3) / d_e)
    assert report.units_complete == 3 * N_ITEMS
    rows = {row.rater: row for row in report.raters}
    # the contrarian against the other two (who agree): never with their majority; the oracle's two others
    # split evenly on every pair, so there is no majority to compare with
    assert (rows["contrarian"].with_others, rows["contrarian"].compared) == (0.0, 3 * N_ITEMS)
    assert (rows["oracle"].with_others, rows["oracle"].compared) == (None, 0)
    assert rows["copy"].answered == 3 * N_ITEMS


def test_the_export_gives_protocol_the_same_s2afc(setting, tmp_path):
    db, manifest, values, results = setting
    oracle, coin, other = store.add_raters(db, "s", labels=["oracle", "coin", "other"])
    rng = random.Random(9)
    rate(db, manifest, oracle.token, follows(values, "clip_i"))
    rate(db, manifest, coin.token, lambda *args: rng.choice(["left", "right", "tie"]))
    rate(db, manifest, other.token, follows(values, "noise"))
    data = store.load_study(db, "s")
    live = study_agreement(data, [results], n_boot=300, seed=3)
    exported = export_manifest(data)
    # results for the exported manifest: the same metric values, the edits as the export lists them
    pair_values = {}
    for metric, per_item in values.items():
        pair_values[metric] = {}
        for i in range(N_ITEMS):
            for a, b in ((0, 1), (0, 2), (1, 2)):
                pair_values[metric][f"item-{i}:pair-{a}-{b}"] = [per_item[f"item-{i}"][a], per_item[f"item-{i}"][b]]
    pair_results = write_results(exported, pair_values, tmp_path / "pair-results.jsonl")
    protocol = compute_protocols(pair_results, n_boot=300, seed=3)
    for metric in values:
        assert protocol.datasets["study"].metrics[metric].s2afc.value == pytest.approx(live.metrics[metric].s2afc.value)
        assert protocol.datasets["study"].metrics[metric].s2afc.ci == pytest.approx(live.metrics[metric].s2afc.ci)


def test_ratings_correlate_with_the_metric_they_follow(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=6)
    values = {"clip_i": {f"item-{i}": [0.2 + 0.1 * i, 0.5, 0.9 - 0.1 * i] for i in range(6)}}
    results = write_results(manifest, values, tmp_path / "results.jsonl")
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "r", manifest, kind="rating")
    ann, = store.add_raters(db, "r", labels=["ann"])
    while (view := store.rater_view(db, ann.token)).task is not None:
        path, _ = store.task_image(db, ann.token, view.task["position"], "edit")
        item_id, index = next((i, k) for i, line in store.load_study(db, "r").lines.items()
                              for k, e in enumerate(line["edits"]) if manifest.parent / e["path"] == path)
        rating = 1 + round(4 * values["clip_i"][item_id][index])  # a monotone map of the metric
        store.submit_answer(db, ann.token, view.task["position"], {"overall": rating})
    report = study_agreement(store.load_study(db, "r"), [results], n_boot=100)
    metric = [v for item in values["clip_i"].values() for v in item]
    ratings = [1 + round(4 * v) for v in metric]
    assert report.metrics["clip_i"].pearson.value == pytest.approx(float(np.corrcoef(metric, ratings)[0, 1]))
    assert report.metrics["clip_i"].spearman.value == pytest.approx(float(spearmanr(metric, ratings).statistic))
    assert report.metrics["clip_i"].spearman.value > 0.8


def test_the_rating_export_gives_protocol_the_same_correlations(tmp_path):
    manifest = write_study_manifest(tmp_path / "data", n_items=5)
    rng = np.random.default_rng(2)
    values = {"clip_i": {f"item-{i}": [float(v) for v in rng.random(3)] for i in range(5)}}
    results = write_results(manifest, values, tmp_path / "results.jsonl")
    db = tmp_path / "s.sqlite3"
    store.create_study(db, "r", manifest, kind="rating", per_unit=2)
    picks = random.Random(6)
    for rater in store.add_raters(db, "r", count=2):
        while (view := store.rater_view(db, rater.token)).task is not None:
            store.submit_answer(db, rater.token, view.task["position"], {"overall": picks.randint(1, 5)})
    data = store.load_study(db, "r")
    live = study_agreement(data, [results], n_boot=300, seed=3)
    exported_results = write_results(export_manifest(data), values, tmp_path / "export-results.jsonl")
    protocol = compute_protocols(exported_results, n_boot=300, seed=3).datasets["study"].metrics["clip_i"]
    for figure in ("pearson", "spearman", "kendall"):
        assert getattr(protocol, figure).value is not None and getattr(protocol, figure).n == 15
        assert getattr(protocol, figure).value == pytest.approx(getattr(live.metrics["clip_i"], figure).value)
        assert getattr(protocol, figure).ci == pytest.approx(getattr(live.metrics["clip_i"], figure).ci)
