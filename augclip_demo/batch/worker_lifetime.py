"""A worker process of the shared pools ends when the process that started it has gone.

CPython's process-pool workers do not watch their parent. One whose parent was killed (the OOM killer, a
SIGKILL, a crashed server) waits for tasks forever; one that was waiting for the call queue's lock when a
sibling worker was killed holding it waits forever even while the parent lives on, until the parent exits.
Each such worker holds its imports' memory (about 0.5 GB for a decode worker).
"""

from __future__ import annotations

import multiprocessing
import os
import threading


def end_with_parent() -> None:
    """Start a daemon thread in this worker that ends the process once its parent has exited. Called first in
    each pool's initializer. It waits on multiprocessing's parent sentinel (a pipe the parent holds open, on
    every platform), so a parent that died before the initializer ran is seen at once too."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not a multiprocessing child (an initializer called in the main process)
        return

    def watch() -> None:
        parent.join()  # returns when the parent has gone
        os._exit(0)  # nothing to save: a worker's results go to a parent that is gone

    threading.Thread(target=watch, daemon=True, name="augclip-parent-watch").start()
