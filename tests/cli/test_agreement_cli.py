"""``augclip-demo agreement`` on a small results file: the figures it prints are the set's, worked by hand."""

from __future__ import annotations

import json

from augclip_demo.cli import main

RUN = {"model": "random:tiny", "untrained": True, "metrics": ["clip_t", "l2"]}


def record(key: str, scores: list[float], preferred: int | None, kind: str, clip_t: list[float],
           l2: list[float]) -> dict:
    edits = [{"index": i, "name": name, "role": "candidate", "metrics": {"clip_t": c, "l2": d}}
             for i, (name, c, d) in enumerate(zip(("left-model", "right-model"), clip_t, l2))]
    human = {"scores": scores, **({"preferred": preferred} if preferred is not None else {})}
    return {"id": key, "dataset": "genai-bench", "status": "ok", "edits": edits, "human": human,
            "meta": {"vote": kind, "vote_kind": kind}, "run": RUN}


def test_agreement_command_prints_markdown_json_and_html(tmp_path, capsys):
    results = tmp_path / "genai.jsonl"
    rows = [record("a", [1, 0], 0, "win", [0.9, 0.1], [0.5, 0.1]),   # CLIP-T right; L2 (lower better) wrong
            record("b", [0, 1], 1, "win", [0.2, 0.8], [0.4, 0.1]),   # CLIP-T right; L2 right
            record("c", [0.5, 0.5], None, "tie", [0.3, 0.3], [0.2, 0.9]),
            record("d", [0, 0], None, "both_bad", [0.1, 0.6], [0.3, 0.3])]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["agreement", str(results), "--bootstrap", "50", "--tie-tolerance", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "## genai-bench" in out and "1 both bad, 1 tie, 2 win" in out and "2 of them human ties" in out
    clip_row = next(line for line in out.splitlines() if line.startswith("| CLIP-T"))
    # ties out: 2 of 2; with ties (tolerance 0.01): a, b right, c a tie both ways, d |0.5| > 0.01 -> 3 / 4
    assert "| 1.000 " in clip_row and "| 0.750 " in clip_row
    assert main(["agreement", str(results), "--bootstrap", "0", "--json", "--html", str(tmp_path / "r.html")]) == 0
    data = json.loads(capsys.readouterr().out)
    l2 = data["sets"]["genai-bench"]["metrics"]["l2"]
    assert l2["pairwise"]["value"] == 0.5 and data["sets"]["genai-bench"]["votes"] == {"win": 2, "tie": 1,
                                                                                      "both_bad": 1}
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "http" not in page.replace(
        "http://www.w3.org/2000/svg", "")


def test_agreement_without_human_judgments_is_a_clear_error(tmp_path, capsys):
    results = tmp_path / "plain.jsonl"
    row = record("a", [1, 0], 0, "win", [0.9, 0.1], [0.5, 0.1])
    del row["human"]
    results.write_text(json.dumps(row) + "\n")
    assert main(["agreement", str(results)]) == 2
    assert "no human judgments" in capsys.readouterr().err


def test_agreement_on_a_results_file_without_records_says_so(tmp_path, capsys):
    empty = tmp_path / "failed.jsonl"
    empty.write_text("")
    assert main(["agreement", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"no records in {empty}" in err and "Traceback" not in err
