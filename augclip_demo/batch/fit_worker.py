"""What a fit worker process runs: the embedding-stage metrics of one item, and a start-up task.

Apart from :mod:`.item_steps` so that a spawned worker imports the pure-math metrics (numpy, and
scikit-learn for the hyperplane fits) and nothing else. Importing :mod:`.item_steps` (torch and every
model wrapper) cost each spawned worker seconds of CPU; a py-spy profile of ``bench speed`` on a
16-core GPU machine found 14 workers doing so on the cores the image decoding needed
(docs/performance.md, "GPU").
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from ..metrics.suite import ItemScores, MetricInputs, score_item
from .worker_lifetime import end_with_parent


def score_embeddings(inputs: MetricInputs, keys: Sequence[str]) -> ItemScores:
    """The embedding-stage metrics of one item, details summarised for the record (no model: any process)."""
    return score_item(inputs, keys).summarized()


def start(barrier: Any) -> None:
    """Each worker's initializer: import what a fit needs (scikit-learn's SVMs), then wait for the others.

    Once one worker has passed ``barrier`` (a ``multiprocessing.Barrier`` of the pool's size), every
    worker of the pool has started and imported, so a finished :func:`ready` task means all are ready.
    """
    end_with_parent()
    import sklearn.svm  # noqa: F401  (imported once per worker, before the run needs it)

    with contextlib.suppress(threading.BrokenBarrierError):  # a worker that never came: the others go on
        barrier.wait(timeout=300)


def ready() -> int:
    """This worker's process id (a task that runs once :func:`start` has returned)."""
    return os.getpid()
