"""The MLLM judge in batch runs (the judge stage) against a real chat server on 127.0.0.1: values and
reasons in the records, the run's judge settings, the cache on a rerun, an endpoint failure failing the
item (and --retry-failed), the CSV columns and the protocol tables' correlation with human scores."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from augclip_demo.batch.protocol_tables import compute_protocols
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.judge import JudgeOptions
from tests.support import TINY, draw_scene
from tests.support.chat_server import ChatServer
from tests.support.judge_chat import judge_answer

SECRET = "sk-test-BATCH-JUDGE-DO-NOT-LEAK"
LEVELS = {"a": 2, "b": 4, "c": 6, "d": 8}


def leveled(request):
    """SC follows the 'level N' written in the request (keeps_the_rest 10); PQ as judge_answer (5, 6 for seeds 0, 1)."""
    question = request.texts()[1]
    if "follows_request" in question and (found := re.search(r"level (\d+)", question)):
        return json.dumps({"follows_request": int(found.group(1)), "keeps_the_rest": 10, "rationale": "leveled"})
    return judge_answer(request)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in ("OPENAI_BASE_URL", "AUGCLIP_JUDGE_MODEL", "AUGCLIP_JUDGE_BASE_URL", "AUGCLIP_JUDGE_SAMPLES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("AUGCLIP_MLLM_MAX_RETRIES", "0")  # the failing server: no backoff to wait through


def manifest(folder: Path) -> Path:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    for name, color in {"src": "red", "e1": "blue", "e2": "green"}.items():
        draw_scene(shapes=[("ellipse", (20, 20, 70, 70), color)]).save(folder / "img" / f"{name}.png")
    items = [{"id": key, "source": "img/src.png", "target_text": f"a ball, level {level}",
              "instruction": f"recolour the ball, level {level}" if key != "d" else None,
              "edits": ["img/e1.png"], "human": {"scores": [level]}} for key, level in LEVELS.items()]
    items.append({"id": "refused", "source": "img/src.png", "target_text": "a ball", "instruction": "REFUSE it",
                  "edits": ["img/e1.png", "img/e2.png"]})
    path = folder / "manifest.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in item.items() if v is not None}) + "\n" for item in items))
    return path


@pytest.mark.slow  # a batch run with the tiny CLIP, and its rerun (about 5 s on 2 cores)
def test_batch_records_judge_values_reasons_settings_and_correlations(tmp_path, tiny_encoder):
    path = manifest(tmp_path / "data")
    settings = Settings.from_env(clip_model=TINY, device="cpu", cache_dir=tmp_path / "cache")
    out, table = tmp_path / "results.jsonl", tmp_path / "results.csv"
    with ChatServer(leveled) as server:
        options = BatchOptions(metrics="l2", judge=JudgeOptions(model="batch-judge", base_url=server.url, samples=2))
        assert options.metrics == ["l2", "judge_sc", "judge_pq", "judge_overall"]
        summary = run_batch(path, out, options=options, settings=settings, encoder=tiny_encoder, csv=table)
        assert summary.n_ok == 5 and summary.n_failed == 0
        sent = len(server.requests)
        # SC: 6 edits x 2 samples; PQ depends on the edited image alone: 2 distinct images x 2 samples
        assert sent == 6 * 2 + 2 * 2
        records = {r["id"]: r for r in iter_results(out)}
        for key, level in LEVELS.items():
            edit = records[key]["edits"][0]
            assert edit["metrics"]["judge_sc"] == level and edit["metrics"]["judge_pq"] == 5.5
            expected = (math.sqrt(level * 5) + math.sqrt(level * 6)) / 2
            assert edit["metrics"]["judge_overall"] == pytest.approx(expected, abs=1e-12)
            assert edit["judge"]["sc"]["std"] == 0.0 and edit["judge"]["sc"]["rationales"] == ["leveled"] * 2
        refused = records["refused"]["edits"]
        assert all(e["metrics"]["judge_sc"] is None and "refused" in e["unavailable"]["judge_sc"] for e in refused)
        assert all(e["metrics"]["judge_pq"] == pytest.approx(5.5) for e in refused)
        run = records["a"]["run"]["judge"]
        assert run["model"] == "batch-judge" and run["prompt_version"] == "judge-v1" and run["samples"] == 2
        assert SECRET not in out.read_text() and SECRET not in table.read_text()
        rows = list(csv.DictReader(table.open()))
        assert {"judge_sc", "judge_pq", "judge_overall"} <= set(rows[0]) and rows[0]["judge_sc"] == "2.0"
        # the protocol tables correlate the judge with the human scores like any metric
        protocols = compute_protocols(out, n_boot=0)
        figures = protocols.datasets["manifest"].metrics["judge_sc"]
        assert figures.spearman.value == pytest.approx(1.0) and figures.spearman.n == 4
        # a rerun from scratch is answered from the cache; only the refusals (never cached) are asked again
        run_batch(path, out, options=BatchOptions(metrics="l2", overwrite=True, judge=options.judge),
                  settings=settings, encoder=tiny_encoder)
        assert len(server.requests) == sent + 2 * 2
        assert all("REFUSE" in r.texts()[1] for r in server.requests[sent:])
        assert [r["edits"][0]["metrics"] for r in iter_results(out)] == [r["edits"][0]["metrics"]
                                                                         for r in records.values()]


@pytest.mark.slow  # two CLI batch runs
def test_an_endpoint_failure_fails_the_item_and_retry_failed_asks_again(tmp_path, tiny_encoder, capsys):
    path = manifest(tmp_path / "data")
    cache = tmp_path / "cache"
    out = tmp_path / "results.jsonl"
    with ChatServer() as down:  # answers HTTP 500 to everything
        args = ["batch", str(path), "--out", str(out), "--metrics", "l2", "--judge-model", "cli-judge",
                "--judge-base-url", down.url, "--clip-model", TINY, "--device", "cpu", "--cache-dir", str(cache),
                "--no-progress"]
        assert main(args) == 1
        failed = list(iter_results(out))
        assert all(r["status"] == "error" and r["error"].startswith("judge:") and "HTTP 500" in r["error"]
                   for r in failed)
    with ChatServer(leveled) as up:
        args[args.index(down.url)] = up.url
        assert main([*args, "--retry-failed", "--judge-samples", "1"]) == 0
        records = list(iter_results(out))
        assert [r["status"] for r in records] == ["ok"] * 5 and records[0]["run"]["judge"]["model"] == "cli-judge"
    assert "5 item(s) scored" in capsys.readouterr().out
