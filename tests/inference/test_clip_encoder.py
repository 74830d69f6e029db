"""The CLIP inference module through real open_clip code, with the tiny random ViT."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from augclip_demo.config import Settings
from augclip_demo.errors import ConfigError, WeightsUnavailableError
from augclip_demo.inference import TINY_ARCH, ClipEncoder, get_encoder, parse_model_spec
from tests.support import TINY, draw_scene


@pytest.mark.parametrize(
    "spec, checkpoint, kind, arch, tag",
    [
        ("ViT-B-16/openai", None, "pretrained", "ViT-B-16", "openai"),
        ("ViT-B-32/laion2b_s34b_b79k", None, "pretrained", "ViT-B-32", "laion2b_s34b_b79k"),
        ("ViT-B-16/openai", "/w.bin", "checkpoint", "ViT-B-16", "openai"),
        ("ViT-B-16", "/w.bin", "checkpoint", "ViT-B-16", None),
        ("random:tiny", None, "random", TINY_ARCH, None),
        ("random:ViT-B-16", None, "random", "ViT-B-16", None),
        ("hf-hub:laion/CLIP-ViT-B-16-laion2B-s34B-b88K", None, "hf-hub", None, None),
    ],
)
def test_spec_grammar(spec, checkpoint, kind, arch, tag):
    parsed = parse_model_spec(spec, checkpoint)
    assert (parsed.kind, parsed.arch, parsed.pretrained) == (kind, arch, tag)
    assert parsed.untrained == (kind == "random")


@pytest.mark.parametrize(
    "spec, checkpoint, message",
    [
        ("", None, "empty"),
        ("ViT-Q-99/openai", None, "unknown open_clip architecture 'ViT-Q-99'"),
        ("ViT-B-16/nonsense", None, "has no pretrained tag 'nonsense'"),
        ("ViT-B-16", None, "names no weights"),
        ("random:tiny", "/w.bin", "drop one of the two"),
        ("hf-hub:org/repo", "/w.bin", "cannot be combined"),
    ],
)
def test_spec_errors(spec, checkpoint, message):
    with pytest.raises(ConfigError, match=message):
        parse_model_spec(spec, checkpoint)


def test_tiny_encoder_outputs_unit_float32_rows(tiny_encoder):
    images = [draw_scene(shapes=[("ellipse", (10, 10, 60, 60), c)]) for c in ("red", "blue")]
    emb = tiny_encoder.encode_images(images)
    text = tiny_encoder.encode_texts(["a red ball", "a blue ball", "a red ball"])
    for array, rows in ((emb, 2), (text, 3)):
        assert array.dtype == np.float32 and array.shape == (rows, tiny_encoder.embed_dim)
        np.testing.assert_allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(emb[0], emb[1])
    np.testing.assert_array_equal(text[0], text[2])
    info = tiny_encoder.info()
    assert info.untrained and info.arch == TINY_ARCH and info.device == "cpu"


def test_random_weights_are_reproducible_across_instances(tiny_encoder):
    other = ClipEncoder(TINY, device="cpu")
    np.testing.assert_allclose(other.encode_texts(["a dog"]), tiny_encoder.encode_texts(["a dog"]), atol=1e-6)


def test_image_cache_is_keyed_by_content(tiny_encoder, tmp_path: Path):
    image = draw_scene(shapes=[("rectangle", (5, 5, 40, 70), "orange")])
    path = tmp_path / "orange.png"
    image.save(path)
    before = tiny_encoder.image_cache.stats()["misses"]
    first = tiny_encoder.encode_images([path])
    second = tiny_encoder.encode_images([image, path.read_bytes(), np.asarray(image)])
    assert tiny_encoder.image_cache.stats()["misses"] == before + 1  # encoded once, then cache hits
    np.testing.assert_array_equal(second, np.repeat(first, 3, axis=0))
    second[0, 0] = 42.0  # callers get copies; the cache stays intact
    np.testing.assert_array_equal(tiny_encoder.encode_images([path]), first)


def test_batch_size_does_not_change_results(tiny_encoder):
    images = [draw_scene(shapes=[("ellipse", (i, i, 50 + i, 50 + i), "purple")]) for i in range(5)]
    fresh = ClipEncoder(TINY, device="cpu")
    one_by_one = fresh.encode_images(images, batch_size=1)
    fresh.image_cache.clear()
    batched = fresh.encode_images(images, batch_size=8)
    np.testing.assert_allclose(one_by_one, batched, atol=1e-5)


def test_concurrent_requests_get_their_own_correct_results(tiny_encoder):
    texts = [f"a photo of object number {i}" for i in range(24)]
    expected = ClipEncoder(TINY, device="cpu").encode_texts(texts)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = tiny_encoder.encode_texts([texts[i], texts[(i + 5) % 24]])
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, rows in results.items():
        np.testing.assert_allclose(rows, expected[[i, (i + 5) % 24]], atol=1e-5)


def test_lazy_load_and_warmup():
    encoder = ClipEncoder(TINY, device="cpu")
    assert not encoder.is_loaded
    encoder.warmup()
    assert encoder.is_loaded and encoder.load_seconds is not None


def test_missing_pretrained_weights_raise_a_specific_error(tmp_path):
    encoder = ClipEncoder("ViT-B-16/openai", device="cpu", cache_dir=tmp_path)
    with pytest.raises(WeightsUnavailableError) as info:
        encoder.load()
    text = str(info.value)
    assert "ViT-B-16/openai" in text
    assert "timm/vit_base_patch16_clip_224.openai" in text  # where it tried
    assert "--clip-checkpoint" in text and "AUGCLIP_CLIP_CHECKPOINT" in text  # how to provide a file
    assert str(tmp_path) in text


def test_local_checkpoint_file_goes_through_open_clip_loading(tiny_encoder, tmp_path):
    path = tmp_path / "tiny.pt"
    torch.save(tiny_encoder.model.state_dict(), path)
    from_file = ClipEncoder(TINY_ARCH, checkpoint=path, device="cpu")
    assert not from_file.untrained and from_file.spec.kind == "checkpoint"
    image = draw_scene(shapes=[("ellipse", (0, 0, 30, 30), "green")])
    np.testing.assert_allclose(from_file.encode_images([image]), tiny_encoder.encode_images([image]), atol=1e-6)
    assert str(path) in from_file.info().label


def test_bad_or_missing_checkpoint_files(tmp_path):
    with pytest.raises(WeightsUnavailableError, match="does not exist"):
        ClipEncoder(TINY_ARCH, checkpoint=tmp_path / "nope.pt", device="cpu").load()
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"this is not a checkpoint")
    with pytest.raises(WeightsUnavailableError, match="open_clip state dict for augclip-tiny-vit"):
        ClipEncoder(TINY_ARCH, checkpoint=garbage, device="cpu").load()


def test_checkpoint_from_environment(monkeypatch, tiny_encoder, tmp_path):
    path = tmp_path / "env.pt"
    torch.save(tiny_encoder.model.state_dict(), path)
    monkeypatch.setenv("AUGCLIP_CLIP_MODEL", TINY_ARCH)
    monkeypatch.setenv("AUGCLIP_CLIP_CHECKPOINT", str(path))
    encoder = get_encoder(Settings.from_env(), device="cpu")  # the environment is read at the edge, into Settings
    assert encoder.spec.checkpoint == path
    assert get_encoder(Settings.from_env(), device="cpu") is encoder  # one shared instance per backbone and device


def test_out_of_memory_halves_the_batch(tiny_encoder):
    sizes: list[int] = []

    def flaky(batch: list[int]) -> np.ndarray:
        sizes.append(len(batch))
        if len(batch) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return np.array([[float(x)] for x in batch])

    out = tiny_encoder._run_in_batches(list(range(7)), flaky, batch_size=8)
    assert out[:, 0].tolist() == list(range(7))
    assert sizes[:3] == [8, 4, 2]  # every pass has the fixed size: 7 items padded to 8


def test_unknown_device_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown device"):
        ClipEncoder(TINY, device="tpu-9000")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA GPU"):
            ClipEncoder(TINY, device="cuda")


def test_image_size_and_patch_grid_come_from_the_model(tiny_encoder):
    assert tiny_encoder.image_size == 64
    assert isinstance(tiny_encoder.preprocess(Image.new("RGB", (10, 300))), torch.Tensor)
