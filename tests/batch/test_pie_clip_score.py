"""PIE-Bench's two CLIP rows (whole edit, edited part) against a computation written here from the definition.

The model is ``random:tiny`` (labelled untrained); the check calls the open_clip model's
``encode_image`` / ``encode_text`` directly on its own preprocessing, masks the pixels with numpy and
applies ``100 x max(cos, 0)`` by hand, so nothing of the code under test (encoder batching and cache,
masking, normalisation, the metric row) is reused.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from augclip_demo.batch.benchmarks import load_pie_bench
from augclip_demo.batch.results import iter_results
from augclip_demo.batch.runner import BatchOptions, run_batch
from augclip_demo.config import Settings
from augclip_demo.inference.clip_encoder import get_encoder
from augclip_demo.metrics.clip_metrics import clip_score
from augclip_demo.pipeline import FeatureNetworks
from tests.batch.test_benchmark_loaders import reference_mask
from tests.support import TINY, draw_scene

PAIRS = [100 * 512 + 64, 300, 101 * 512 + 64, 300, 300 * 512, 512 * 60]
TARGET = "a red ball on grass"  # a text the seeded random:tiny model scores above 0


def direct_score(image: Image.Image, text: str, settings: Settings) -> float:
    """100 x max(cos, 0) from the open_clip model itself (same weights: the model the pool holds for the spec)."""
    encoder = get_encoder(dataclasses.replace(settings, clip_model="random:tiny", clip_checkpoint=None))
    model, preprocess, tokenizer = encoder.model, encoder.preprocess, encoder.tokenizer
    with torch.no_grad():
        a = model.encode_image(preprocess(image.convert("RGB"))[None].float())[0].double().numpy()
        b = model.encode_text(tokenizer([text]))[0].double().numpy()
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    return 100.0 * max(cos, 0.0)


def test_clip_score_formula():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=16), rng.normal(size=16)
    cos = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert clip_score(a, b) == pytest.approx(100 * max(cos, 0), abs=1e-12)
    assert clip_score(a, -a) == 0.0 and clip_score(a, 2 * a) == pytest.approx(100.0)


@pytest.fixture()
def pie_layout(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "annotation_images" / "0_random_140").mkdir(parents=True)
    (data / "mapping_file.json").write_text(json.dumps({"000000000007": {
        "image_path": "0_random_140/000000000007.jpg", "original_prompt": "a red ball on sand",
        "editing_prompt": "a red ball on [grass]", "editing_instruction": "put the ball on grass",
        "editing_type_id": "8", "blended_word": "sand grass", "mask": PAIRS}}))
    draw_scene((512, 512), "skyblue", [("ellipse", (60, 90, 380, 300), "red")]).save(
        data / "annotation_images" / "0_random_140" / "000000000007.jpg")
    for method, colour in (("a", "green"), ("b", "orange")):
        out = tmp_path / "output" / method / "annotation_images" / "0_random_140"
        out.mkdir(parents=True)
        draw_scene((512, 512), "skyblue", [("ellipse", (60, 90, 380, 300), colour),
                                           ("rectangle", (0, 400, 512, 512), "darkgreen")]).save(out / "000000000007.png")
    return tmp_path


@pytest.mark.slow  # a batch run with two CLIP models
def test_pie_bench_clip_rows_match_the_direct_computation(pie_layout, tiny_encoder):
    result = load_pie_bench(pie_layout / "data", pie_layout / "pie.jsonl",
                            methods=[pie_layout / "output" / "a", pie_layout / "output" / "b"])
    settings = Settings.from_env(clip_model=TINY, device="cpu")
    out = pie_layout / "results.jsonl"
    summary = run_batch(result.manifest, out, settings=settings, encoder=tiny_encoder,
                        options=BatchOptions(metrics="clip_score_whole,clip_score_edited,clip_t",
                                             networks=FeatureNetworks(pie_clip="random:tiny")))
    assert summary.n_ok == 1, summary.failures
    assert any("CLIP score (PIE-Bench)" in note and "untrained" in note for note in summary.notes)
    (record,) = list(iter_results(out))
    assert record["run"]["features"] == {"clip_score_whole": "random:tiny", "clip_score_edited": "random:tiny"}
    mask = reference_mask(PAIRS)  # PIE-Bench's decoding written out in the test, one-pixel border included
    values = []
    for edit in record["edits"]:
        image = Image.open(pie_layout / edit["path"]).convert("RGB")
        black_outside = Image.fromarray(np.where(mask[..., None], np.asarray(image), 0).astype(np.uint8))
        whole, part = direct_score(image, TARGET, settings), direct_score(black_outside, TARGET, settings)
        assert edit["metrics"]["clip_score_whole"] == pytest.approx(whole, abs=1e-3)
        assert edit["metrics"]["clip_score_edited"] == pytest.approx(part, abs=1e-3)
        values += [whole, part]
    assert len({round(v, 4) for v in values}) == 4 and max(values) > 0  # four distinct scores, not all clamped
