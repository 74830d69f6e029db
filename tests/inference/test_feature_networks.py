"""DINO, LPIPS and FID networks: loaded through the weights module from a real local hub, never downloaded
elsewhere, random weights labelled untrained, missing weights a clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from augclip_demo.errors import ConfigError, WeightsUnavailableError
from augclip_demo.inference.dino import DinoFeatures
from augclip_demo.inference.lpips import LpipsNetwork
from tests.support import published
from tests.support.hub_fixtures import set_offline


def _images(n: int = 2, size: tuple[int, int] = (72, 60)) -> list[Image.Image]:
    rng = np.random.default_rng(7)
    return [Image.fromarray((rng.random((size[1], size[0], 3)) * 255).astype(np.uint8)) for _ in range(n)]


def _published_state(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _fingerprints(state: dict[str, torch.Tensor]) -> list[tuple[tuple[int, ...], bytes]]:
    return sorted((tuple(t.shape), t.detach().contiguous().numpy().tobytes()) for t in state.values())


# ---------------------------------------------------------------------------------------------- DINO
@pytest.mark.parametrize("repo, key", [(published.DINO_REPO, "dino"), (published.DINOV2_REPO, "dinov2")])
def test_dino_from_the_hub_holds_the_published_tensors(hub, hub_features, online, repo, key):
    features = DinoFeatures(repo, device="cpu", cache_dir=online).load()
    assert not features.untrained and "untrained" not in features.label
    # transformers saves (and the hub repositories hold) the legacy tensor names, renamed on loading:
    # compare the tensors themselves, every published one present and nothing else
    assert _fingerprints(features._model.state_dict()) == _fingerprints(_published_state(hub_features[key]))


def test_dino_offline_without_files_names_the_model_and_the_fix(hub, hub_features, tmp_path, monkeypatch):
    set_offline(monkeypatch)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    with pytest.raises(WeightsUnavailableError) as caught:
        DinoFeatures(published.DINO_REPO, device="cpu", cache_dir=tmp_path / "cache").load()
    text = str(caught.value)
    assert "DINO facebook/dino-vits16" in text and "augclip-demo download" in text and "random:" in text


def test_dino_refuses_a_folder_whose_weights_are_for_another_architecture(tmp_path):
    from augclip_demo.inference.dino import save_random_dino

    save_random_dino("tiny", tmp_path / "a")
    other = save_random_dino("tiny-v2", tmp_path / "b")
    (tmp_path / "a" / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())
    with pytest.raises(WeightsUnavailableError, match="DINO"):
        DinoFeatures(str(tmp_path / "a"), device="cpu").load()


def test_random_dino_is_labelled_untrained_and_unknown_specs_are_refused():
    assert DinoFeatures("random:tiny", device="cpu").untrained
    assert "untrained" in DinoFeatures("random:dino-vits16", device="cpu").label
    with pytest.raises(ConfigError, match="random:dino-vits16"):
        DinoFeatures("random:nope", device="cpu")
    with pytest.raises(ConfigError, match="hub id"):
        DinoFeatures("not-a-repo", device="cpu")


def test_dino_crop_preprocessing_matches_a_pil_rederivation():
    image = _images(1, (90, 64))[0]
    tensor = DinoFeatures.preprocess_crop([image])[0].numpy()
    # shorter side 64 -> 256: the longer becomes int(90 * 256 / 64) = 360; bicubic; centre 224 crop
    resized = np.asarray(image.resize((360, 256), Image.BICUBIC), dtype=np.float64) / 255.0
    top, left = (256 - 224) // 2, (360 - 224) // 2  # torchvision rounds (h - crop) / 2
    crop = resized[top:top + 224, left:left + 224]
    expected = (crop - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(tensor.transpose(1, 2, 0), expected, atol=1e-5)


def test_dino_read_outs_equal_the_transformers_model_run_by_hand():
    features = DinoFeatures("random:tiny", device="cpu").load()
    images = _images(2)
    pixels = DinoFeatures.preprocess_crop(images)
    with torch.no_grad():
        out = features._model(pixel_values=pixels, output_hidden_states=True)
    hidden = out.last_hidden_state.double().numpy()
    np.testing.assert_allclose(features.embed(images, pooling="cls"), hidden[:, 0], atol=1e-6)
    np.testing.assert_allclose(features.embed(images, pooling="mean"), hidden[:, 1:].mean(axis=1), atol=1e-6)
    # keys of the last block: its pre-attention layer norm, then the key projection, on its input
    structure = DinoFeatures.preprocess_structure(images[0])
    with torch.no_grad():
        states = features._model(pixel_values=structure, output_hidden_states=True,
                                 interpolate_pos_encoding=True).hidden_states
        block = features._model.layers[-1]
        expected = block.attention.k_proj(block.layernorm_before(states[-2]))[0].numpy()
    (keys,) = features.keys(images[:1])
    assert keys.shape == (1 + (224 // 16) * (268 // 16), 32)  # 60x72 -> 224x268 (shorter side 224)
    np.testing.assert_allclose(keys, expected, atol=1e-5)


# ---------------------------------------------------------------------------------------------- LPIPS
def _torchvision_lpips_reference(path: Path, first: np.ndarray, second: np.ndarray) -> float:
    """LPIPS with torchvision itself loading the backbone file, then torchmetrics' distance."""
    import torchvision
    from torchmetrics.functional.image.lpips import _lpips_update, _NoTrainLpips

    backbone = torchvision.models.squeezenet1_1(weights=None)
    backbone.load_state_dict(torch.load(path, weights_only=True))
    net = _NoTrainLpips(net="squeeze", pretrained=True, pnet_rand=True)
    for piece in net.net.slices:
        for name in list(piece._modules):
            piece._modules[name] = backbone.features[int(name)]
    a = torch.from_numpy(first.transpose(2, 0, 1)[None].astype(np.float32))
    b = torch.from_numpy(second.transpose(2, 0, 1)[None].astype(np.float32))
    with torch.no_grad():
        return float(_lpips_update(a, b, net=net.eval(), normalize=True))


@pytest.mark.slow  # imports torchmetrics
def test_lpips_backbone_comes_from_the_mirror_and_matches_torchvision_loading_it(hub, hub_features, online):
    network = LpipsNetwork("squeeze", device="cpu", cache_dir=online, mirror=f"{hub.url}/files")
    images = [np.asarray(im, dtype=np.float64) / 255.0 for im in _images(2)]
    values = network.distance(images[:1], images[1:])
    assert not network.untrained and (online / "torchvision" / published.LPIPS_SQUEEZE_FILE).is_file()
    reference = _torchvision_lpips_reference(hub_features["squeeze"], images[0], images[1])
    assert values[0] == pytest.approx(reference, abs=1e-6)
    assert values[0] > 0
    np.testing.assert_allclose(network.distance(images[:1], images[:1]), [0.0], atol=1e-7)


def test_lpips_offline_without_the_file_is_a_clear_error(tmp_path, monkeypatch):
    set_offline(monkeypatch)
    with pytest.raises(WeightsUnavailableError) as caught:
        LpipsNetwork("alex", device="cpu", cache_dir=tmp_path, mirror="").load()
    text = str(caught.value)
    assert "LPIPS alex" in text and "alexnet-owt-7be5be79.pth" in text and "AUGCLIP_FILE_MIRROR" in text


@pytest.mark.slow  # imports torchmetrics
def test_lpips_refuses_a_backbone_file_of_another_network(tmp_path):
    wrong = published.write_torchvision_squeezenet(tmp_path / "squeeze.pth")
    with pytest.raises(WeightsUnavailableError, match="alexnet ImageNet state dict"):
        LpipsNetwork("alex", checkpoint=wrong, device="cpu", cache_dir=tmp_path).load()


def test_random_lpips_is_untrained():
    network = LpipsNetwork("random:squeeze", device="cpu")
    assert network.untrained and "untrained" in network.label
    with pytest.raises(ConfigError, match="alex, squeeze or vgg"):
        LpipsNetwork("resnet", device="cpu")


# ---------------------------------------------------------------------------------------------- FID
@pytest.mark.slow
def test_fid_network_from_the_mirror_and_torchmetrics_fid_equals_a_numpy_rederivation(hub, online, tmp_path):
    from scipy import linalg

    from augclip_demo.inference.fid import FidInception, frechet_distance

    path = published.write_fid_inception(tmp_path / published.FID_FILE)
    hub.add_file(published.FID_FILE, path)
    network = FidInception(device="cpu", cache_dir=online, mirror=f"{hub.url}/files").load()
    assert not network.untrained
    expected = torch.load(path, weights_only=True)
    state = network._model.state_dict()
    for name, tensor in expected.items():
        torch.testing.assert_close(state[name], tensor, rtol=0, atol=0, msg=name)
    real, fake = _images(3, (48, 48)), _images(6, (48, 48))[3:]
    fake = [Image.fromarray(255 - np.asarray(im)) for im in fake]
    value = frechet_distance(network, real, fake)
    a, b = network.features(real), network.features(fake)
    mu_a, mu_b = a.mean(0), b.mean(0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root = linalg.sqrtm(cov_a @ cov_b).real  # rank 2 at most (3 images): singular, as FID's own computation
    reference = float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * root))
    assert value > 0
    assert value == pytest.approx(reference, rel=1e-3)


def test_fid_without_weights_offline_is_a_clear_error(tmp_path, monkeypatch):
    from augclip_demo.inference.fid import FidInception

    set_offline(monkeypatch)
    network = FidInception(device="cpu", cache_dir=tmp_path, mirror="")
    with pytest.raises(WeightsUnavailableError, match="weights-inception-2015-12-05-6726825d.pth"):
        network.resolve()
    assert FidInception("random:inception-v3-compat", device="cpu").untrained
