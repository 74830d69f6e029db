"""What a fit worker process runs: the embedding-stage metrics of one item, and a start-up task.

Apart from :mod:`.stages` so that a spawned worker imports the pure-math metrics (numpy, and
scikit-learn for the hyperplane fits) and nothing else. Importing :mod:`.stages` (torch and every
model wrapper) cost each spawned worker seconds of CPU; a py-spy profile of ``bench speed`` on a
16-core GPU machine found 14 workers doing so on the cores the image decoding needed
(docs/performance.md, "GPU").
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..metrics.suite import ItemScores, MetricInputs, score_item


def score_embeddings(inputs: MetricInputs, keys: Sequence[str]) -> ItemScores:
    """The embedding-stage metrics of one item, details summarised for the record (no model: any process)."""
    return score_item(inputs, keys).summarized()


def ready() -> int:
    """Import what a fit needs (scikit-learn's SVMs) and return this worker's process id."""
    import sklearn.svm  # noqa: F401  (imported once per worker, before the run needs it)

    return os.getpid()
