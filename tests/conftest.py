"""Shared fixtures: the tiny random CLIP model and small drawn images (all offline)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.support import usable_cpus  # (PIL and the standard library: no thread pools yet)

# The tests run on every core (pytest-xdist, ``-n auto`` in pyproject.toml). Each worker's math libraries get
# that worker's share of the cores, set before numpy or torch start their thread pools: without it every
# worker's torch starts one thread per core and the workers fight over them (fast loop on 2 cores: 57 s ->
# 52 s). Tests that start processes pass it on, so an app server under test stays within the share too.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    _share = max(1, usable_cpus() // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, str(_share))

import numpy as np  # after the thread counts above
import pytest
from PIL import Image

from tests.support import APP_UPLOAD_LIMIT_MB, APP_ZIP_LIMITS, ROOT, TINY, draw_scene, free_port
from tests.support.app_process import spawn_app
from tests.support.hub_fixtures import hub, hub_features, hub_gdino, online  # noqa: F401 - the local model hub fixtures

# Pytest keeps a test module's rewritten asserts as bytecode (in the ignored __pycache__ folders) only where
# bytecode may be written, and reads what is kept either way. With PYTHONDONTWRITEBYTECODE set, as on our
# machines, nothing was ever kept and every run and worker rewrote all the test modules again: collection of
# the fast loop takes 6.4 s with them kept, 12 s without (one process, 2 cores). Processes that tests start
# inherit the environment, not this.
sys.dont_write_bytecode = False


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per core this process may use (xdist would count physical cores when psutil
    is installed: one on a 2-vCPU machine), at most 8 (each worker starts its own app servers and browser).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set (xdist reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return min(8, usable_cpus())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (``--dist loadgroup``): a slow module's tests stay together on one worker (they share
    module fixtures such as a started server, and some read what the module's earlier tests recorded), and
    the slow modules go first, so the many quick tests fill the workers' last minutes evenly.

    loadgroup sends the tests whose id ends in the same ``@group`` to one worker. xdist 3.8 appends that
    suffix for ``xdist_group`` marks by setting ``item._nodeid``, which pytest 9 no longer reads (a node's
    id is ``item._id``), so marks are ignored there; the suffix is set here the way pytest 9 keeps ids.
    """
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    from _pytest.nodeid import NodeId

    for item in items:
        if item.get_closest_marker("slow"):
            item._id = NodeId.parse(f"{item.nodeid}@{item.nodeid.split('::')[0]}")
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: each module keeps its order


# Keep every test offline and out of the user's real cache.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")



@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("augclip-cache")
    os.environ["AUGCLIP_CACHE_DIR"] = str(cache)
    return cache


@pytest.fixture(scope="session", autouse=True)
def _session_temp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What code under test puts in the system's temporary folder (the app's work folders made in process, for
    one) lands in this session's own folder, which pytest deletes with its old runs, not in /tmp for good."""
    tempfile.tempdir = str(tmp_path_factory.mktemp("tmp"))


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
