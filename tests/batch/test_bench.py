"""The encoder's prepared-pixels path and the speed benchmark command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from augclip_demo.batch.bench import speed_benchmark
from augclip_demo.cli import main
from augclip_demo.config import Settings
from augclip_demo.inference import ClipEncoder
from tests.support import TINY, draw_scene


def test_prepared_pixels_give_the_same_embeddings_as_encode_images(tiny_encoder):
    images = [draw_scene((97, 61), c, [("ellipse", (5, 5, 50, 40), "red")]) for c in ("white", "navy", "olive")]
    prepared = [tiny_encoder.preprocess_image(image) for image in images]
    assert all(p.dtype == np.uint8 and p.shape == (64, 64, 3) for p in prepared)
    fresh = ClipEncoder(TINY, device="cpu")
    direct = fresh.encode_images(images)
    via_workers = tiny_encoder.encode_preprocessed(prepared)
    np.testing.assert_array_equal(direct, via_workers)
    # with keys the results land in the shared content-hash cache
    from augclip_demo.io import open_image

    keys = [open_image(image).sha256 for image in images]
    tiny_encoder.encode_preprocessed(prepared, keys=keys)
    assert all(key in tiny_encoder.image_cache for key in keys)


def test_speed_benchmark_reports_both_throughputs_and_the_ratio(tiny_encoder, tmp_path, capsys):
    result = speed_benchmark(Settings.from_env(clip_model=TINY, device="cpu"), n_items=4, n_edits=2, n_attributes=2,
                             image_size=48, metrics="augclip", folder=tmp_path, encoder=tiny_encoder)
    assert (result.n_items, result.n_images, result.n_texts) == (4, 12, 16)
    assert result.bare_seconds > 0 and result.batch_seconds > 0
    assert result.ratio == pytest.approx(result.batch_seconds / result.bare_seconds)
    text = result.format()
    assert "bare CLIP encoding" in text and "batch scoring" in text and "ratio batch / bare" in text
    # edits/s counts each edit of an item; the bare run's stages are parts of its wall time
    assert result.batch_edits_per_second == pytest.approx(4 * 2 / result.batch_seconds)
    assert set(result.bare_stages) == {"decode wait", "image passes", "text passes"} and "edits/s" in text
    assert 0 < sum(result.bare_stages.values()) <= result.bare_seconds
    assert main(["bench", "speed", "--clip-model", TINY, "--device", "cpu", "--items", "3", "--image-size", "48",
                 "--attributes", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_items"] == 3 and data["model"] == TINY and data["untrained"] is True
    assert data["ratio"] == pytest.approx(data["batch_seconds"] / data["bare_seconds"])
    assert {"bare_items_per_second", "batch_items_per_second", "batch_edits_per_second", "meets_target"} <= set(data)


@pytest.mark.slow
def test_speed_benchmark_with_decode_processes_encodes_the_same_inputs(tiny_encoder, tmp_path):
    from augclip_demo.batch import pools

    settings = Settings.from_env(clip_model=TINY, device="cpu")
    threads = speed_benchmark(settings, n_items=4, n_edits=2, n_attributes=2, image_size=48, folder=tmp_path / "t",
                              encoder=tiny_encoder, decode_executor="thread")
    processes = speed_benchmark(settings, n_items=4, n_edits=2, n_attributes=2, image_size=48,
                                folder=tmp_path / "p", encoder=tiny_encoder, decode_executor="process")
    pools.DECODE_POOL.discard()
    assert (threads.decode_executor, processes.decode_executor) == ("thread", "process")
    assert (processes.n_images, processes.n_texts) == (threads.n_images, threads.n_texts) == (12, 16)
    assert "decode processes" in processes.format() and "decode threads" in threads.format()
    # both sides ran: the bare side's image passes got every image from the processes
    assert processes.bare_stages["image passes"] > 0 and processes.batch_seconds > 0
