"""Weights through a real local hub: downloads, caches, offline reuse, and one clear error per failure."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from augclip_demo.errors import WeightsUnavailableError
from augclip_demo.inference import ClipEncoder
from augclip_demo.inference.segmenter import SamSegmenter
from augclip_demo.inference.specs import TINY_ARCH
from augclip_demo.inference.weights.fetch import check_weight_file, sha256_of
from augclip_demo.inference.weights.table import pretrained_entry
from tests.support import draw_scene, free_port, published
from tests.support.hub_fixtures import set_offline

HF_CLIP = f"hf-hub:{published.HF_HUB_CLIP_REPO}"


def _assert_holds_published_clip(encoder: ClipEncoder) -> None:
    """Every tensor equals the published file's (so the weights were loaded, not initialised)."""
    expected = published.tiny_clip_state()
    state = encoder.model.state_dict()
    assert set(state) == set(expected)
    for name, tensor in expected.items():
        torch.testing.assert_close(state[name], tensor, rtol=0, atol=0, msg=name)


@pytest.mark.slow
def test_hf_hub_model_downloads_loads_the_published_tensors_and_is_not_untrained(hub, online):
    encoder = ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    _assert_holds_published_clip(encoder)
    assert not encoder.untrained and not encoder.info().untrained and "untrained" not in encoder.info().label
    assert encoder.weights_source == f"{hub.url}/{published.HF_HUB_CLIP_REPO}"
    rows = encoder.encode_texts(["a red ball"])
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_offline_reuse_of_the_filled_cache_makes_no_request(hub, online, monkeypatch):
    image = draw_scene(shapes=[("ellipse", (10, 10, 60, 60), "red")])
    first = ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).encode_images([image])
    set_offline(monkeypatch)
    before = hub.count()
    again = ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).encode_images([image])
    assert hub.count() == before
    np.testing.assert_array_equal(first, again)


@pytest.mark.slow
def test_the_standard_hugging_face_cache_is_reused(hub, online, tmp_path):
    from huggingface_hub import hf_hub_download

    for name in ("open_clip_config.json", "open_clip_model.safetensors"):
        hf_hub_download(published.HF_HUB_CLIP_REPO, name, cache_dir=str(tmp_path / "hf-standard"), endpoint=hub.url)
    before = hub.count()
    encoder = ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    assert hub.count() == before and not (online / "open_clip").exists()  # nothing fetched, nothing copied
    _assert_holds_published_clip(encoder)


@pytest.mark.parametrize("fault, words", [
    ((403, "open_clip_model.safetensors"), ["HTTP 403", "open_clip_model.safetensors", "HF_TOKEN"]),
    ((429, "open_clip_model.safetensors"), ["HTTP 429", "open_clip_model.safetensors", "try again"]),
    ((404, "open_clip_model.safetensors"), ["HTTP error 404", "open_clip_model.safetensors"]),
    ((403, "*"), ["HTTP 403", "open_clip_config.json"]),
])
def test_refused_weights_stop_the_run_instead_of_a_random_model(hub, online, fault, words):
    status, filename = fault
    hub.refuse(published.HF_HUB_CLIP_REPO, filename, status)
    with pytest.raises(WeightsUnavailableError) as info:
        ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    text = str(info.value)
    assert f"CLIP {HF_CLIP}" in text and published.HF_HUB_CLIP_REPO in text and "127.0.0.1" in text
    for word in words:
        assert word.lower() in text.lower(), (word, text)


def test_a_repository_with_only_the_config_is_an_error(hub, online):
    hub.add_repo("test-org/config-only", {"open_clip_config.json": (published.HF_HUB_CLIP_REPO and
                                                                     (hub.published["clip_folder"] /
                                                                      "open_clip_config.json").read_bytes())})
    with pytest.raises(WeightsUnavailableError, match="has no open_clip_model.safetensors or open_clip_pytorch_model.bin"):
        ClipEncoder("hf-hub:test-org/config-only", device="cpu", cache_dir=online).load()


def test_missing_and_gated_repositories_are_told_apart(hub, online):
    with pytest.raises(WeightsUnavailableError, match=r"test-org/nope does not exist on 127\.0\.0\.1"):
        ClipEncoder("hf-hub:test-org/nope", device="cpu", cache_dir=online).load()
    hub.gate(published.HF_HUB_CLIP_REPO)
    with pytest.raises(WeightsUnavailableError, match=r"gated \(HTTP 403\).*Accept the terms"):
        ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()


def test_an_endpoint_that_refuses_connections_fails_fast_and_is_named(online, monkeypatch):
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("HF_ENDPOINT", dead)
    start = time.monotonic()
    with pytest.raises(WeightsUnavailableError) as info:
        ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    assert time.monotonic() - start < 5
    assert "refuses connections" in str(info.value) and dead.split("//")[1] in str(info.value)


def test_no_network_and_no_cache_names_the_file_and_what_to_do(online, monkeypatch):
    set_offline(monkeypatch)
    with pytest.raises(WeightsUnavailableError) as info:
        ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    text = str(info.value)
    assert "open_clip_config.json" in text and "HF_HUB_OFFLINE is set" in text and "augclip-demo download" in text


@pytest.mark.slow
def test_a_truncated_cached_blob_is_named_offline_and_downloaded_again_online(hub, online, monkeypatch):
    ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    link = next(p for p in (online / "open_clip").rglob("open_clip_model.safetensors"))
    blob = link.resolve()
    blob.write_bytes(blob.read_bytes()[: blob.stat().st_size // 2])
    assert "truncated" in check_weight_file(link)
    set_offline(monkeypatch)
    with pytest.raises(WeightsUnavailableError) as info:
        ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    assert f"Delete {blob}" in str(info.value) and "truncated" in str(info.value)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    _assert_holds_published_clip(ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load())
    assert check_weight_file(link) is None


@pytest.mark.slow
def test_local_dir_and_untagged_checkpoint_load_the_published_tensors(hub, tmp_path):
    folder = hub.published["clip_folder"]
    _assert_holds_published_clip(ClipEncoder(f"local-dir:{folder}", device="cpu").load())
    _assert_holds_published_clip(ClipEncoder(TINY_ARCH, checkpoint=folder / "open_clip_model.safetensors",
                                             device="cpu").load())
    empty = tmp_path / "no-weights"
    empty.mkdir()
    (empty / "open_clip_config.json").write_bytes((folder / "open_clip_config.json").read_bytes())
    with pytest.raises(WeightsUnavailableError, match="no weight file there"):
        ClipEncoder(f"local-dir:{empty}", device="cpu").load()


@pytest.mark.slow  # several seconds of model builds on 2 cores
def test_tagged_model_with_a_checkpoint_reaches_the_weights_and_shows_the_mismatch(hub, tmp_path, monkeypatch):
    """The README's route (tag + --clip-checkpoint / AUGCLIP_CLIP_CHECKPOINT) used to die in open_clip's
    argument handling; now it loads the file, here the wrong architecture, and says so in one line."""
    from augclip_demo.inference import get_encoder

    tiny = hub.published["clip_folder"] / "open_clip_model.safetensors"
    for encoder in (ClipEncoder("ViT-B-16/openai", checkpoint=tiny, device="cpu"),
                    _env_encoder(monkeypatch, get_encoder, tiny)):
        with pytest.raises(WeightsUnavailableError) as info:
            encoder.load()
        text = str(info.value)
        assert "force_preprocess_cfg" not in text
        assert "different architecture" in text and "shape mismatch" in text and "vs model" in text
        assert str(tiny) in text and len(text) < 1200


def _env_encoder(monkeypatch, get_encoder, path: Path) -> ClipEncoder:
    monkeypatch.setenv("AUGCLIP_CLIP_MODEL", "ViT-B-16/openai")
    monkeypatch.setenv("AUGCLIP_CLIP_CHECKPOINT", str(path))
    from augclip_demo.config import Settings

    encoder = get_encoder(Settings.from_env(), device="cpu")  # the environment is read at the edge, into Settings
    assert encoder.spec.kind == "checkpoint" and encoder.spec.pretrained == "openai"
    return encoder


def test_garbage_checkpoint_gets_no_advice_to_disable_safe_loading(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x80\x02 not really a checkpoint" * 10)
    with pytest.raises(WeightsUnavailableError) as info:
        ClipEncoder(TINY_ARCH, checkpoint=garbage, device="cpu").load()
    assert "weights_only" not in str(info.value) and "garbage.bin" in str(info.value)


@pytest.mark.slow
def test_the_tag_resolves_to_open_clips_repository_and_file(hub, online):
    """ViT-B-16/openai goes to timm/vit_base_patch16_clip_224.openai; a tiny file there is the wrong architecture."""
    hub.add_repo(published.OPENAI_B16_REPO, {"open_clip_model.safetensors":
                                             hub.published["clip_folder"] / "open_clip_model.safetensors"})
    with pytest.raises(WeightsUnavailableError, match="different architecture"):
        ClipEncoder("ViT-B-16/openai", device="cpu", cache_dir=online).load()
    assert ("GET", f"/{published.OPENAI_B16_REPO}/resolve/main/open_clip_model.safetensors") in hub.requests
    assert pretrained_entry("clip", "ViT-B-16/openai").repo_id == published.OPENAI_B16_REPO


@pytest.mark.slow
def test_unload_releases_and_the_next_use_loads_again(hub, online):
    encoder = ClipEncoder(HF_CLIP, device="cpu", cache_dir=online).load()
    first = encoder.encode_texts(["a cat"])
    encoder.unload()
    assert not encoder.is_loaded and encoder._preprocess is None
    encoder.text_cache.clear()
    np.testing.assert_array_equal(encoder.encode_texts(["a cat"]), first)


# ---------------------------------------------------------------------------- SAM from a URL


def test_sam_checkpoint_from_a_configured_url_with_its_checksum(hub, online):
    url = f"{hub.url}/files/{published.SAM_FILE}"
    digest = sha256_of(hub.published["sam_path"])
    segmenter = SamSegmenter("tiny", url=url, sha256=digest, device="cpu", cache_dir=online).load()
    assert (online / "sam" / published.SAM_FILE).is_file()
    expected = torch.load(hub.published["sam_path"], weights_only=True)
    for name, tensor in segmenter._model.state_dict().items():
        torch.testing.assert_close(tensor, expected[name], rtol=0, atol=0)


def test_sam_checksum_mismatch_and_refused_url(hub, online):
    url = f"{hub.url}/files/{published.SAM_FILE}"
    with pytest.raises(WeightsUnavailableError, match="SHA-256 .* expected 0000"):
        SamSegmenter("tiny", url=url, sha256="0" * 64, device="cpu", cache_dir=online).load()
    assert not (online / "sam" / published.SAM_FILE).exists()  # nothing half-checked is kept
    hub.file_faults[published.SAM_FILE] = 403
    with pytest.raises(WeightsUnavailableError, match=r"access refused \(HTTP 403\)"):
        SamSegmenter("tiny", url=url, device="cpu", cache_dir=online).load()


def test_sam_truncated_download_is_refused(hub, online):
    data = hub.published["sam_path"].read_bytes()
    url = hub.add_file("sam_half.pth", data[: len(data) // 2])
    with pytest.raises(WeightsUnavailableError, match="sam_half.pth.*(truncated|not a PyTorch)"):
        SamSegmenter("tiny", url=url, device="cpu", cache_dir=online).load()


# ---------------------------------------------------------------------------- GroundingDINO from the hub


@pytest.mark.slow
def test_grounding_dino_from_the_hub_then_offline(hub, hub_gdino, online, monkeypatch):
    from transformers import GroundingDinoForObjectDetection

    from augclip_demo.inference.grounding import GroundingDetector

    detector = GroundingDetector(published.GDINO_REPO, device="cpu", cache_dir=online).load()
    assert not detector.untrained and "untrained" not in detector.label
    # The same tensors as transformers reading the published folder directly (and not a fresh random model).
    expected = GroundingDinoForObjectDetection.from_pretrained(str(hub_gdino)).state_dict()
    fresh = GroundingDetector("random:tiny", device="cpu", cache_dir=online).load()._model.state_dict()
    state = detector._model.state_dict()
    assert set(state) == set(expected)
    for name, tensor in expected.items():
        torch.testing.assert_close(state[name], tensor, rtol=0, atol=0, msg=name)
    assert any(not torch.equal(state[name], fresh[name]) for name in state if name in fresh)
    set_offline(monkeypatch)
    before = hub.count()
    again = GroundingDetector(published.GDINO_REPO, device="cpu", cache_dir=online).load()
    assert hub.count() == before and again.detect([draw_scene()], [["red ball"]])[0][0].phrase == "red ball"


@pytest.mark.slow
def test_grounding_dino_refused_weights_and_wrong_architecture(hub, hub_gdino, online, tmp_path):
    from augclip_demo.inference.grounding import GroundingDetector

    hub.refuse(published.GDINO_REPO, "model.safetensors", 403)
    with pytest.raises(WeightsUnavailableError, match=r"model.safetensors: access refused \(HTTP 403"):
        GroundingDetector(published.GDINO_REPO, device="cpu", cache_dir=online).load()
    hub.clear_faults()
    # A folder whose weights miss half the tensors: transformers would initialise them randomly.
    from safetensors.torch import load_file

    folder = tmp_path / "partial"
    folder.mkdir()
    for path in hub_gdino.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    state = load_file(str(hub_gdino / "model.safetensors"))
    published.save_safetensors(dict(list(state.items())[: len(state) // 2]), folder / "model.safetensors")
    with pytest.raises(WeightsUnavailableError, match="different architecture: .*missing key"):
        GroundingDetector(str(folder), device="cpu").load()


@pytest.mark.parametrize("root_level", [logging.WARNING, logging.ERROR])  # ERROR: the CLI without --verbose
def test_open_clips_random_fallback_is_caught_whatever_the_log_level(root_level, tmp_path):
    """open_clip initialises randomly and only logs when it has no weights; its own require_pretrained check,
    asked for by create_open_clip, turns that into an error whatever the log level."""
    import open_clip

    from augclip_demo.inference.specs import register_model_configs
    from augclip_demo.inference.weights.guards import create_open_clip

    register_model_configs()
    root = logging.getLogger()
    previous = root.level
    root.setLevel(root_level)
    try:
        with pytest.raises(WeightsUnavailableError, match="refusing to run with random weights"):
            create_open_clip(open_clip.create_model, TINY_ARCH, model=f"CLIP {TINY_ARCH}", where="nowhere", how_to_fix="")
        assert root.level == root_level
        path = str(published.write_hf_hub_clip_weights_only(tmp_path))
        model = create_open_clip(open_clip.create_model, TINY_ARCH, model="CLIP", where="file", how_to_fix="",
                                 pretrained=path)
        assert model is not None
    finally:
        root.setLevel(previous)
