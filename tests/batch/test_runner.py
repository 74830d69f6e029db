"""The batch runner with the tiny model: equal to the Evaluator, isolated failures, dedupe, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from augclip_demo.attributes.base import AttributeProvider, Attributes, Provenance
from augclip_demo.batch.results import export_csv, iter_results
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.batch.synthetic import write_synthetic_manifest
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.errors import InputError, ManifestError
from augclip_demo.inference import ClipEncoder
from augclip_demo.inference.cpu_matmul import onednn_available
from augclip_demo.pipeline import Evaluator
from tests.support import TINY, draw_scene

ROOT = Path(__file__).resolve().parents[2]
ATTRS = {"source": ["a red ball", "a white background"], "target": ["green grass", "a red ball on grass"]}


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(clip_model=TINY, device="cpu")


def scene_manifest(folder: Path, items: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def draw(folder: Path, name: str, color: str, shape_color: str = "red", size=(96, 96)) -> str:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    draw_scene(size, color, [("ellipse", (20, 20, 70, 70), shape_color)]).save(folder / "img" / name)
    return f"img/{name}"


def records(path: Path) -> list[dict]:
    return list(iter_results(path))


def test_batch_equals_evaluator_for_every_metric(tmp_path, tiny_encoder, settings):
    src = draw(tmp_path, "src.png", "white")
    edits = [draw(tmp_path, "e1.png", "green"), draw(tmp_path, "e2.png", "white", "blue", (120, 90))]
    manifest = scene_manifest(tmp_path, [
        {"id": "with-text", "source": src, "target_text": "a red ball on green grass", "source_text": "a red ball",
         "edits": edits, "attributes": ATTRS, "human": {"preferred": 0}},
        {"id": "no-text", "source": src, "target_text": "a blue ball", "edits": edits[1:], "attributes": ATTRS},
    ])
    summary = run_batch(manifest, tmp_path / "r.jsonl", options=BatchOptions(metrics="all"), settings=settings,
                        encoder=tiny_encoder)
    assert (summary.n_ok, summary.n_failed, summary.untrained) == (2, 0, True)
    first, second = records(tmp_path / "r.jsonl")
    evaluator = Evaluator(settings=settings, encoder=tiny_encoder)
    attrs = Attributes(ATTRS["source"], ATTRS["target"])
    report = evaluator.evaluate(tmp_path / src, [tmp_path / e for e in edits], "a red ball on green grass",
                                "a red ball", attrs)
    for got, want in zip(first["edits"], report.edits):
        assert set(got["metrics"]) == set(want.metrics)
        for key, value in want.metrics.items():
            assert got["metrics"][key] == pytest.approx(value, abs=1e-5), key
        assert got["sha256"] == want.image_sha256 and got["augclip"]["c"] == pytest.approx(want.augclip.c, abs=1e-4)
    assert first["human"] == {"preferred": 0} and first["run"]["model"] == TINY and first["dataset"] == "manifest"
    assert second["edits"][0]["metrics"]["clip_dir"] is None
    assert "no source text" in second["edits"][0]["unavailable"]["clip_dir"]
    assert second["edits"][0]["metrics"]["clip_dir_aug_both"] is not None


class WordProvider(AttributeProvider):
    """A real provider: attributes from the words of the texts (no model, deterministic)."""

    name = "test-words"
    thread_safe = True

    def extract(self, source_image, target_text, source_text=None):
        target = [f"a photo with {w}" for w in target_text.split()[:3]]
        source = [f"a photo with {w}" for w in (source_text or "a plain scene").split()[:3]]
        return Attributes(source, target, Provenance(provider=self.name, fidelity="test"))


def test_failures_are_recorded_per_item_and_the_run_goes_on(tmp_path, tiny_encoder, settings, monkeypatch):
    good = draw(tmp_path, "good.png", "white")
    edit = draw(tmp_path, "edit.png", "green")
    (tmp_path / "img" / "broken.png").write_bytes(b"not an image at all")
    manifest = scene_manifest(tmp_path, [
        {"id": "ok", "source": good, "target_text": "grass", "edits": [edit], "attributes": ATTRS},
        {"id": "bad-source", "source": "img/broken.png", "target_text": "grass", "edits": [edit], "attributes": ATTRS},
        {"id": "bad-edit", "source": good, "target_text": "grass", "edits": [edit, "img/broken.png"], "attributes": ATTRS},
        {"id": "no-attributes", "source": good, "target_text": "grass", "edits": [edit]},
        {"id": "ok-2", "source": good, "target_text": "grass field", "edits": [edit], "attributes": ATTRS},
    ])
    options = BatchOptions(provider="no-such-provider", batch_size=2, max_inflight=2)
    summary = run_batch(manifest, tmp_path / "r.jsonl", options=options, settings=settings, encoder=tiny_encoder)
    got = {r["id"]: r for r in records(tmp_path / "r.jsonl")}
    assert list(got) == ["ok", "bad-source", "bad-edit", "no-attributes", "ok-2"]  # manifest order
    assert (summary.n_ok, summary.n_failed) == (2, 3)
    assert got["bad-source"]["error"].startswith("source: img/broken.png: not a recognised image format")
    assert got["bad-edit"]["error"].startswith("edits[1] (broken): img/broken.png: not a recognised image format")
    assert ("no attributes in the manifest, and attribute provider 'no-such-provider' is not available: unknown "
            "attribute provider" in got["no-attributes"]["error"])
    assert got["ok"]["status"] == got["ok-2"]["status"] == "ok"
    assert "failed bad-source" in summary.format()
    # the provider path: items without attributes get them from a registered provider
    from augclip_demo.attributes import base

    monkeypatch.setitem(base._PROVIDERS, "test-words", WordProvider)
    summary = run_batch(manifest, tmp_path / "r2.jsonl", options=BatchOptions(provider="test-words", metrics="augclip"),
                        settings=settings, encoder=tiny_encoder)
    got = {r["id"]: r for r in records(tmp_path / "r2.jsonl")}
    assert got["no-attributes"]["status"] == "ok"
    assert got["no-attributes"]["attributes"]["provenance"]["provider"] == "test-words"
    report = Evaluator(settings=settings, encoder=tiny_encoder).evaluate(
        tmp_path / good, tmp_path / edit, "grass", None, WordProvider())
    assert got["no-attributes"]["edits"][0]["metrics"]["augclip"] == pytest.approx(report.edits[0].metrics["augclip"],
                                                                                   abs=1e-5)
    # manual provider for items without attributes: a clear per-item error
    run_batch(manifest, tmp_path / "r3.jsonl", options=BatchOptions(provider="manual", metrics="augclip"),
              settings=settings, encoder=tiny_encoder)
    got = {r["id"]: r for r in records(tmp_path / "r3.jsonl")}
    assert "provider 'manual' needs the attribute lists" in got["no-attributes"]["error"]


class CountingEncoder(ClipEncoder):
    """The real tiny encoder, counting what reaches the model (caches off, so only the runner dedupes)."""

    def __init__(self):
        super().__init__(TINY, device="cpu", image_cache_size=0, text_cache_size=0)
        self.images = 0
        self.texts: list[str] = []

    # Each forward pass is padded to the encoder's fixed size by repeating its last input: count distinct ones.
    def _encode_pixel_batch(self, tensors):
        self.images += len({id(t) for t in tensors})
        return super()._encode_pixel_batch(tensors)

    def _encode_text_batch(self, texts, *rest):
        self.texts.extend(dict.fromkeys(texts))
        return super()._encode_text_batch(texts, *rest)


def test_each_image_and_text_is_encoded_once_across_the_run(tmp_path, tiny_encoder, settings):
    sources = [draw(tmp_path, f"s{i}.png", c) for i, c in enumerate(["white", "navy", "olive"])]
    edits = [draw(tmp_path, f"e{i}.png", "green", c) for i, c in enumerate(
        ["red", "blue", "yellow", "black", "purple", "orange", "pink", "brown", "grey", "cyan"])]
    items = []
    for i in range(12):
        items.append({"id": f"i{i}", "source": sources[i % 3], "target_text": f"target {i % 4}",
                      "source_text": "a shared source text", "edits": [edits[i % 10], edits[(i + 3) % 10]],
                      "attributes": {"source": ["a shared attribute", f"source detail {i}"],
                                     "target": [f"target detail {i % 5}", "a shared target"]}})
    manifest = scene_manifest(tmp_path, items)
    encoder = CountingEncoder()
    # tiny batches and few items in flight: many encode steps, items far apart share inputs
    options = BatchOptions(metrics="augclip,clip_dir,l2", batch_size=2, text_batch_size=3, max_inflight=2, workers=2)
    summary = run_batch(manifest, tmp_path / "r.jsonl", options=options, settings=settings, encoder=encoder)
    assert summary.n_ok == 12
    assert encoder.images == 3 + 10
    counts = Counter(encoder.texts)
    expected = ({f"target {k}" for k in range(4)} | {"a shared source text", "a shared attribute", "a shared target"}
                | {f"source detail {i}" for i in range(12)} | {f"target detail {k}" for k in range(5)})
    assert set(counts) == expected and max(counts.values()) == 1
    # same numbers as a run with ordinary caches and default batches
    run_batch(manifest, tmp_path / "ref.jsonl", options=BatchOptions(metrics="augclip,clip_dir,l2"), settings=settings,
              encoder=tiny_encoder)
    for a, b in zip(records(tmp_path / "r.jsonl"), records(tmp_path / "ref.jsonl")):
        for ea, eb in zip(a["edits"], b["edits"]):
            for key in ("augclip", "clip_dir", "l2"):  # fixed forward passes: batch options change nothing
                assert ea["metrics"][key] == pytest.approx(eb["metrics"][key], abs=1e-9)


def test_memory_stays_bounded_and_everything_is_released(tmp_path, tiny_encoder, settings):
    from augclip_demo.batch.runner import BatchRunner

    manifest = write_synthetic_manifest(tmp_path / "data", 40, image_size=32, n_attributes=2, human=False)
    options = BatchOptions(metrics="augclip,l2", batch_size=4, text_batch_size=8, max_inflight=4, workers=2,
                           fit_workers=1)
    runner = BatchRunner(manifest, tmp_path / "r.jsonl", options=options, settings=settings, encoder=tiny_encoder,
                         show_progress=False)
    assert runner.run().n_ok == 40
    stats = runner.stats
    # 40 items x 3 images and 6 texts each; held at once: a few items' worth, independent of the manifest's length
    assert stats["peak_items_in_flight"] <= 4 and stats["peak_image_embeddings"] <= 30
    assert stats["peak_text_embeddings"] <= 60 and stats["peak_items_waiting"] <= 16
    assert stats["peak_fits_pending"] <= 64  # back-pressure: 64 per fit worker
    assert all(value == 0 for key, value in stats.items() if key.startswith("final_")), stats


def test_resume_after_torn_write_overwrite_and_settings_mismatch(tmp_path, tiny_encoder, settings):
    manifest = write_synthetic_manifest(tmp_path / "data", 8, image_size=48, n_attributes=2)
    out = tmp_path / "r.jsonl"
    options = BatchOptions(metrics="augclip,clip_i")
    run_batch(manifest, out, options=options, settings=settings, encoder=tiny_encoder)
    full = out.read_text().splitlines(keepends=True)
    assert len(full) == 8
    out.write_text("".join(full[:3]) + full[3][:25])  # as if killed in the middle of writing line 4
    progress: list[tuple[float, str]] = []
    summary = run_batch(manifest, out, options=options, settings=settings, encoder=tiny_encoder,
                        progress=lambda f, m: progress.append((f, m)))
    assert (summary.n_skipped, summary.n_ok) == (3, 5)
    assert any("torn line" in note for note in summary.notes)
    again = records(out)
    assert [r["id"] for r in again] == [f"item-{i:05d}" for i in range(8)]
    assert out.read_text().splitlines(keepends=True)[:3] == full[:3]
    assert progress[-1][0] == pytest.approx(1.0) and "5/5 items scored" in progress[-1][1]
    # nothing left to do: a rerun changes nothing
    assert run_batch(manifest, out, options=options, settings=settings, encoder=tiny_encoder).n_run == 0
    # other settings must not be mixed into the same file
    with pytest.raises(InputError, match="was written with metrics"):
        run_batch(manifest, out, options=BatchOptions(metrics="augclip"), settings=settings, encoder=tiny_encoder)
    if onednn_available():  # embeddings of other matrix kernels differ at float rounding
        other_kernels = ClipEncoder(tiny_encoder.spec, device="cpu",
                                    cpu_matmul="blas" if tiny_encoder.matmul == "onednn" else "onednn")
        # the message names the kernel the file was written with, and how to continue it
        with pytest.raises(InputError, match=f"matmul '{tiny_encoder.matmul}'.*--cpu-matmul {tiny_encoder.matmul} "):
            run_batch(manifest, out, options=options, settings=settings, encoder=other_kernels)
    # a bad manifest stops before the results file is touched, even with --overwrite
    bad = tmp_path / "data" / "bad.jsonl"
    bad.write_text(manifest.read_text() + '{"id": "x"}\n')
    before = out.read_text()
    with pytest.raises(ManifestError, match="line 9"):
        run_batch(bad, out, options=BatchOptions(metrics="augclip", overwrite=True), settings=settings,
                  encoder=tiny_encoder)
    assert out.read_text() == before
    summary = run_batch(bad, out, options=BatchOptions(metrics="augclip", overwrite=True, skip_invalid=True),
                        settings=settings, encoder=tiny_encoder)
    assert summary.n_ok == 8 and len(summary.invalid) == 3 and len(records(out)) == 8  # 3 problems on line 9


def test_retry_failed_and_csv_export(tmp_path, tiny_encoder, settings):
    good = draw(tmp_path, "good.png", "white")
    (tmp_path / "img" / "late.png").write_bytes(b"")
    manifest = scene_manifest(tmp_path, [
        {"id": "a", "source": good, "target_text": "grass", "edits": [good], "attributes": ATTRS},
        {"id": "b", "source": good, "target_text": "grass", "edits": ["img/late.png"], "attributes": ATTRS},
    ])
    out = tmp_path / "r.jsonl"
    options = BatchOptions(metrics="augclip,l2")
    assert run_batch(manifest, out, options=options, settings=settings, encoder=tiny_encoder).n_failed == 1
    draw(tmp_path, "late.png", "green")  # the missing image arrives
    assert run_batch(manifest, out, options=options, settings=settings, encoder=tiny_encoder).n_run == 0
    retry = BatchOptions(metrics="augclip,l2", retry_failed=True)
    summary = run_batch(manifest, out, options=retry, settings=settings, encoder=tiny_encoder, csv=tmp_path / "r.csv")
    assert (summary.n_ok, summary.n_failed, summary.n_skipped) == (1, 0, 1)
    assert [(r["id"], r["status"]) for r in records(out)] == [("a", "ok"), ("b", "ok")]
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0] == "id,dataset,status,edit,name,role,path,augclip,l2,unavailable,error,model,untrained"
    assert lines[1].startswith("a,manifest,ok,1,good,candidate,img/good.png,") and lines[1].endswith(",random:tiny,True")
    assert float(lines[1].split(",")[8]) == 0.0  # L2 of an image against itself
    assert export_csv(out, tmp_path / "again.csv").read_text() == (tmp_path / "r.csv").read_text()
    # pixel metrics alone: nothing is encoded
    encoder = CountingEncoder()
    summary = run_batch(manifest, tmp_path / "l2.jsonl", options=BatchOptions(metrics="l2"), settings=settings,
                        encoder=encoder)
    assert summary.n_ok == 2 and encoder.images == 0 and encoder.texts == []
    assert [e["metrics"] for r in records(tmp_path / "l2.jsonl") for e in r["edits"]][0] == {"l2": 0.0}


def test_skip_invalid_scores_the_valid_line_and_not_the_missing_file(tmp_path, tiny_encoder, settings, capsys):
    """Issue 15.5: one line with a missing file and one valid line, run with --skip-invalid."""
    src, edit = draw(tmp_path, "src.png", "white"), draw(tmp_path, "edit.png", "green")
    manifest = scene_manifest(tmp_path, [
        {"id": "missing", "source": src, "target_text": "grass", "edits": ["img/not-there.png"], "attributes": ATTRS},
        {"id": "valid", "source": src, "target_text": "grass", "edits": [edit], "attributes": ATTRS},
    ])
    out = tmp_path / "r.jsonl"
    summary = run_batch(manifest, out, options=BatchOptions(metrics="augclip,clip_i,l2", skip_invalid=True),
                        settings=settings, encoder=tiny_encoder)
    assert (summary.n_items, summary.n_ok, summary.n_failed, summary.n_skipped) == (1, 1, 0, 0)
    assert len(summary.invalid) == 1 and summary.invalid[0].startswith("line 1 (id 'missing'): ")
    assert "not-there.png" in summary.invalid[0] and "file not found" in summary.invalid[0]
    assert summary.format().startswith("batch done: 1 item(s) scored, 0 failed, 0 already done (of 1)")
    (got,) = records(out)  # the invalid line is reported, not run
    assert got["id"] == "valid" and got["status"] == "ok"
    report = Evaluator(settings=settings, encoder=tiny_encoder).evaluate(
        tmp_path / src, tmp_path / edit, "grass", None, Attributes(ATTRS["source"], ATTRS["target"]))
    for key in ("augclip", "clip_i", "l2"):
        assert got["edits"][0]["metrics"][key] == pytest.approx(report.edits[0].metrics[key], abs=1e-5), key
    # the same through the CLI: exit status 0, the skipped line named
    args = ["batch", str(manifest), "--out", str(tmp_path / "cli.jsonl"), "--clip-model", TINY, "--device", "cpu",
            "--metrics", "clip_i", "--skip-invalid", "--no-progress"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "1 item(s) scored, 0 failed" in printed and "skipped 1 invalid manifest line problem(s)" in printed


def test_skip_invalid_never_opens_a_line_refused_by_the_file_checks(tmp_path, tiny_encoder, settings):
    """The run's second pass only parses: it must skip what the checked first pass refused (a symlink out)."""
    root = tmp_path / "data"
    src = draw(root, "src.png", "white")
    draw_scene((40, 40), "black").save(tmp_path / "outside.png")
    (root / "img" / "escape.png").symlink_to(tmp_path / "outside.png")
    manifest = scene_manifest(root, [
        {"id": "valid", "source": src, "target_text": "grass", "edits": [src], "attributes": ATTRS},
        {"id": "escape", "source": src, "target_text": "grass", "edits": ["img/escape.png"], "attributes": ATTRS},
    ])
    summary = run_batch(manifest, tmp_path / "r.jsonl", options=BatchOptions(metrics="l2", skip_invalid=True),
                        settings=settings, encoder=tiny_encoder)
    assert (summary.n_ok, summary.n_failed) == (1, 0) and "outside the manifest's folder" in summary.invalid[0]
    assert [r["id"] for r in records(tmp_path / "r.jsonl")] == ["valid"]


def test_cli_batch_exit_codes_and_json_summary(tmp_path, capsys):
    manifest = write_synthetic_manifest(tmp_path / "data", 3, image_size=48, n_attributes=2)
    args = ["batch", str(manifest), "--out", str(tmp_path / "r.jsonl"), "--clip-model", TINY, "--device", "cpu",
            "--metrics", "augclip,clip_t", "--no-progress", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_ok"] == 3 and summary["untrained"] is True and summary["items_per_second"] > 0
    assert main(args[:-1] + ["--metrics", "augclip,bogus"]) == 2
    assert "unknown metric(s) bogus" in capsys.readouterr().err
    with open(manifest, "a") as handle:
        handle.write(json.dumps({"id": "broken", "source": "images/00000-source.png", "target_text": "x",
                                 "edits": ["images/00000-edit1.png"], "attributes": {"source": ["a"], "target": ["b"]},
                                 "meta": "keeps going"}) + "\n")
    (manifest.parent / "images" / "00000-edit1.png").write_bytes(b"\x89PNG broken")
    assert main(args[:-1]) == 1  # one item failed: recorded, exit status 1
    assert "1 failed" in capsys.readouterr().out


@pytest.mark.slow
def test_fits_in_worker_processes_match_threads(tmp_path, tiny_encoder, settings):
    manifest = write_synthetic_manifest(tmp_path / "data", 4, image_size=48, n_attributes=3)
    a = run_batch(manifest, tmp_path / "a.jsonl", options=BatchOptions(metrics="augclip,clip_dir", fit_executor="process",
                                                                        fit_workers=2), settings=settings,
                  encoder=tiny_encoder)
    b = run_batch(manifest, tmp_path / "b.jsonl", options=BatchOptions(metrics="augclip,clip_dir"), settings=settings,
                  encoder=tiny_encoder)
    assert a.n_ok == b.n_ok == 4
    for ra, rb in zip(records(tmp_path / "a.jsonl"), records(tmp_path / "b.jsonl")):
        assert [e["metrics"] for e in ra["edits"]] == [e["metrics"] for e in rb["edits"]]


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates_or_losses(tmp_path, capsys):
    n = 150
    manifest = write_synthetic_manifest(tmp_path / "data", n, image_size=48, n_attributes=1)
    out = tmp_path / "r.jsonl"
    args = ["batch", str(manifest), "--out", str(out), "--clip-model", TINY, "--device", "cpu", "--metrics",
            "clip_i,l2", "--batch-size", "4", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "augclip_demo", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            if out.exists() and out.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed: " + proc.stderr.read().decode()[-500:]
        os.kill(proc.pid, signal.SIGKILL)  # a crash: no chance to clean up or finish a line
    finally:
        proc.wait(timeout=60)
    written = out.read_bytes().count(b"\n")
    assert 3 <= written < n, f"killed after {written} of {n} items"
    # rerun the same command (in this process, to spare a second interpreter start)
    assert main(args) == 0
    assert f"{written} already done" in capsys.readouterr().out
    ids = [r["id"] for r in records(out)]
    assert len(ids) == n and len(set(ids)) == n and set(ids) == {f"item-{i:05d}" for i in range(n)}
    assert all(r["status"] == "ok" for r in records(out))
    values = np.array([e["metrics"]["clip_i"] for r in records(out) for e in r["edits"]])
    assert np.all(np.isfinite(values))


def test_a_cancelled_run_stops_within_the_fits_already_submitted(tmp_path, tiny_encoder, settings):
    """Items that share their images decode at once and wait for fits in one long pass of the submit loop; a
    cancel set during that pass stops the run there (it ran on through most of the manifest)."""
    from augclip_demo.batch.pools import PoolSizes
    from augclip_demo.errors import BatchCancelled

    source, edit = draw(tmp_path, "s.png", "white"), draw(tmp_path, "e.png", "green")
    items = [{"id": f"i{n}", "source": source, "target_text": "a red ball on grass", "attributes": ATTRS,
              "edits": [{"path": edit}]} for n in range(1500)]
    manifest = scene_manifest(tmp_path, items)
    options = BatchOptions(metrics="augclip", fit_workers=1, workers=2, fit_executor="thread")
    pending_fits = PoolSizes.choose(options, gpu=False).max_pending_fits
    cancel = threading.Event()
    with pytest.raises(BatchCancelled, match="run it again to resume"):
        run_batch(manifest, tmp_path / "out.jsonl", options=options, settings=settings, encoder=tiny_encoder,
                  progress=lambda fraction, message: cancel.set(), cancel=cancel)  # set with the first record
    written = len(records(tmp_path / "out.jsonl"))
    # what had been submitted to the fit pool when the cancel came may still finish, and nothing more
    assert 1 <= written <= pending_fits + 1, (written, pending_fits)
    summary = run_batch(manifest, tmp_path / "out.jsonl", options=options, settings=settings, encoder=tiny_encoder)
    assert (summary.n_ok, summary.n_failed, summary.n_skipped) == (len(items) - written, 0, written)
