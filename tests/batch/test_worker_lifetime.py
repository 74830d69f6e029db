"""The shared pools' worker processes end when the process that started them is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.slow

# Starts the fit pool (the light one: numpy and scikit-learn), prints its workers' ids, then waits to be killed.
_PARENT = """
import sys, time
from augclip_demo.batch import pools
pool = pools.FIT_POOL.get(2)
print(" ".join(str(pid) for pid in sorted(set(pools.FIT_POOL.wait(timeout=120)) | set(pool._processes))), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_end_when_their_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers), workers
        parent.send_signal(signal.SIGKILL)  # no clean-up runs: no atexit, no pool shutdown
        parent.wait(timeout=10)
        deadline = time.monotonic() + 15  # each worker wakes on its parent sentinel at once; room for a loaded machine
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if _alive(pid)], "a pool worker outlived its killed parent"
    finally:
        parent.kill()
        parent.wait(timeout=10)
