"""The fit worker processes: what each imports, and that all of them start before a run needs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def modules_loaded_by(worker: str) -> list[str]:
    """Ours, torch's and open_clip's modules that a fresh interpreter holds after importing ``worker``
    (a module of augclip_demo.batch) and calling its ready()."""
    code = (f"import sys, json; import augclip_demo.batch.{worker} as w; w.ready(); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('torch', 'open_clip', 'augclip_demo')))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout)


def test_a_fit_worker_imports_the_metrics_and_not_torch_or_the_model_wrappers():
    loaded = modules_loaded_by("fit_worker")
    assert "augclip_demo.metrics.suite" in loaded  # the filter keeps ours, torch and open_clip
    assert not [m for m in loaded if m.startswith(("torch", "open_clip"))], loaded
    assert not [m for m in loaded if m.split(".")[1:2] in (["inference"], ["batch"]) and m not in (
        "augclip_demo.batch", "augclip_demo.batch.fit_worker", "augclip_demo.batch.worker_lifetime")], loaded


@pytest.mark.slow  # starts decode worker processes
def test_the_shared_process_pool_starts_every_worker_at_once():
    from augclip_demo.batch import pools

    pools.FIT_POOL.discard()
    try:
        pool = pools.FIT_POOL.get(2)
        started = {process.pid for process in pool._processes.values()}  # started by the pool's creation
        assert len(started) == 2
        pids = pools.FIT_POOL.wait(timeout=120)
        assert len(pids) == 2 and set(pids) <= started  # each start-up task ran in one of them
        assert pools.FIT_POOL.get(2) is pool  # reused, not started again
    finally:
        pools.FIT_POOL.discard()
    assert pools.FIT_POOL.wait(timeout=1) == []


def test_a_decode_worker_module_imports_no_model_code():
    # torch and torchvision come with the recipe (the transforms), once per worker; the module itself
    # stays light so that the recipe decides what a worker holds
    loaded = modules_loaded_by("decode_worker")
    assert "augclip_demo.io" in loaded
    assert not [m for m in loaded if m.startswith(("torch", "open_clip"))], loaded
    assert not [m for m in loaded if m.split(".")[1:2] in (["inference"], ["metrics"])], loaded


@pytest.mark.slow  # starts decode worker processes
def test_a_shared_pool_is_reused_while_its_key_holds():
    from augclip_demo.batch import pools

    shared = pools.SharedProcessPool(pools.fit_worker.start, pools.fit_worker.ready)
    try:
        first = shared.get(1, key="model-a")
        assert shared.get(1, key="model-a") is first
        second = shared.get(1, key="model-b")  # another model: new workers, the old pool shut down
        assert second is not first and len(shared.wait(timeout=120)) == 1
        with pytest.raises(RuntimeError, match="shutdown"):
            first.submit(os.getpid)
        shared.discard(first)  # not the current pool any more: nothing happens
        assert second.submit(os.getpid).result(timeout=60) > 0
    finally:
        shared.discard()
