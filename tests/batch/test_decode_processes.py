"""Decode worker processes: the same inputs as the thread path, the same records, and a dead worker survived."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from augclip_demo.batch import decode_worker, pools
from augclip_demo.batch.pools import PROCESS_DECODE_MIN_ITEMS, PoolSizes
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, BatchRunner
from augclip_demo.batch.synthetic import write_synthetic_manifest
from augclip_demo.config import Settings
from augclip_demo.inference import ClipEncoder
from augclip_demo.io import open_image
from tests.support import TINY


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.from_env(clip_model=TINY, device="cpu")


def _recipe(encoder) -> bytes:
    return decode_worker.recipe_bytes(*encoder.preparation_recipe())


@pytest.fixture()
def in_process_worker():
    """This process plays a decode worker (start() sets the module's recipe); restored afterwards."""
    saved = dict(decode_worker._RECIPE)
    yield
    decode_worker._RECIPE.clear()
    decode_worker._RECIPE.update(saved)


@pytest.fixture()
def decode_pool():
    """The shared decode pool a test starts is shut down however the test ends."""
    yield pools.DECODE_POOL
    pools.DECODE_POOL.discard()


def _ycbcr_encoder():
    """The tiny model with a colour conversion among its PIL steps: they end in YCbCr, not RGB, so the
    image is prepared by the whole transform as a float tensor (the rare path of preprocess_image)."""
    encoder = ClipEncoder(TINY, device="cpu").load()
    # a picklable step (decode processes unpickle it): Image.convert by reference, with its mode
    encoder.preprocess.transforms.insert(-2, functools.partial(Image.Image.convert, mode="YCbCr"))
    return encoder


def test_a_worker_prepares_pixels_and_tokens_as_the_encoder_does(tiny_encoder, tmp_path, in_process_worker):
    write_synthetic_manifest(tmp_path, 2, n_edits=1, n_attributes=2, image_size=80, human=False)
    paths = sorted(str(p) for p in (tmp_path / "images").glob("*.png"))
    assert len(paths) == 4
    decode_worker.start(_recipe(tiny_encoder), threading.Barrier(1))  # this process plays the worker
    texts = ["a red kite", "snow on the roof", "an id 0 is !", "x " * 90]  # the last one is cut at 77 tokens
    requests = [decode_worker.ImageRequest(p, p, Path(p).name, f"edits[{i}]") for i, p in enumerate(paths)]
    prepared = decode_worker.prepare_item(requests, texts, None)
    assert prepared.error is None and set(prepared.images) == set(paths)
    for path in paths:
        loaded = open_image(path)
        sha, pixels = prepared.images[path]
        assert sha == loaded.sha256
        np.testing.assert_array_equal(pixels, tiny_encoder.preprocess_image(loaded))
    expected = tiny_encoder.tokenizer(texts).numpy()
    np.testing.assert_array_equal(np.stack([prepared.tokens[t] for t in texts]), expected)
    # the rows given to encode_texts give the embeddings of tokenizing there, bit for bit
    fresh = type(tiny_encoder)(TINY, device="cpu")
    np.testing.assert_array_equal(fresh.encode_texts(texts, token_rows=prepared.tokens),
                                  type(tiny_encoder)(TINY, device="cpu").encode_texts(texts))


def test_a_worker_gives_the_float_tensor_of_a_transform_not_ending_in_rgb(tmp_path, in_process_worker):
    encoder = _ycbcr_encoder()
    write_synthetic_manifest(tmp_path, 1, n_edits=1, n_attributes=1, image_size=70, human=False)
    path = str(sorted((tmp_path / "images").glob("*.png"))[0])
    decode_worker.start(_recipe(encoder), threading.Barrier(1))
    prepared = decode_worker.prepare_item([decode_worker.ImageRequest(path, path, "a.png", "source")], [], None)
    pixels = prepared.images[path][1]
    expected = encoder.preprocess_image(open_image(path))
    assert isinstance(expected, torch.Tensor) and expected.dtype == torch.float32  # the thread path's result
    assert isinstance(pixels, torch.Tensor)
    torch.testing.assert_close(pixels, expected, rtol=0, atol=0)


def test_a_worker_names_the_image_it_could_not_open(tiny_encoder, tmp_path, in_process_worker):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a picture")
    decode_worker.start(_recipe(tiny_encoder), threading.Barrier(1))
    prepared = decode_worker.prepare_item([decode_worker.ImageRequest("k", str(bad), "broken.png", "edits[1] (m)")],
                                          ["some text"], None)
    assert prepared.images == {} and set(prepared.failed_images) == {"k"}
    assert prepared.error.startswith("edits[1] (m): ") and "broken.png" in prepared.error
    assert str(tmp_path) not in prepared.error  # the name as written, not the server's path
    assert prepared.tokens == {}  # the item fails: no work for its texts


def test_auto_decodes_in_threads_until_processes_are_measured_on_a_gpu():
    # issue 28: decode processes exist for speed on GPU hosts and were never measured there
    assert PoolSizes.choose(BatchOptions(), gpu=True, cpus=16).decode_executor == "thread"
    assert PoolSizes.choose(BatchOptions(), gpu=True, cpus=16, items=PROCESS_DECODE_MIN_ITEMS).decode_executor == "thread"
    assert PoolSizes.choose(BatchOptions(decode_executor="process"), gpu=True, cpus=16,
                            items=PROCESS_DECODE_MIN_ITEMS).decode_executor == "process"
    assert PoolSizes.choose(BatchOptions(), gpu=True, cpus=16, items=10).decode_executor == "thread"  # short run
    assert PoolSizes.choose(BatchOptions(decode_executor="process"), gpu=True, cpus=16, items=10).decode_executor == "process"
    assert PoolSizes.choose(BatchOptions(), gpu=True, cpus=2).decode_executor == "thread"
    assert PoolSizes.choose(BatchOptions(), gpu=False, cpus=64).decode_executor == "thread"
    assert PoolSizes.choose(BatchOptions(decode_executor="process"), gpu=False, cpus=2).decode_executor == "process"
    with pytest.raises(Exception, match="decode executor must be auto, thread or process"):
        BatchOptions(decode_executor="fork")


def _scores(path: Path) -> list[tuple]:
    out = []
    for record in iter_results(path):
        edits = [(e["sha256"], json.dumps(e["metrics"], sort_keys=True)) for e in record["edits"]] \
            if record["status"] == "ok" else []
        out.append((record["id"], record["status"], record.get("error"), edits))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("model", ["tiny", "ycbcr"])
def test_decode_processes_give_the_records_of_decode_threads(tiny_encoder, settings, tmp_path, decode_pool, model):
    encoder = tiny_encoder if model == "tiny" else _ycbcr_encoder()
    manifest = write_synthetic_manifest(tmp_path / "data", 6, n_edits=2, n_attributes=3, image_size=72, human=False)
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    lines[1]["source"] = lines[0]["source"]  # a shared source: decoded once, used twice
    # the same pixels under another path: one encoding, the second found in the encoder's cache
    shutil.copy(manifest.parent / lines[5]["edits"][0]["path"], manifest.parent / "copy.png")
    lines[5]["edits"][1]["path"] = "copy.png"
    whole = (manifest.parent / lines[2]["edits"][0]["path"]).read_bytes()
    (manifest.parent / "truncated.png").write_bytes(whole[:len(whole) // 2])  # fails alone
    lines[2]["edits"][0]["path"] = "truncated.png"
    (manifest.parent / "garbage.png").write_bytes(b"\x89PNG but not really")
    lines[3]["edits"][1]["path"] = "garbage.png"
    lines[4]["attributes"] = lines[5]["attributes"]  # shared texts
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = {}
    for executor in ("thread", "process"):
        encoder.image_cache.clear()
        encoder.text_cache.clear()
        options = BatchOptions(metrics="augclip,clip_dir,clip_t,clip_i", workers=2, decode_executor=executor,
                               overwrite=True)
        runner = BatchRunner(manifest, tmp_path / f"{executor}.jsonl", options=options, settings=settings,
                             encoder=encoder, show_progress=False)
        summary = runner.run()
        assert (summary.n_ok, summary.n_failed) == (4, 2)
        assert all(value == 0 for key, value in runner.stats.items() if key.startswith("final_")), runner.stats
        assert runner.stats.get({"thread": "decoded_in_threads", "process": "decoded_in_processes"}[executor]) == 6 and len(
            [k for k in runner.stats if k.startswith("decoded_in_")]) == 1, runner.stats
        results[executor] = _scores(tmp_path / f"{executor}.jsonl")
    assert results["process"] == results["thread"]
    failed = {r[0]: r[2] for r in results["process"] if r[1] == "error"}
    assert "truncated.png" in failed[lines[2]["id"]] and "garbage.png" in failed[lines[3]["id"]]
    edits5 = next(r[3] for r in results["process"] if r[0] == lines[5]["id"])
    assert edits5[0][0] == edits5[1][0]  # the copy has the same content hash


def _run(manifest, out, settings, encoder, executor, **kwargs) -> BatchRunner:
    encoder.image_cache.clear()
    encoder.text_cache.clear()
    options = BatchOptions(metrics="augclip", workers=2, decode_executor=executor, overwrite=True, **kwargs)
    runner = BatchRunner(manifest, out, options=options, settings=settings, encoder=encoder, show_progress=False)
    runner.run()
    return runner


@pytest.mark.slow
def test_a_run_whose_decode_workers_died_before_it_decodes_in_threads(tiny_encoder, settings, tmp_path, caplog,
                                                                        decode_pool):
    manifest = write_synthetic_manifest(tmp_path / "data", 5, n_edits=2, n_attributes=2, image_size=64, human=False)
    _run(manifest, tmp_path / "threads.jsonl", settings, tiny_encoder, "thread")
    pool = pools.decode_pool(2, decode_worker.encoder_recipe(tiny_encoder))  # the pool the run will be given
    assert len(decode_pool.wait(timeout=120)) >= 1
    for pid in list(pool._processes):  # killed (out of memory, say) ...
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not pool._broken and time.monotonic() < deadline:  # ... and noticed by the pool
        time.sleep(0.05)
    assert pool._broken
    runner = _run(manifest, tmp_path / "processes.jsonl", settings, tiny_encoder, "process")
    assert (runner.summary.n_ok, runner.summary.n_failed) == (5, 0)
    assert runner.stats.get("decoded_in_threads") == 5 and "decoded_in_processes" not in runner.stats
    assert _scores(tmp_path / "processes.jsonl") == _scores(tmp_path / "threads.jsonl")
    assert "decode worker processes stopped" in caplog.text and "decodes in threads from here on" in caplog.text


@pytest.mark.slow
def test_a_decode_worker_killed_during_a_run_loses_no_item(tiny_encoder, settings, tmp_path, caplog, decode_pool):
    manifest = write_synthetic_manifest(tmp_path / "data", 40, n_edits=2, n_attributes=2, image_size=64, human=False)
    _run(manifest, tmp_path / "threads.jsonl", settings, tiny_encoder, "thread", max_inflight=8)
    _run(manifest, tmp_path / "warm.jsonl", settings, tiny_encoder, "process", max_inflight=8)  # pool started
    pool = pools.decode_pool(2, decode_worker.encoder_recipe(tiny_encoder))  # the one that run started
    killed = threading.Event()

    def kill_when_busy(runner: BatchRunner) -> None:  # once items are in the worker processes
        deadline = time.monotonic() + 60
        while runner.stats.get("decoded_in_processes", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.002)
        os.kill(next(iter(pool._processes)), signal.SIGKILL)
        killed.set()

    tiny_encoder.image_cache.clear()
    tiny_encoder.text_cache.clear()
    options = BatchOptions(metrics="augclip", workers=2, decode_executor="process", overwrite=True, max_inflight=8)
    runner = BatchRunner(manifest, tmp_path / "killed.jsonl", options=options, settings=settings,
                         encoder=tiny_encoder, show_progress=False)
    threading.Thread(target=kill_when_busy, args=(runner,), daemon=True).start()
    summary = runner.run()
    assert killed.is_set() and (summary.n_ok, summary.n_failed) == (40, 0)
    stats = runner.stats
    assert stats["decoded_in_processes"] >= 3 and stats.get("decoded_in_threads", 0) >= 1, stats
    assert stats["decoded_in_processes"] + stats["decoded_in_threads"] == 40, stats  # each item counted once
    assert _scores(tmp_path / "killed.jsonl") == _scores(tmp_path / "threads.jsonl")
    assert "decode worker processes stopped" in caplog.text
