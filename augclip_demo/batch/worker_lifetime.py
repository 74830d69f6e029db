"""A worker process of the shared pools ends when the process that started it has gone.

CPython's process-pool workers do not watch their parent. One whose parent was killed (the OOM killer, a
SIGKILL, a crashed server) waits for tasks forever; one that was waiting for the call queue's lock when a
sibling worker was killed holding it waits forever even while the parent lives on, until the parent exits.
Each such worker holds its imports' memory (about 0.5 GB for a decode worker).
"""

from __future__ import annotations

import os
import threading
import time

#: How often a worker looks for its parent (seconds): the longest a worker outlives it.
_PARENT_CHECK_S = 1.0


def end_with_parent(interval: float = _PARENT_CHECK_S) -> None:
    """Start a daemon thread in this worker that ends the process once its parent has exited (on POSIX an
    orphan's parent id changes to the reaper's). Called first in each pool's initializer."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(0)  # nothing to save: a worker's results go to a parent that is gone

    threading.Thread(target=watch, daemon=True, name="augclip-parent-watch").start()
