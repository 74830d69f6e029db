"""The fit worker processes: what each imports, and that all of them start before a run needs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_fit_worker_imports_the_metrics_and_not_torch_or_the_model_wrappers():
    code = ("import sys, json; import augclip_demo.batch.fit_worker as w; w.ready(); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('torch', 'open_clip', 'augclip_demo')))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    loaded = json.loads(out.stdout)
    assert "augclip_demo.metrics.suite" in loaded  # the filter keeps ours, torch and open_clip
    assert not [m for m in loaded if m.startswith(("torch", "open_clip"))], loaded
    assert not [m for m in loaded if m.split(".")[1:2] in (["inference"], ["batch"]) and m not in (
        "augclip_demo.batch", "augclip_demo.batch.fit_worker")], loaded


def test_the_shared_process_pool_starts_every_worker_at_once():
    from augclip_demo.batch import pools

    pools.discard_process_pool()
    try:
        pool = pools.shared_process_pool(2)
        started = {process.pid for process in pool._processes.values()}  # started by the pool's creation
        assert len(started) == 2
        pids = pools.wait_for_fit_workers(timeout=120)
        assert len(pids) == 2 and set(pids) <= started  # each start-up task ran in one of them
        assert pools.shared_process_pool(2) is pool  # reused, not started again
    finally:
        pools.discard_process_pool()
    assert pools.wait_for_fit_workers(timeout=1) == []
