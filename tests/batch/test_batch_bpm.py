"""BPM in batch runs (the regions stage) with the tiny random CLIP, GroundingDINO and SAM.

Every BPM value of a batch record is checked against BPM computed directly for the same images and
parse (``Evaluator.add_bpm`` or ``bpm_score_many``); items without an instruction or with a refused
one keep their reason; an interrupted run resumes to the same values; the CLI takes ``--metrics bpm``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from augclip_demo.batch.options import batch_metric_keys
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, BatchRunner, run_batch
from augclip_demo.bpm import bpm_score_many
from augclip_demo.bpm.models import get_bpm_models
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.errors import InputError
from augclip_demo.instructions import resolve_parse
from augclip_demo.pipeline import Attributes, Evaluator
from tests.support import TINY, draw_scene

ATTRS = {"source": ["a red ball", "a white background"], "target": ["a blue ball", "a red ball on the left"]}
SCENES = {
    "src.png": [("ellipse", (20, 20, 60, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")],
    "blue.png": [("ellipse", (20, 20, 60, 60), "blue"), ("rectangle", (70, 40, 110, 80), "green")],
    "left.png": [("ellipse", (0, 20, 40, 60), "red"), ("rectangle", (70, 40, 110, 80), "green")],
}
CORRECTIONS = {"o1": "red ball", "position_state": "left", "reference": "green box"}
ITEMS = [
    {"id": "instructed", "source": "img/src.png", "target_text": "a blue ball next to a green box",
     "instruction": "make the ball blue", "edits": ["img/blue.png", "img/left.png"], "attributes": ATTRS},
    {"id": "corrected", "source": "img/src.png", "target_text": "a red ball left of a green box",
     "instruction": "move the ball to the left", "parse": CORRECTIONS, "edits": ["img/left.png", "img/blue.png"],
     "attributes": ATTRS},
    {"id": "no-instruction", "source": "img/src.png", "target_text": "a blue ball", "edits": ["img/blue.png"],
     "attributes": ATTRS},
    {"id": "refused", "source": "img/src.png", "target_text": "a cinematic photo",
     "instruction": "make it more cinematic", "edits": ["img/left.png"], "attributes": ATTRS},
]
METRICS = "clip_i,l2,bpm"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bpm-batch")
    (root / "img").mkdir()
    for name, shapes in SCENES.items():
        draw_scene((120, 90), shapes=shapes).save(root / "img" / name)
    write_manifest(root / "manifest.jsonl", ITEMS)
    return root


def write_manifest(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


@pytest.fixture(scope="module")
def full_run(data, settings, tiny_encoder):
    out = data / "full.jsonl"
    runner = BatchRunner(data / "manifest.jsonl", out, options=BatchOptions(metrics=METRICS), settings=settings,
                         encoder=tiny_encoder, show_progress=False)
    summary = runner.run()
    return summary, {r["id"]: r for r in iter_results(out)}, runner.stats


@pytest.mark.slow  # builds the tiny GroundingDINO and SAM (about 10 s on a shared 2-core CPU)
def test_bpm_values_equal_direct_bpm_for_the_same_images_and_parse(data, settings, tiny_encoder, full_run):
    summary, records, stats = full_run
    assert (summary.n_ok, summary.n_failed) == (4, 0)
    models = get_bpm_models(settings, encoder=tiny_encoder)

    # item 1: the instruction as written, against the Evaluator's BPM
    evaluator = Evaluator(settings=settings, encoder=tiny_encoder)
    item = ITEMS[0]
    report = evaluator.evaluate(data / item["source"], [data / e for e in item["edits"]], item["target_text"],
                                attributes=Attributes(ATTRS["source"], ATTRS["target"]))
    evaluator.add_bpm(report, instruction=item["instruction"], models=models)
    got = records["instructed"]
    for edit, want in zip(got["edits"], report.edits):
        assert edit["metrics"]["bpm"] == pytest.approx(want.metrics["bpm"], abs=1e-9)
        assert edit["metrics"]["l2"] == pytest.approx(want.metrics["l2"], abs=1e-9)
        for key in ("s_modify", "s_preserve", "s_semantic", "s_size", "s_position", "s_region", "alpha"):
            assert edit["bpm"][key] == pytest.approx(want.bpm[key], abs=1e-9), key
        assert edit["bpm"]["found"] == want.bpm["found"] and "bpm" not in edit["unavailable"]
        assert "preserved_mask" not in edit["bpm"] and "regions" not in edit["bpm"]  # records stay small
    assert got["bpm_parse"]["o2"] == report.edits[0].bpm["parse"]["o2"]

    # item 2: the instruction's parse with the manifest's corrections, against bpm_score_many
    item = ITEMS[1]
    parsed = resolve_parse(item["instruction"], CORRECTIONS)
    assert (parsed.o1, parsed.position_state, parsed.reference) == ("red ball", "left", "green box")
    direct = bpm_score_many(data / item["source"], [data / e for e in item["edits"]], parsed=parsed, models=models)
    got = records["corrected"]
    assert got["bpm_parse"]["o1"] == "red ball" and got["bpm_parse"]["reference"] == "green box"
    assert got["bpm_parse"]["confidence"] == "given"
    for edit, want in zip(got["edits"], direct):
        assert edit["metrics"]["bpm"] == pytest.approx(want.bpm, abs=1e-9)
        assert edit["bpm"]["s_modify"] == pytest.approx(want.s_modify, abs=1e-9)
        assert edit["bpm"]["s_position"] == want.s_position and edit["bpm"]["found"] == want.found
    # the corrected parse is what ran: without the corrections the values differ
    plain = bpm_score_many(data / item["source"], [data / e for e in item["edits"]], item["instruction"],
                           models=models)
    assert plain[0].parsed.reference != "green box"
    assert stats and all(value == 0 for key, value in stats.items() if key.startswith("final_")), stats


@pytest.mark.slow
def test_items_without_a_parse_keep_their_reason_and_the_other_metrics(full_run):
    _, records, _ = full_run
    (edit,) = records["no-instruction"]["edits"]
    assert edit["metrics"]["bpm"] is None and edit["metrics"]["clip_i"] is not None
    assert "no instruction and no parse in the manifest" in edit["unavailable"]["bpm"]
    assert records["no-instruction"]["bpm_parse"] is None and records["no-instruction"]["status"] == "ok"
    (edit,) = records["refused"]["edits"]
    assert edit["metrics"]["bpm"] is None and edit["metrics"]["l2"] is not None
    reason = edit["unavailable"]["bpm"]
    assert reason.startswith("the instruction parser refused 'make it more cinematic': ")
    assert "global" in reason or "style" in reason  # the parser's own message follows


@pytest.mark.slow
def test_results_are_labelled_untrained_with_the_region_models(full_run, settings):
    summary, records, _ = full_run
    run = records["instructed"]["run"]
    assert run["metrics"] == ["clip_i", "l2", "bpm"] and run["untrained"] is True and summary.untrained
    assert run["bpm"]["detector"] == "random:tiny" and run["bpm"]["segmenter"] == "random:tiny"
    assert run["bpm"]["untrained"] is True and run["bpm"]["options"]["alpha"] == 0.7
    assert any(note.startswith("BPM models (GroundingDINO random:tiny; SAM random:tiny") and "untrained" in note
               for note in summary.notes)


@pytest.mark.slow
def test_interrupted_run_resumes_to_identical_values(data, settings, tiny_encoder, full_run):
    _, full, _ = full_run
    out = data / "interrupted.jsonl"
    calls = []

    def stop_once(fraction: float, message: str) -> None:
        calls.append(fraction)
        if len(calls) == 1:
            raise KeyboardInterrupt  # as Ctrl-C right after the first record was written

    options = BatchOptions(metrics=METRICS, max_inflight=1, workers=1)
    with pytest.raises(KeyboardInterrupt):
        run_batch(data / "manifest.jsonl", out, options=options, settings=settings, encoder=tiny_encoder,
                  progress=stop_once)
    kept = [r["id"] for r in iter_results(out)]
    assert 1 <= len(kept) < len(ITEMS) and kept == [i["id"] for i in ITEMS][:len(kept)]
    summary = run_batch(data / "manifest.jsonl", out, options=options, settings=settings, encoder=tiny_encoder)
    assert (summary.n_skipped, summary.n_ok) == (len(kept), len(ITEMS) - len(kept))
    resumed = {r["id"]: r for r in iter_results(out)}
    assert list(resumed) == [i["id"] for i in ITEMS]
    for item_id, record in resumed.items():
        assert [e["metrics"] for e in record["edits"]] == [e["metrics"] for e in full[item_id]["edits"]]
        assert [e.get("bpm") for e in record["edits"]] == [e.get("bpm") for e in full[item_id]["edits"]]
    # a file scored without BPM never counts as done for a run with it (metrics are part of the signature)
    no_bpm = data / "no-bpm.jsonl"
    run_batch(data / "manifest.jsonl", no_bpm, options=BatchOptions(metrics="clip_i,l2"), settings=settings,
              encoder=tiny_encoder)
    with pytest.raises(InputError, match="was written with metrics"):
        run_batch(data / "manifest.jsonl", no_bpm, options=BatchOptions(metrics=METRICS), settings=settings,
                  encoder=tiny_encoder)


@pytest.mark.slow  # builds the tiny GroundingDINO and SAM
def test_region_models_load_lazily_and_a_missing_one_fails_only_items_that_need_it(data, tmp_path, tiny_encoder):
    missing = tmp_path / "no-gdino-here"
    settings = Settings.from_env(clip_model=TINY, device="cpu", gdino_model=str(missing), sam_model="random:tiny")
    # without bpm no region model is even built
    plain = BatchRunner(data / "manifest.jsonl", tmp_path / "plain.jsonl", options=BatchOptions(metrics="clip_i"),
                        settings=settings, encoder=tiny_encoder)
    assert plain.regions is None and "bpm" not in plain.run_signature()
    # no item needs BPM models: nothing is loaded, so the missing weights do not matter
    only_none = write_manifest(data / "only-none.jsonl", [ITEMS[2]])
    summary = run_batch(only_none, tmp_path / "a.jsonl", options=BatchOptions(metrics=METRICS), settings=settings,
                        encoder=tiny_encoder)
    assert (summary.n_ok, summary.n_failed) == (1, 0)
    # an item that needs them fails with the reason (retryable); the others are scored
    summary = run_batch(data / "manifest.jsonl", tmp_path / "b.jsonl", options=BatchOptions(metrics=METRICS),
                        settings=settings, encoder=tiny_encoder)
    assert (summary.n_ok, summary.n_failed) == (2, 2)
    failed = dict(summary.failures)
    assert set(failed) == {"instructed", "corrected"}
    assert "BPM region models are not available" in failed["instructed"] and "GroundingDINO" in failed["instructed"]


@pytest.mark.slow
def test_cli_and_choices_accept_bpm(data, tmp_path, capsys):
    assert "bpm" in batch_metric_keys()
    args = ["batch", str(data / "manifest.jsonl"), "--out", str(tmp_path / "cli.jsonl"), "--clip-model", TINY,
            "--device", "cpu", "--metrics", "bpm", "--gdino-model", "random:tiny", "--sam-model", "random:tiny",
            "--no-progress", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_ok"] == 4 and summary["untrained"] is True
    records = {r["id"]: r for r in iter_results(tmp_path / "cli.jsonl")}
    assert set(records["instructed"]["edits"][0]["metrics"]) == {"bpm"}
    assert records["instructed"]["edits"][0]["metrics"]["bpm"] is not None
    assert main(args[:-1] + ["--bpm-alpha", "2"]) == 2
    assert "alpha must be between 0 and 1" in capsys.readouterr().err


@pytest.mark.slow  # builds a run's stages with the tiny CLIP (a few seconds on a shared 2-core CPU)
def test_the_llm_parser_of_a_batch_run_uses_the_runs_chat_settings(data, settings, tiny_encoder, monkeypatch):
    """The run's AUGCLIP_MLLM_* settings reach the instruction parser's chat client (deep modules read no
    environment, so the client is built where the run's settings are)."""
    from augclip_demo.batch.item_steps import item_parse, run_stages
    from augclip_demo.batch.manifest import load_manifest
    from tests.support.chat_server import ChatServer

    answer = json.dumps({"o1": "ball", "o2": "ball", "size_state": "unchanged", "position_state": "unchanged",
                         "reference": None})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ChatServer(lambda request: answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        run_settings = settings.replace(mllm_model="run-parser-model", mllm_timeout=5.0, mllm_max_retries=0)
        stages = run_stages(BatchOptions(metrics=METRICS, parser="llm"), run_settings, tiny_encoder)
        item = load_manifest(data / "manifest.jsonl")[0]
        parsed, reason = item_parse(item, stages.parser, stages.parse_client)
        # the Evaluator's BPM builds its parser's client from the evaluator's settings the same way
        evaluator = Evaluator(settings=run_settings, encoder=tiny_encoder)
        report = evaluator.evaluate(data / item.source, [data / e for e in ITEMS[0]["edits"]], item.target_text,
                                    attributes=Attributes(ATTRS["source"], ATTRS["target"]))
        evaluator.add_bpm(report, instruction="paint the ball blue", parser="llm")  # not in the parse cache
        requests = list(server.requests)
    assert reason is None and parsed.parser == "llm" and (parsed.o1, parsed.o2) == ("ball", "ball")
    assert all(edit.bpm["parse"]["parser"] == "llm" for edit in report.edits)
    assert [request.body["model"] for request in requests] == ["run-parser-model", "run-parser-model"]
