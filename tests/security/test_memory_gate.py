"""The memory gate of the heavy stages (ui/guard.MemoryGate): two requests whose stages do not fit the
bound together take turns, two that fit run side by side, and a request that waits stops when its
client cancels. Real app (built in this process, so the test can see and hold its gate), real HTTP on
127.0.0.1, the tiny random model and the shipped example's images; no timing assertions (the waits
below only bound how long a test may hang)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from augclip_demo.config import Settings
from augclip_demo.ui.guard import (
    MEMORY_GATE,
    STAGE_BASE_BYTES,
    STAGE_BYTES_PER_PIXEL,
    WAITING_TEXT,
    MemoryGate,
)
from tests.security.servers import free_port
from tests.support import TINY
from tests.ui.test_app import EDITS, FLOWER, evaluate_args


def until(condition: Callable[[], bool], what: str, limit: float = 120.0) -> None:
    """Wait for ``condition`` (a bound on a hang, not a measured time)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.05)


def example_stage_bytes() -> int:
    """The gate's estimate for the example's request, from the image files (all under the working size)."""
    pixels = sum(w * h for w, h in (Image.open(p).size for p in [FLOWER / "source.png", *EDITS]))
    return STAGE_BASE_BYTES + STAGE_BYTES_PER_PIXEL * pixels


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from augclip_demo.ui.app import build_app

    settings = Settings.from_env({}, clip_model=TINY, device="cpu", gdino_model="random:tiny", sam_model="random:tiny")
    with pytest.MonkeyPatch.context() as patch:  # a cache of its own: the server deletes its cached files on close
        patch.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio-cache")))
        demo = build_app(settings)
        port = free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
        yield f"http://127.0.0.1:{port}/"
        demo.close()


def evaluated_client(url: str):
    from gradio_client import Client

    client = Client(url, verbose=False)
    client.predict(*evaluate_args(), api_name="/evaluate")
    return client


def set_budget(megabytes: int) -> None:
    """The server's bound (build_app sets it from the settings; the tests set it between requests)."""
    MEMORY_GATE.budget = megabytes << 20


def explained(result: tuple) -> bool:
    """An /explain reply with the edit picked and its AugCLIP relevancy map drawn."""
    pick, augclip_map = result[0], result[3]
    pick = pick["value"] if isinstance(pick, dict) else pick
    return str(pick).startswith("E") and Path(augclip_map).suffix == ".png" and Path(augclip_map).is_file()


def two_explanations_after_a_hold(url: str) -> list[dict]:
    """Two clients' /explain sent while the test holds the whole bound, queued behind it, then let go."""
    clients = [evaluated_client(url) for _ in range(2)]
    results: list[dict] = []
    with MEMORY_GATE.hold(MEMORY_GATE.budget):
        jobs = [client.submit(True, api_name="/explain") for client in clients]
        until(lambda: MEMORY_GATE.waiting == 2, "both explanations waiting behind the held bound")
        MEMORY_GATE.peak = 0  # from here on: what the two requests hold
    for job in jobs:
        results.append(job.result(timeout=600))
    return results


@pytest.mark.slow
def test_two_requests_over_the_bound_take_turns(app):
    url = app
    cost = example_stage_bytes()
    set_budget(-(-cost // 2**20))  # one request's estimate fits, two do not
    results = two_explanations_after_a_hold(url)
    assert MEMORY_GATE.peak == cost  # never both at once: one held the stage while the other waited
    assert MEMORY_GATE.held == 0 and MEMORY_GATE.holders == 0
    assert all(explained(result) for result in results)


@pytest.mark.slow
def test_two_requests_within_the_bound_run_side_by_side(app):
    url = app
    cost = example_stage_bytes()
    set_budget(-(-3 * cost // 2**20))
    assert all(explained(result) for result in two_explanations_after_a_hold(url))
    assert MEMORY_GATE.peak == 2 * cost  # both held the stage at once
    assert MEMORY_GATE.held == 0 and MEMORY_GATE.holders == 0


@pytest.mark.slow
def test_a_waiting_request_stops_when_its_client_cancels(app):
    url = app
    set_budget(-(-example_stage_bytes() // 2**20))
    client = evaluated_client(url)
    with MEMORY_GATE.hold(MEMORY_GATE.budget):  # another request holds the whole bound
        job = client.submit(True, api_name="/explain")
        until(lambda: MEMORY_GATE.waiting == 1, "the explanation waiting for memory")
        until(lambda: any(WAITING_TEXT in (unit.desc or "") for unit in (job.status().progress_data or [])),
              "the waiting text in the request's progress")
        job.cancel()
        until(lambda: MEMORY_GATE.waiting == 0, "the cancelled request to stop waiting")
        assert MEMORY_GATE.holders == 1  # only this test's hold: the cancelled request never ran
    assert explained(client.predict(True, api_name="/explain"))  # the server goes on serving


def test_the_gate_in_order_and_stopped_in_process():
    """The gate alone, real threads: a stage larger than the bound runs alone, waiters go in order of
    arrival, and a waiter whose event is set leaves the queue with RequestStopped."""
    from augclip_demo.ui.guard import RequestStopped

    gate = MemoryGate(100)
    order: list[str] = []
    stop = threading.Event()
    stopped: list[BaseException] = []

    def stage(name: str, cost: int, event: threading.Event | None = None) -> None:
        try:
            with gate.hold(cost, (lambda: event) if event is not None else None):
                order.append(name)
        except RequestStopped as exc:
            stopped.append(exc)

    with gate.hold(60):
        with gate.hold(1000):  # the same thread: reentrant, no second reservation
            assert gate.held == 60
        threads = [threading.Thread(target=stage, args=("big", 1000)), threading.Thread(target=stage, args=("small", 10)),
                   threading.Thread(target=stage, args=("leaves", 10, stop))]
        for index, thread in enumerate(threads):
            thread.start()
            until(lambda n=index + 1: gate.waiting == n, f"{index + 1} waiting")
        stop.set()
        until(lambda: gate.waiting == 2, "the stopped waiter gone")
    for thread in threads:
        thread.join()
    assert order == ["big", "small"]  # the big one first (it came first), alone: the small one waited for it
    assert len(stopped) == 1 and gate.peak == 100 and gate.held == 0


@pytest.mark.parametrize("height, width", [(8, 8), (9, 13), (65, 100), (300, 211)])
def test_banded_ssim_is_the_mean_of_torchmetrics_ssim_map(height, width):
    """BPM's SSIM outside the regions, computed in bands of rows (2.3 GB less at 1800 px): the float64 mean of
    torchmetrics' whole-image SSIM map, for bands of 1 row, a few rows and more rows than the image, and
    torchmetrics' own float32 mean to float32 rounding."""
    import torch
    from torchmetrics.functional.image import structural_similarity_index_measure

    from augclip_demo.inference.image_measures import banded_ssim

    generator = torch.Generator().manual_seed(height * width)
    source = torch.rand(1, 3, height, width, generator=generator)
    edit = (source + 0.2 * torch.rand(1, 3, height, width, generator=generator)).clamp(0, 1)
    source[:, :, : height // 3] = edit[:, :, : height // 3] = 0  # a blacked-out edit region, as the masks make
    value, full_map = structural_similarity_index_measure(edit, source, data_range=1.0, return_full_image=True)
    expected = float(np.mean(full_map.numpy(), dtype=np.float64))
    assert [banded_ssim(edit, source, rows) for rows in (1, 7, 10_000)] == [expected] * 3
    assert expected == pytest.approx(float(value), abs=1e-6)
