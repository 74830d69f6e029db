"""Fixtures of the batch tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """The tiny model runs thousands of tiny ops; on a shared 2-core machine intra-op threads only wait
    on each other. Results do not depend on it; restored after each module."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
