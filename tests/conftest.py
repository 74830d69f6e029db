"""Shared fixtures: the tiny random CLIP model and small drawn images (all offline)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.support import APP_UPLOAD_LIMIT_MB, APP_ZIP_LIMITS, ROOT, TINY, draw_scene, free_port
from tests.support.app_process import spawn_app
from tests.support.hub_fixtures import hub, hub_features, hub_gdino, online  # noqa: F401 - the local model hub fixtures

# Keep every test offline and out of the user's real cache.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")



@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("augclip-cache")
    os.environ["AUGCLIP_CACHE_DIR"] = str(cache)
    return cache


@pytest.fixture(scope="session")
def tiny_encoder():
    from augclip_demo.inference import ClipEncoder

    return ClipEncoder(TINY, device="cpu").load()


@pytest.fixture()
def scene_files(tmp_path: Path) -> dict[str, Path]:
    """A source image and three edits (faithful, barely changed, replaced) saved as PNG files."""
    source = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red")])
    faithful = draw_scene(shapes=[("ellipse", (20, 20, 70, 70), "red"), ("rectangle", (0, 72, 96, 96), "green")])
    preserved = Image.fromarray(np.clip(np.asarray(source, dtype=np.int16) + 2, 0, 255).astype(np.uint8))
    replaced = draw_scene((120, 90), "navy", [("rectangle", (10, 10, 60, 60), "yellow")])
    paths = {}
    for name, image in {"source": source, "faithful": faithful, "preserved": preserved, "replaced": replaced}.items():
        paths[name] = tmp_path / f"{name}.png"
        image.save(paths[name])
    return paths


# ---------------------------------------------------------------------------- the app as a real server


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory):
    """``python app.py`` started as users start it, on 127.0.0.1, with the tiny random model."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("app") / "app.log"
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}  # no real endpoint
    env = {**inherited, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "AUGCLIP_CLIP_MODEL": TINY, "AUGCLIP_DEVICE": "cpu", "AUGCLIP_GDINO_MODEL": "random:tiny",
           "AUGCLIP_SAM_MODEL": "random:tiny", "AUGCLIP_HATIE_DINO": "random:tiny-v2", "AUGCLIP_BPM_PRESET": "standard",
           "AUGCLIP_HATIE_LPIPS": "random:alex", "AUGCLIP_HATIE_CLIP": TINY, "AUGCLIP_MAX_UPLOAD_MB": str(APP_UPLOAD_LIMIT_MB), **APP_ZIP_LIMITS,
           "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(ROOT)}
    app = spawn_app(env, log_path, port)
    yield {"url": app.url, "log": log_path, "process": app.process}
    app.stop()
