"""Protocol figures on constructed results with hand-computed answers (ties, missing metrics, CIs)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from augclip_demo.batch.protocol_tables import compute_protocols
from augclip_demo.cli import main
from augclip_demo.errors import InputError
from augclip_demo.metrics.agreement import (
    ProtocolEdit,
    ProtocolItem,
    evaluate_metric,
    kendall,
    mean_figure,
    pair_credits,
    pearson,
    preference_credit,
    spearman,
    strictly_best,
    top_shares,
)


def test_preference_credit_ties_and_missing():
    assert preference_credit([0.9, 0.1], 0) == 1.0
    assert preference_credit([0.9, 0.1], 1) == 0.0
    assert preference_credit([0.5, 0.5], 1) == 0.5  # a tie counts 0.5
    assert preference_credit([0.5, 0.5, 0.5], 2) == pytest.approx(1 / 3)
    assert preference_credit([0.5, None], 0) is None
    assert preference_credit([0.2, 0.1], 1, higher_is_better=False) == 1.0  # L2: lower wins


def test_triplet_shares_and_strict_accuracy():
    assert strictly_best({"gt": 0.9, "ep": 0.5, "em": 0.1}) == 1.0
    assert strictly_best({"gt": 0.9, "ep": 0.9, "em": 0.1}) == 0.0  # a tie at the top is a miss
    assert top_shares({"gt": 0.9, "ep": 0.9, "em": 0.1}) == {"gt": 0.5, "ep": 0.5, "em": 0.0}
    assert top_shares({"gt": 0.3, "ep": 0.1, "em": 0.2}, higher_is_better=False) == {"gt": 0.0, "ep": 1.0, "em": 0.0}
    assert top_shares({"gt": 0.3, "ep": None, "em": 0.2}) is None


def test_correlations_by_hand():
    x, y = [1, 2, 3, 4], [1, 3, 2, 4]
    assert pearson(x, y) == pytest.approx(0.8)  # sum dx*dy = 4, sum dx^2 = sum dy^2 = 5
    assert spearman(x, y) == pytest.approx(0.8)  # 1 - 6*2 / (4*15)
    assert kendall(x, y) == pytest.approx(4 / 6)  # 5 concordant, 1 discordant pair
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833, abs=1e-6)  # average ranks
    assert pearson([1, 1, 1], [1, 2, 3]) is None and kendall([1], [2]) is None


def test_correlations_equal_scipys_on_both_sides_of_the_pair_count_bound():
    """Up to 256 points tau-b is counted over pairs, above it is scipy's; either way it is scipy's value, and
    Spearman's ranks are scipy's exactly.
    Ties in both variables, so tau-b's correction matters."""
    from scipy import stats

    rng = np.random.default_rng(11)
    for n in (3, 40, 256, 257, 600):
        x, y = rng.integers(0, 7, n).astype(float), rng.integers(0, 5, n).astype(float)
        assert kendall(x, y) == stats.kendalltau(x, y).statistic, n  # the same divisions: the same bits
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12), n
    assert kendall([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None  # a constant variable: no tau


def test_pair_alignment_skips_human_ties_and_halves_metric_ties():
    credits = pair_credits([0.9, 0.1, 0.1, 0.5], [3, 1, 2, 3])
    # pairs (0,1) agree, (0,2) agree, (0,3) human tie -> left out, (1,2) metric tie -> 0.5,
    # (1,3) 1<3 and 0.1<0.5 agree, (2,3) 2<3 and 0.1<0.5 agree
    assert sorted(credits) == [0.5, 1.0, 1.0, 1.0, 1.0]


def item(item_id, values, roles=None, names=None, preferred=None, scores=None, key="m"):
    roles = roles or ["candidate"] * len(values)
    names = names or [f"model{i}" for i in range(len(values))]
    return ProtocolItem(id=item_id, edits=[ProtocolEdit(name=n, role=r, metrics={key: v})
                                           for v, r, n in zip(values, roles, names)],
                        preferred=preferred, scores=scores)


def test_dataset_figures_by_hand():
    triplet = ["gt", "ep", "em"]
    items = [
        # 2AFC: credits 1, 0, 0.5, 1 ; the item with a missing value is left out
        item("a", [0.9, 0.1], preferred=0), item("b", [0.9, 0.1], preferred=1),
        item("c", [0.4, 0.4], preferred=0), item("d", [0.2, 0.3], preferred=1), item("e", [None, 0.3], preferred=1),
        # triplets: gt strict / ep wins / gt ties em / em wins
        item("t1", [0.9, 0.5, 0.1], triplet), item("t2", [0.5, 0.9, 0.1], triplet),
        item("t3", [0.9, 0.1, 0.9], triplet), item("t4", [0.1, 0.2, 0.3], triplet),
    ]
    res = evaluate_metric(items, "m", n_boot=200, seed=1)
    assert res.s2afc.value == pytest.approx(2.5 / 4) and res.s2afc.n == 4
    assert res.acc_both.value == pytest.approx(0.25) and res.acc_both.n == 4
    wins = {role: fig.value for role, fig in res.wins.items()}
    assert wins == pytest.approx({"gt": 0.375, "ep": 0.25, "em": 0.375})
    assert sum(wins.values()) == pytest.approx(1.0)
    low, high = res.s2afc.ci
    assert 0.0 <= low <= res.s2afc.value <= high <= 1.0
    assert res.pearson is None and res.pair_alignment is None  # no per-edit scores
    assert res.model_spearman.n == 2  # the 2AFC items' two model names (win rates as the human side)
    # same seed, same interval; another seed, another interval
    assert evaluate_metric(items, "m", n_boot=200, seed=1).s2afc.ci == res.s2afc.ci
    assert evaluate_metric(items, "m", n_boot=0).s2afc.ci is None


def test_missing_metric_gives_no_value_not_zero():
    items = [item("a", [0.9, 0.1], preferred=0, key="other")]
    res = evaluate_metric(items, "m", n_boot=50)
    assert res.s2afc.value is None and res.s2afc.n == 0


def test_lower_is_better_orientation():
    items = [item("a", [0.1, 0.3], preferred=0), item("b", [0.1, 0.3], preferred=1)]
    assert evaluate_metric(items, "m", higher_is_better=False, n_boot=0).s2afc.value == 0.5
    assert evaluate_metric([item("a", [0.1, 0.3], preferred=0)], "m", higher_is_better=False,
                           n_boot=0).s2afc.value == 1.0


def test_model_ranks_and_score_correlations():
    names = ["A", "B", "C"]
    items = [
        item("1", [0.9, 0.5, 0.1], names=names, scores=[5, 3, 1]),
        item("2", [0.7, 0.6, 0.2], names=names, scores=[4, 4, 2]),
        item("3", [0.8, 0.3, 0.4], names=names, scores=[3, 2, 1]),
    ]
    res = evaluate_metric(items, "m", n_boot=100)
    rows = {row.name: row for row in res.models}
    assert rows["A"].metric_mean == pytest.approx(0.8) and rows["A"].human_mean == pytest.approx(4.0)
    assert rows["B"].metric_mean == pytest.approx(1.4 / 3) and rows["C"].human_mean == pytest.approx(4 / 3)
    assert [rows[n].metric_rank for n in names] == [1, 2, 3] and [rows[n].human_rank for n in names] == [1, 2, 3]
    assert res.model_spearman.value == pytest.approx(1.0) and res.model_kendall.value == pytest.approx(1.0)
    assert res.model_spearman.n == 3
    xs = [0.9, 0.5, 0.1, 0.7, 0.6, 0.2, 0.8, 0.3, 0.4]
    ys = [5, 3, 1, 4, 4, 2, 3, 2, 1]
    assert res.pearson.value == pytest.approx(pearson(xs, ys)) and res.pearson.n == 9
    assert res.kendall.value == pytest.approx(kendall(xs, ys))
    assert res.spearman.ci is not None
    # pair alignment: item 1: 3/3; item 2: (0,1) human tie out, (0,2) ok, (1,2) ok -> 2/2; item 3: (0,1) ok,
    # (0,2) ok, (1,2) human 2>1 but metric 0.3<0.4 -> 0 => 7/8
    assert res.pair_alignment.value == pytest.approx(7 / 8) and res.pair_alignment.n == 8
    # 2AFC choices give the human side of the model ranking as win rates
    afc = [item(str(i), [0.9, 0.1], names=["A", "B"], preferred=p) for i, p in enumerate([0, 0, 1])]
    rows = {row.name: row for row in evaluate_metric(afc, "m", n_boot=0).models}
    assert rows["A"].human_mean == pytest.approx(2 / 3) and rows["B"].human_mean == pytest.approx(1 / 3)


def test_mean_figure_ci_is_deterministic_and_bounded():
    values = [1, 0, 1, 1, 0, 1, 0.5, 1]
    a, b = mean_figure(values, n_boot=500, seed=3), mean_figure(values, n_boot=500, seed=3)
    assert a.ci == b.ci and a.value == pytest.approx(5.5 / 8)
    assert 0 <= a.ci[0] < a.value < a.ci[1] <= 1
    spread = [i / 37 for i in range(40)]
    assert mean_figure(spread, n_boot=300, seed=1).ci != mean_figure(spread, n_boot=300, seed=2).ci


# ---------------------------------------------------------------------------------------------- from results files
def record(item_id, metrics_per_edit, roles=None, names=None, human=None, dataset="toy", status="ok"):
    roles = roles or ["candidate"] * len(metrics_per_edit)
    names = names or [f"model{i}" for i in range(len(metrics_per_edit))]
    base = {"id": item_id, "dataset": dataset, "status": status,
            "run": {"model": "random:tiny", "untrained": True, "metrics": ["augclip", "clip_dir", "l2"]}}
    if status != "ok":
        return {**base, "error": "source: file not found"}
    return {**base, "human": human, "edits": [
        {"index": i, "name": n, "role": r, "metrics": m} for i, (m, r, n) in enumerate(zip(metrics_per_edit, roles, names))]}


def write_results(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_compute_protocols_from_results_files(tmp_path, capsys):
    trip = ["gt", "ep", "em"]
    afc = write_results(tmp_path / "afc.jsonl", [
        record("a", [{"augclip": 0.9, "clip_dir": None, "l2": 0.1}, {"augclip": 0.2, "clip_dir": None, "l2": 0.3}],
               human={"preferred": 0}, dataset="celeba"),
        record("b", [{"augclip": 0.5, "clip_dir": None, "l2": 0.2}, {"augclip": 0.5, "clip_dir": None, "l2": 0.1}],
               human={"preferred": 1}, dataset="celeba"),
        record("c", [], status="error", dataset="celeba"),
    ])
    gt = write_results(tmp_path / "gt.jsonl", [
        record("t1", [{"augclip": 0.8, "clip_dir": 0.3, "l2": 0.2}, {"augclip": 0.9, "clip_dir": 0.0, "l2": 0.01},
                      {"augclip": 0.1, "clip_dir": 0.5, "l2": 0.6}], roles=trip, dataset=None),
        record("t2", [{"augclip": 0.7, "clip_dir": 0.4, "l2": 0.2}, {"augclip": 0.5, "clip_dir": 0.0, "l2": 0.02},
                      {"augclip": 0.2, "clip_dir": 0.1, "l2": 0.5}], roles=trip, dataset=None),
    ])
    report = compute_protocols([afc, gt], n_boot=100, seed=0)
    assert list(report.datasets) == ["celeba", "gt"]  # no dataset field: the results file's name
    celeba, gtset = report.datasets["celeba"], report.datasets["gt"]
    assert celeba.n_items == 2 and celeba.n_failed == 1
    assert celeba.metrics["augclip"].s2afc.value == pytest.approx(0.75)  # 1 + tie 0.5
    assert celeba.metrics["l2"].s2afc.value == pytest.approx(1.0)  # lower is better: both preferred have lower L2
    assert celeba.metrics["clip_dir"].s2afc.value is None  # missing everywhere: n/a, not 0
    assert gtset.metrics["augclip"].acc_both.value == pytest.approx(0.5)
    assert gtset.metrics["clip_dir"].acc_both.value == pytest.approx(0.5)  # t1: em wins, t2: gt wins
    assert gtset.metrics["l2"].wins["ep"].value == pytest.approx(1.0)
    assert report.untrained and report.models == ["random:tiny"]
    text = report.format()
    assert "UNTRAINED" in text and "s2AFC" in text and "AccBoth" in text and "n/a" in text
    assert "share of wins (gt" in text
    headers, rows = report.wide_table()
    assert headers[0] == "metric" and "celeba s2AFC" in headers and "gt AccBoth" in headers
    assert [r[0] for r in rows] == ["AugCLIP", "CLIPdir", "L2"]
    data = json.loads(report.to_json())
    assert data["datasets"]["gt"]["metrics"]["augclip"]["wins"]["gt"]["value"] == pytest.approx(0.5)
    assert data["warning"].startswith("untrained")
    rows_csv = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert {"dataset": "celeba", "metric": "augclip", "figure": "s2afc"}.items() <= rows_csv[0].items()
    assert all(row["untrained"] == "True" and row["model"] for row in rows_csv)
    # the CLI prints the same tables and saves JSON/CSV next to the first file by default
    assert main(["protocol", str(afc), str(gt), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "Human alignment s2AFC" in out and (tmp_path / "afc-protocol.json").is_file()
    assert (tmp_path / "afc-protocol.csv").read_text().startswith("dataset,metric,figure,value")


def test_protocol_errors(tmp_path):
    path = write_results(tmp_path / "r.jsonl", [record("a", [{"augclip": 1.0}], human={"preferred": 0})])
    with pytest.raises(InputError, match="not in the results"):
        compute_protocols(path, metrics=["bpm"])
    with pytest.raises(InputError, match="also appears in"):
        compute_protocols([path, path])
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n{bad\n{"id": 2}\n')
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        compute_protocols(tmp_path / "bad.jsonl")


# ---------------------------------------------------------------------------------------------- undefined resamples
def test_bootstrap_counts_undefined_resamples_instead_of_dropping_them():
    """A statistic undefined whenever unit 0 is not drawn: the count must match the draws themselves."""
    from augclip_demo.metrics.agreement import bootstrap_ci

    n_units, n_boot, seed = 30, 400, 5
    rng = np.random.default_rng(seed)  # the documented resampling: default_rng(seed), n_units draws each
    expected = sum(0 not in rng.integers(0, n_units, size=n_units) for _ in range(n_boot))
    assert 0 < expected < n_boot  # (29/30)^30 ~ 36% of resamples miss unit 0

    boot = bootstrap_ci(n_units, lambda idx: 1.0 if 0 in idx else None, n_boot=n_boot, seed=seed)
    assert (boot.resamples, boot.undefined) == (n_boot, expected)
    assert boot.ci is None and f"undefined in {expected} of {n_boot}" in boot.note  # > 5%: refused
    rare = bootstrap_ci(n_units, lambda idx: float(idx.mean()) if len(set(idx.tolist())) > 1 else None,
                        n_boot=n_boot, seed=seed)
    assert rare.undefined == 0 and rare.ci is not None and rare.note is None


def test_correlation_with_two_single_edit_items_reports_its_undefined_resamples():
    items = [item("a", [0.9], scores=[5]), item("b", [0.1], scores=[1])]
    res = evaluate_metric(items, "m", n_boot=200, seed=2)
    # a resample drawing the same item twice has one distinct point: no correlation. P = 1/2.
    rng = np.random.default_rng(2)
    expected = sum(len(set(rng.integers(0, 2, size=2).tolist())) == 1 for _ in range(200))
    figure = res.pearson
    assert figure.value == pytest.approx(1.0)
    assert (figure.boot_resamples, figure.boot_undefined) == (200, expected)
    assert figure.ci is None and "no interval" in figure.ci_note
    data = figure.to_dict()
    assert data["boot_undefined"] == expected and data["ci_low"] is None and data["ci_note"]


def test_bpm_over_a_dataset_min_max_normalises_s_modify_across_its_items(tmp_path):
    """BPM paper, Alg. 2 line 2: S_modify min-max over the dataset, recomputed here by hand."""
    def parts(s_modify, s_preserve, s_region, alpha=0.7):
        return {"s_modify": s_modify, "s_modify_norm": (s_modify + 1) / 2, "s_preserve": s_preserve,
                "s_semantic": (s_modify + 1) / 2 + s_preserve, "s_size": s_region, "s_position": 0,
                "s_region": s_region, "bpm": 0.0, "overall_raw": 0.0, "alpha": alpha,
                "s_modify_normalization": "pair", "found": {"o1": True, "o2": True}}

    given = [(0.10, 0.90, 1), (0.30, 0.50, 0), (-0.20, 0.70, 1), (0.05, 0.20, 0)]
    rec1 = record("p1", [{"bpm": 1.0}, {"bpm": 1.0}], human={"preferred": 0}, dataset="bench")
    rec2 = record("p2", [{"bpm": 1.0}, {"bpm": 1.0}], human={"preferred": 1}, dataset="bench")
    rec3 = record("p3", [{"bpm": None}], dataset="bench")  # no instruction: no BPM, no components
    for edit, values in zip(rec1["edits"] + rec2["edits"], given):
        edit["bpm"] = parts(*values)
    path = write_results(tmp_path / "bench.jsonl", [rec1, rec2, rec3])
    report = compute_protocols(path, n_boot=0)
    low, high = -0.20, 0.30
    expected = [0.7 * ((m - low) / (high - low) + p) + 0.3 * r for m, p, r in given]
    assert expected[0] > expected[1] and expected[3] < expected[2]  # BPM agrees with p1's choice, not p2's
    assert report.datasets["bench"].metrics["bpm_dataset"].s2afc.value == pytest.approx(0.5)
    from augclip_demo.batch.protocol_tables import read_protocol_items

    _, grouped, keys, _, _ = read_protocol_items([path])
    assert "bpm_dataset" in keys
    values = [edit.metrics["bpm_dataset"] for item in grouped["bench"] for edit in item.edits]
    assert values[:4] == pytest.approx(expected, abs=1e-12)
    assert values[4] is None  # no components recorded: no value, like bpm
    assert "BPM (dataset min-max)" in report.format()


def test_model_rank_intervals_equal_a_bootstrap_of_item_resamples_by_hand():
    from scipy import stats

    rng = np.random.default_rng(7)
    names = ["A", "B", "C", "D"]
    metric, human = rng.random((12, 4)), rng.integers(1, 6, (12, 4)).astype(float)
    items = [item(str(i), list(metric[i]), names=names, scores=list(human[i])) for i in range(12)]
    res = evaluate_metric(items, "m", n_boot=300, seed=3)
    # by hand: resample items with the seed's generator; a model's mean is over its edits in the resample
    draws = np.random.default_rng(3)
    rhos, taus = [], []
    for _ in range(300):
        picked = draws.integers(0, 12, size=12)
        m, h = metric[picked].mean(axis=0), human[picked].mean(axis=0)
        rhos.append(stats.spearmanr(m, h).statistic)
        taus.append(stats.kendalltau(m, h).statistic)
    for figure, samples in ((res.model_spearman, rhos), (res.model_kendall, taus)):
        kept = np.asarray([s for s in samples if np.isfinite(s)])
        low, high = np.quantile(kept, [0.025, 0.975])
        assert figure.ci == pytest.approx((low, high), abs=1e-12)


# ---------------------------------------------------------------------------------------------- no human labels
def test_protocol_without_human_labels_prints_per_model_means_equal_to_explores(tmp_path, capsys):
    """A benchmark with no human labels (DreamBooth: several samples per prompt, two models) gets a per-model
    table: each model's mean over its edits, its interval the one Explore's leaderboard gives the same edits."""
    from augclip_demo.explore import OpenedFile, Slice, leaderboard, open_results

    rng = np.random.default_rng(3)
    records = []
    for i in range(7):
        names = ["dreambooth"] * 2 + ["textual-inversion"] * (1 + i % 3)
        edits = [{"augclip": float(rng.normal(0.5 if n == "dreambooth" else 0.2, 0.1)), "clip_dir": None,
                  "l2": float(rng.uniform(0, 1))} for n in names]
        records.append(record(f"backpack-{i:02d}", edits, roles=["candidate"] * len(names), names=names,
                              dataset="db"))
    path = write_results(tmp_path / "db.jsonl", records)
    report = compute_protocols(path, n_boot=200)
    by_model: dict[str, list[float]] = {}
    for r in records:
        for e in r["edits"]:
            by_model.setdefault(e["name"], []).append(e["metrics"]["augclip"])
    means = {row.name: row.figure for row in report.datasets["db"].metrics["augclip"].model_means}
    assert list(means) == ["dreambooth", "textual-inversion"]
    for name, values in by_model.items():
        assert means[name].value == pytest.approx(np.mean(values), abs=1e-12) and means[name].n == len(values)
    assert report.datasets["db"].metrics["clip_dir"].model_means == []  # no value anywhere: no row, not 0
    text = report.format()
    assert "Per-model means (db)" in text and "no gt/ep/em triplets: per-model means only" in text
    assert f"{means['dreambooth'].value:.3f} [{means['dreambooth'].ci[0]:.2f}, {means['dreambooth'].ci[1]:.2f}]" in text
    store = open_results([OpenedFile(path)])
    try:
        board = leaderboard(store, Slice(datasets=("db",)), n_boot=200)
        for row in board.rows:
            cell = row.cells["augclip"]
            assert (cell.mean, cell.n) == (pytest.approx(means[row.model].value, abs=1e-12), means[row.model].n)
            assert cell.ci == pytest.approx(means[row.model].ci, abs=1e-12)
    finally:
        store.close()
    saved = json.loads(report.to_json())["datasets"]["db"]["metrics"]["l2"]["model_means"]
    assert saved["dreambooth"]["value"] == pytest.approx(np.mean([e["metrics"]["l2"] for r in records
                                                                  for e in r["edits"] if e["name"] == "dreambooth"]))
    assert any(row["figure"] == "mean:textual-inversion" for row in csv.DictReader(io.StringIO(report.to_csv())))
    assert main(["protocol", str(path), "--bootstrap", "20"]) == 0
    assert "Per-model means (db)" in capsys.readouterr().out


def test_protocol_on_an_empty_results_file_says_no_records(tmp_path, capsys):
    empty = tmp_path / "failed.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no records in .*failed.jsonl"):
        compute_protocols(empty)
    assert main(["protocol", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "no records" in err and "no protocol applies" not in err
