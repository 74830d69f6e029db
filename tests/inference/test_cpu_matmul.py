"""oneDNN kernels for the CLIP towers on CPU: same products as torch's own (to float32 rounding), same gradients.

References are independent computations: float64 numpy products, and torch's own
``F.multi_head_attention_forward`` / autograd with the mode off.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from augclip_demo.errors import ConfigError
from augclip_demo.inference import cpu_matmul
from augclip_demo.inference.clip_encoder import ClipEncoder

needs_onednn = pytest.mark.skipif(not cpu_matmul.onednn_available(), reason="no oneDNN float32 linear on this CPU")


def _rng_tensor(*shape: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@needs_onednn
@pytest.mark.parametrize("shape", [(20, 48), (3, 17, 48), (48,)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_a_float64_product(shape, with_bias):
    x, w, b = _rng_tensor(*shape, seed=1), _rng_tensor(32, 48, seed=2), _rng_tensor(32, seed=3)
    mode = cpu_matmul.OneDnnMatmuls()
    with mode:
        out = F.linear(x, w, b if with_bias else None)
    assert mode.taken == 1  # the product ran through oneDNN, not torch's fallback
    expected = x.double().numpy() @ w.double().numpy().T + (b.double().numpy() if with_bias else 0.0)
    assert out.shape == expected.shape and out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_input_gradient_matches_torchs_autograd():
    x, w, b = _rng_tensor(2, 9, 48, seed=4), _rng_tensor(32, 48, seed=5), _rng_tensor(32, seed=6)
    weights = _rng_tensor(2, 9, 32, seed=7)
    x_ref = x.clone().requires_grad_(True)
    (F.linear(x_ref, w, b) * weights).sum().backward()
    x_new = x.clone().requires_grad_(True)
    with cpu_matmul.OneDnnMatmuls():
        out = F.linear(x_new, w, b)
    (out * weights).sum().backward()
    np.testing.assert_allclose(x_new.grad.numpy(), x_ref.grad.numpy(), rtol=1e-5, atol=1e-5)
    # reference by hand: d/dx sum(weights * (x W^T + b)) = weights W
    np.testing.assert_allclose(x_new.grad.numpy(), (weights.double() @ w.double()).numpy(), rtol=1e-5, atol=1e-5)


@needs_onednn
def test_learning_weights_and_other_dtypes_keep_torchs_path():
    x, w = _rng_tensor(4, 8, seed=8), _rng_tensor(3, 8, seed=9).requires_grad_(True)
    mode = cpu_matmul.OneDnnMatmuls()
    with mode:
        F.linear(x, w).sum().backward()
        F.linear(x.double(), w.detach().double())
    assert mode.taken == 0
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.sum(0).numpy(), (3, 1)), rtol=1e-6)


def _attention_args(mask):
    length, batch, embed, heads = 7, 2, 32, 4
    x = _rng_tensor(length, batch, embed, seed=10)
    return (x, x, x, embed, heads, _rng_tensor(3 * embed, embed, seed=11) * 0.2, _rng_tensor(3 * embed, seed=12),
            None, None, False, 0.0, _rng_tensor(embed, embed, seed=13) * 0.2, _rng_tensor(embed, seed=14)), mask


CAUSAL = torch.full((7, 7), float("-inf")).triu(1)
def _per_head(kind: str) -> torch.Tensor:
    """A different mask for every (batch row, head): a slip in their order would show."""
    blocked = torch.from_numpy(np.random.default_rng(16).random((8, 7, 7)) < 0.4)
    blocked[:, torch.arange(7), torch.arange(7)] = False  # every query may attend to itself
    if kind == "bool":
        return blocked
    return torch.from_numpy(np.random.default_rng(17).standard_normal((8, 7, 7)).astype(np.float32)).masked_fill(
        blocked, float("-inf"))


@needs_onednn
@pytest.mark.parametrize("case", ["none", "float", "bool", "per_head_float", "per_head_bool", "is_causal"])
def test_self_attention_matches_torchs_own(case):
    masks = {"none": None, "float": CAUSAL, "bool": torch.ones(7, 7, dtype=torch.bool).triu(1),
             "per_head_float": _per_head("float"), "per_head_bool": _per_head("bool"), "is_causal": CAUSAL}
    args, mask = _attention_args(masks[case])
    kwargs = {"training": False, "need_weights": False, "attn_mask": mask, "is_causal": case == "is_causal"}
    expected, _ = F.multi_head_attention_forward(*args, **kwargs)
    mode = cpu_matmul.OneDnnMatmuls()
    with mode:
        out, weights = F.multi_head_attention_forward(*args, **kwargs)
    assert weights is None and mode.taken == 2  # packed input projection + output projection
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


@needs_onednn
def test_attention_with_weights_or_padding_keeps_torchs_path():
    args, _ = _attention_args(None)
    mode = cpu_matmul.OneDnnMatmuls()
    with mode:
        _, weights = F.multi_head_attention_forward(*args, training=False, need_weights=True)
        F.multi_head_attention_forward(*args, training=False, need_weights=False,
                                       key_padding_mask=torch.zeros(2, 7, dtype=torch.bool))
    assert weights is not None and weights.shape == (2, 7, 7)
    assert mode.taken == 0


@needs_onednn
@pytest.mark.parametrize("bad", ["mask_shape", "hint_without_mask"])
def test_attention_torch_refuses_is_refused_here_too(bad):
    """A mask torch would reject is not broadcast into a silently wrong result: torch's own check runs."""
    args, _ = _attention_args(None)
    kwargs = {"training": False, "need_weights": False}
    kwargs.update({"attn_mask": torch.zeros(1, 7)} if bad == "mask_shape" else {"is_causal": True})
    with pytest.raises(RuntimeError):
        F.multi_head_attention_forward(*args, **kwargs)
    mode = cpu_matmul.OneDnnMatmuls()
    with mode, pytest.raises(RuntimeError):
        F.multi_head_attention_forward(*args, **kwargs)
    assert mode.taken == 0


@needs_onednn
def test_cpu_autocast_keeps_the_precision_asked_for():
    x, w = _rng_tensor(20, 48, seed=18), _rng_tensor(32, 48, seed=19)
    mode = cpu_matmul.OneDnnMatmuls()
    with mode, torch.autocast("cpu", dtype=torch.bfloat16):
        out = F.linear(x, w)
    assert out.dtype == torch.bfloat16 and mode.taken == 0
    assert cpu_matmul.resolve_cpu_matmul("auto", torch.device("cpu"), torch.bfloat16) == "blas"
    assert ClipEncoder("random:tiny", device="cpu", precision="bf16").matmul == "blas"


def test_resolution_and_a_clear_error_where_there_is_no_onednn(monkeypatch):
    monkeypatch.delenv("AUGCLIP_CPU_MATMUL", raising=False)
    assert cpu_matmul.resolve_cpu_matmul("onednn", torch.device("cuda")) == "blas"
    assert cpu_matmul.resolve_cpu_matmul("blas", torch.device("cpu")) == "blas"
    # auto keeps torch's kernels: oneDNN was no faster on torch 2.14.1 here (docs/performance.md)
    assert cpu_matmul.resolve_cpu_matmul("auto", torch.device("cpu")) == "blas"
    assert ClipEncoder("random:tiny", device="cpu").matmul == "blas"
    monkeypatch.setattr(cpu_matmul, "onednn_available", lambda: False)
    assert cpu_matmul.resolve_cpu_matmul("auto", torch.device("cpu")) == "blas"
    with pytest.raises(ConfigError, match="AUGCLIP_CPU_MATMUL=onednn.*use auto or blas"):
        cpu_matmul.resolve_cpu_matmul("onednn", torch.device("cpu"))
    with pytest.raises(ConfigError, match="must be one of auto, onednn, blas"):
        cpu_matmul.resolve_cpu_matmul("mkl", torch.device("cpu"))


@pytest.mark.slow
@needs_onednn
def test_encoder_embeddings_agree_across_kernels_and_say_which_made_them(monkeypatch):
    from PIL import Image

    modes: list[cpu_matmul.OneDnnMatmuls] = []

    class Recorded(cpu_matmul.OneDnnMatmuls):
        def __init__(self) -> None:
            super().__init__()
            modes.append(self)

    monkeypatch.setattr(cpu_matmul, "OneDnnMatmuls", Recorded)

    image = Image.fromarray(np.random.default_rng(15).integers(0, 255, (40, 50, 3), dtype=np.uint8))
    fast = ClipEncoder("random:tiny", device="cpu", cpu_matmul="onednn")
    blas = ClipEncoder("random:tiny", device="cpu", cpu_matmul="blas")
    assert fast.info().matmul == "onednn" and blas.info().matmul == "blas"
    texts = ["a red kite", "two small boats on a lake at dusk"]
    np.testing.assert_allclose(fast.encode_texts(texts), blas.encode_texts(texts), atol=2e-6)
    np.testing.assert_allclose(fast.encode_images([image]), blas.encode_images([image]), atol=2e-6)
    assert modes and sum(mode.taken for mode in modes) > 0  # the oneDNN encoder's passes went through the mode
