"""The training script's move to a finer patch grid (``--init`` from another patch size): a flat patch keeps
its response, the class token's position is kept, and a position table that is the same everywhere stays so."""

from __future__ import annotations

import importlib.util

import torch

from tests.support import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("train_shapes_clip", ROOT / "training" / "train_shapes_clip.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_coarse_grid_resampled_to_a_finer_one_keeps_flat_patches_and_the_class_position():
    torch.manual_seed(0)
    coarse = {"visual.conv1.weight": torch.randn(4, 3, 16, 16),
              "visual.positional_embedding": torch.cat([torch.randn(1, 4), torch.full((16, 4), 0.25)]),
              "visual.proj": torch.randn(4, 2)}
    like = {"visual.conv1.weight": torch.zeros(4, 3, 8, 8), "visual.positional_embedding": torch.zeros(65, 4),
            "visual.proj": torch.zeros(4, 2)}
    resampled = _script().resampled
    kept_class, kept_proj = coarse["visual.positional_embedding"][0].clone(), coarse["visual.proj"].clone()
    flat = torch.tensor([0.3, -1.2, 0.7])[:, None, None]  # one colour per channel
    before = (coarse["visual.conv1.weight"] * flat).sum(dim=(1, 2, 3))
    fine = resampled(dict(coarse), like)
    assert fine["visual.conv1.weight"].shape == (4, 3, 8, 8)
    assert torch.allclose((fine["visual.conv1.weight"] * flat).sum(dim=(1, 2, 3)), before, atol=1e-5)
    table = fine["visual.positional_embedding"]
    assert table.shape == (65, 4) and torch.equal(table[0], kept_class)
    assert torch.allclose(table[1:], torch.full((64, 4), 0.25), atol=1e-6)
    assert torch.equal(fine["visual.proj"], kept_proj)
    same = {k: v.clone() for k, v in coarse.items()}
    assert resampled(same, {k: torch.zeros_like(v) for k, v in coarse.items()}) is same  # one grid: as is
