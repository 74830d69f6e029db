"""Explore's per-set agreement with human votes and ratings equals ``augclip-demo agreement --json`` on the same
results file: a vote set (wins, a tie, a both-bad vote), a rating set with BPM components (the derived
dataset-normalised BPM), a set without judgments and a failed record."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from augclip_demo.cli import main
from augclip_demo.errors import InputError
from augclip_demo.explore import OpenedFile, Slice, human_sets, open_results
from augclip_demo.explore.agreement_matrix import items_by_set, sets_work

RUN = {"model": "random:tiny", "untrained": True, "metrics": ["clip_t", "l2", "bpm"]}
N_BOOT = 200


def _components(rng: np.random.Generator) -> dict[str, Any]:
    s_modify, s_preserve, region, alpha = (float(v) for v in (rng.uniform(-0.2, 0.4), rng.uniform(0, 1),
                                                                rng.uniform(0, 1), 0.5))
    norm = (s_modify + 1) / 2
    return {"s_modify": s_modify, "s_modify_norm": norm, "s_preserve": s_preserve, "s_semantic": norm + s_preserve,
            "s_size": 1, "s_position": 1, "s_region": region, "bpm": alpha * (norm + s_preserve) + (1 - alpha) * region,
            "overall_raw": 0.0, "alpha": alpha, "s_modify_normalization": "pair"}


def _record(key: str, dataset: str, rng: np.random.Generator, n_edits: int, human: dict | None,
            vote: str | None) -> dict[str, Any]:
    edits = []
    for index in range(n_edits):
        parts = _components(rng)
        edits.append({"index": index, "name": f"model-{index}", "role": "candidate",
                      "metrics": {"clip_t": float(rng.normal(0.25, 0.05)), "l2": float(rng.uniform(0, 1)),
                                  "bpm": parts["bpm"]}, "bpm": parts})
    return {"id": key, "dataset": dataset, "status": "ok", "edits": edits, "human": human,
            "meta": {"vote_kind": vote} if vote else None, "run": RUN}


def human_set_records() -> list[dict[str, Any]]:
    rng = np.random.default_rng(44)
    records = []
    for i in range(14):  # GenAI-Bench-like votes: left / right wins, a tie, both bad
        kind = "tie" if i == 3 else "both_bad" if i == 7 else "win"
        scores = [0.5, 0.5] if kind == "tie" else [0.0, 0.0] if kind == "both_bad" else (
            [1.0, 0.0] if i % 3 else [0.0, 1.0])
        human = {"scores": scores, **({"preferred": int(np.argmax(scores))} if kind == "win" else {})}
        records.append(_record(f"vote-{i}", "votes", rng, 2, human, kind))
    for i in range(10):  # ImagenHub-like ratings of three edits
        records.append(_record(f"rate-{i}", "ratings", rng, 3,
                               {"scores": [float(v) for v in rng.integers(0, 3, size=3) / 2]}, None))
    records += [_record(f"plain-{i}", "plain", rng, 2, None, None) for i in range(3)]
    records.append({"id": "broken", "dataset": "votes", "status": "error", "error": "image unreadable",
                    "edits": [], "human": {"scores": [1, 0]}, "meta": None, "run": RUN})
    return records


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    path = tmp_path / "human-sets.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in human_set_records()), encoding="utf-8")
    return path


def command_json(path: Path, capsys, *extra: str) -> dict[str, Any]:
    assert main(["agreement", str(path), "--json", "--bootstrap", str(N_BOOT), *extra]) == 0
    return json.loads(capsys.readouterr().out)


def assert_same(ours: Any, theirs: Any, where: str = "") -> None:
    """Equal structures; numbers to 1e-12."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), where
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for n, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{n}]")
    elif isinstance(theirs, float) and not isinstance(ours, bool):
        assert isinstance(ours, (int, float)) and math.isclose(ours, theirs, rel_tol=0, abs_tol=1e-12), where
    else:
        assert ours == theirs, where


def without_sources(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "results"}  # the command names the paths given


def test_explore_gives_the_agreement_commands_figures_for_the_whole_file(results, capsys):
    theirs = command_json(results, capsys)
    store = open_results([OpenedFile(results)])
    try:
        found = human_sets(store, Slice(), n_boot=N_BOOT)
    finally:
        store.close()
    assert found.report is not None and found.notes == [] and found.n_boot == N_BOOT
    ours = found.report.to_dict()
    assert_same(without_sources(ours), without_sources(theirs))
    # what the comparison covers: both sets, the pooled one, the derived BPM, the votes, the paired test
    assert list(theirs["sets"]) == ["votes", "ratings", "plain", "all sets"]
    assert "bpm_dataset" in theirs["metrics"] and theirs["sets"]["votes"]["votes"] == {"win": 12, "tie": 1,
                                                                                        "both_bad": 1}
    assert theirs["sets"]["votes"]["metrics"]["clip_t"]["pairwise_ties"]["ci_low"] is not None
    assert theirs["sets"]["ratings"]["metrics"]["bpm_dataset"]["kendall"]["value"] is not None
    assert theirs["sets"]["all sets"]["paired_test"]["p_value"] is not None


def test_a_given_tie_tolerance_and_other_resamples_agree_too(results, capsys):
    theirs = command_json(results, capsys, "--tie-tolerance", "0.05", "--seed", "3", "--level", "0.9")
    store = open_results([OpenedFile(results)])
    try:
        ours = human_sets(store, Slice(), n_boot=N_BOOT, seed=3, level=0.9, tolerance=0.05).report
    finally:
        store.close()
    assert ours is not None
    assert_same(without_sources(ours.to_dict()), without_sources(theirs))


def test_a_slice_of_one_set_is_that_sets_table_and_the_bound_is_said(results):
    store = open_results([OpenedFile(results)])
    try:
        whole = human_sets(store, Slice(), n_boot=40).report
        votes = human_sets(store, Slice(datasets=("votes",)), n_boot=40)
        assert votes.report is not None and list(votes.report.sets) == ["votes"]
        assert votes.report.sets["votes"].metrics["clip_t"] == whole.sets["votes"].metrics["clip_t"]
        assert human_sets(store, Slice(datasets=("plain",)), n_boot=40).report is None  # no judgments
        ratings = Slice(datasets=("ratings",))
        per_pass = sets_work(*items_by_set(store, ratings))  # the point estimate, and each resample again
        fewer = human_sets(store, ratings, n_boot=80, max_work=per_pass * 61)
        assert fewer.n_boot == 60 and fewer.notes == [
            "10 items: intervals from 60 bootstrap resamples instead of 80; a smaller slice, or "
            "`augclip-demo agreement`, gives the full count"]
        assert human_sets(store, ratings, n_boot=80, max_work=per_pass * 30).n_boot == 0  # under 50: none
        with pytest.raises(InputError, match="too much work for a page"):
            human_sets(store, ratings, n_boot=80, max_work=per_pass - 1)
        with pytest.raises(InputError, match="the page computes agreement for at most 5"):
            human_sets(store, Slice(), max_items=5)
    finally:
        store.close()
