"""Fixtures for weight tests (imported by tests/conftest.py): a local model hub with published layouts.

``published`` (which imports torch) is imported inside the fixtures: the conftest imports this module for
every run, and a run of tests that never start the hub should not pay for torch at collection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.hub_server import HubServer


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory):
    """A running :class:`HubServer` with the hf-hub: CLIP repo and the SAM file (GroundingDINO: ``hub_gdino``)."""
    from tests.support import published

    folder = tmp_path_factory.mktemp("published")
    with HubServer() as server:
        clip = published.write_hf_hub_clip(folder / "clip")
        server.add_folder(published.HF_HUB_CLIP_REPO, clip)
        sam = published.write_sam_tiny(folder / "sam" / published.SAM_FILE)
        server.add_file(published.SAM_FILE, sam)
        server.published = {"clip_folder": clip, "sam_path": sam}  # type: ignore[attr-defined]
        yield server


@pytest.fixture(scope="session")
def hub_gdino(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support import published

    folder = published.write_gdino(tmp_path_factory.mktemp("published-gdino"))
    hub.add_folder(published.GDINO_REPO, folder)
    return folder


def set_online(monkeypatch: pytest.MonkeyPatch, hub: HubServer, root: Path) -> Path:
    """This process talks to ``hub`` (HF_ENDPOINT), with an empty standard HF cache and our cache under ``root``."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_CACHE", str(root / "hf-standard"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read once at import; the conftest set it to 1
    return root / "cache"


def set_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture()
def online(monkeypatch: pytest.MonkeyPatch, hub: HubServer, tmp_path: Path) -> Path:
    """Our cache folder for a test that downloads from ``hub``; faults are cleared afterwards."""
    cache = set_online(monkeypatch, hub, tmp_path)
    yield cache
    hub.clear_faults()


def subprocess_env(hub: HubServer, root: Path, **extra: str) -> dict[str, str]:
    """Environment for a CLI/app process that loads real (non-random) weights from ``hub``."""
    from tests.support import published

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AUGCLIP_", "HF_"))}
    env.update({"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "HF_HUB_CACHE": str(root / "hf-standard"),
                "HF_HUB_DISABLE_TELEMETRY": "1", "AUGCLIP_CACHE_DIR": str(root / "cache"), "AUGCLIP_DEVICE": "cpu",
                "PYTHONPATH": str(published.TINY_CLIP_CONFIG.parents[3])})
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def hub_features(hub: HubServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny DINO / DINOv2 repositories and the SqueezeNet LPIPS backbone file on ``hub``
    (files under ``hub.url + '/files'``, the AUGCLIP_FILE_MIRROR of the tests)."""
    from tests.support import published

    folder = tmp_path_factory.mktemp("published-features")
    dino = published.write_dino(folder / "dino", "tiny")
    dinov2 = published.write_dino(folder / "dinov2", "tiny-v2")
    hub.add_folder(published.DINO_REPO, dino)
    hub.add_folder(published.DINOV2_REPO, dinov2)
    squeeze = published.write_torchvision_squeezenet(folder / "tv" / published.LPIPS_SQUEEZE_FILE)
    hub.add_file(published.LPIPS_SQUEEZE_FILE, squeeze)
    return {"dino": dino, "dinov2": dinov2, "squeeze": squeeze}
