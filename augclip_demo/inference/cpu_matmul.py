"""Which kernels run the float32 matrix products of the CLIP towers on a CPU.

torch's x86 wheels send a float32 ``linear`` to MKL's sgemm. On one 2-core AMD EPYC machine (the
size of a free CPU Space) sgemm ran a ViT-B/16 layer's products at about 100 GFLOP/s, while the
oneDNN kernels shipped in the same wheel ran them at 160 to 200; on another, with torch 2.14.1,
both ran at ~145 and the whole image tower was 5 % slower with oneDNN (docs/performance.md, "CPU
matrix kernels"). So ``auto`` keeps torch's own kernels, and ``onednn`` is there for machines where
``benchmarks/matmul_bench.py`` shows a gain. It routes the linear layers and the packed
self-attention projections of a forward pass (and the input gradients of a relevancy pass) through
oneDNN; everything else runs as before. Both are full float32: the
embeddings differ from the BLAS ones at float rounding (about 1e-6 relative), and each kernel is
deterministic on its own, so every store or cache of embeddings records which one made it.

A row of a product depends on that row of the input alone in both kernels once the product has
more than a few rows (the CPU passes here have 197 rows per image and at least 64 per text pass:
8 texts of 8 or more tokens), which keeps a text's embedding independent of the other texts of its
pass. oneDNN's float32 products also give the same bits at any thread count, where MKL's sgemm does not
for some small ones (5, 7 or 9 rows: SAM's mask decoder has 7 tokens), so :func:`thread_independent_matmuls`
runs the region models' passes through oneDNN on every CPU path: a Ray actor (one thread) then finds
the same masks as a local run. Under CPU autocast (``AUGCLIP_PRECISION`` bf16 / fp16) torch's own kernels run, so the
precision asked for is the one used.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import platform
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..config import CPU_MATMULS
from ..errors import ConfigError


@functools.cache
def onednn_available() -> bool:
    """Whether this torch build has oneDNN and its plain float32 linear kernel, on an x86 CPU."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        op = torch.ops.mkldnn._linear_pointwise
        x, w = torch.ones(16, 8), torch.ones(4, 8)
        return bool(torch.equal(op(x, w, None, "none", [], ""), torch.full((16, 4), 8.0)))
    except (AttributeError, RuntimeError):
        return False


def resolve_cpu_matmul(choice: str, device: torch.device, amp_dtype: torch.dtype | None = None) -> str:
    """``onednn`` or ``blas`` for a model on ``device`` run with autocast to ``amp_dtype`` (None: fp32).

    ``auto`` and ``blas``: torch's own kernels. ``onednn``: oneDNN on an x86 CPU; a GPU always keeps
    its own kernels (``blas``), and so does autocast (the oneDNN path here is float32 only); an
    explicit ``onednn`` where this torch has none is a configuration error.
    """
    if choice not in CPU_MATMULS:
        raise ConfigError(f"AUGCLIP_CPU_MATMUL must be one of {', '.join(CPU_MATMULS)}, got {choice!r}")
    if device.type != "cpu" or choice != "onednn" or amp_dtype is not None:
        return "blas"
    if not onednn_available():
        raise ConfigError("AUGCLIP_CPU_MATMUL=onednn, but this torch build has no oneDNN float32 linear kernel on "
                          f"this {platform.machine()} CPU; use auto or blas")
    return "onednn"


@contextlib.contextmanager
def cpu_matmul(kind: str) -> Iterator[None]:
    """Run the forward passes of the block with ``kind``'s kernels (``blas``: unchanged)."""
    if kind != "onednn":
        yield
        return
    with OneDnnMatmuls():
        yield


def thread_independent_matmuls(device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """oneDNN's kernels for a pass on a CPU with oneDNN (their bits do not depend on the thread count);
    nothing changes on a GPU or where this torch has no oneDNN."""
    if device.type == "cpu" and onednn_available():
        return OneDnnMatmuls()
    return contextlib.nullcontext()


class OneDnnMatmuls(TorchFunctionMode):
    """Routes float32 CPU ``F.linear`` and packed self-attention through oneDNN; anything else unchanged.

    ``F.multi_head_attention_forward`` is taken over only in the case a ViT or a CLIP text tower
    uses (one input for query, key and value, packed projection, no extra bias or padding mask,
    no weights returned); it then does what torch's own version does for that case (packed input
    projection, ``scaled_dot_product_attention``, output projection) with the projections here.
    ``taken`` counts the products run through oneDNN.
    """

    def __init__(self) -> None:
        super().__init__()
        self.taken = 0

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func is F.linear:
            out = _linear(*args, **kwargs)
            if out is not None:
                self.taken += 1
                return out
        elif func is F.multi_head_attention_forward:
            result = _self_attention(args, kwargs)
            if result is not None:
                self.taken += 2
                return result
        return func(*args, **kwargs)


def _plain(*tensors: torch.Tensor | None) -> bool:
    """Plain (not subclassed) float32 CPU tensors, or None."""
    return all(t is None or (type(t) in (torch.Tensor, torch.nn.Parameter) and t.dtype == torch.float32
                             and t.device.type == "cpu" and t.layout == torch.strided) for t in tensors)


def _linear(x: Any, weight: Any, bias: Any = None) -> torch.Tensor | None:
    """``F.linear`` through oneDNN; None where the case is not the plain one (the caller runs torch's)."""
    if not (isinstance(x, torch.Tensor) and isinstance(weight, torch.Tensor) and _plain(x, weight, bias)):
        return None
    if torch.is_autocast_enabled("cpu"):
        return None  # autocast decides the dtype of a linear: torch's path honours it
    if weight.dim() != 2 or x.dim() < 1 or x.shape[-1] != weight.shape[1] or x.numel() == 0:
        return None
    if weight.requires_grad or (bias is not None and (bias.requires_grad or bias.dim() != 1)):
        return None  # weights that learn: torch's own path computes their gradients
    rows = x.reshape(-1, x.shape[-1])
    if not rows.is_contiguous():
        rows = rows.contiguous()
    if torch.is_grad_enabled() and x.requires_grad:
        out = _OneDnnLinear.apply(rows, weight, bias)
    else:
        out = _onednn_linear(rows, weight, bias)
    return out.reshape(*x.shape[:-1], weight.shape[0])


def _onednn_linear(rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(rows, weight, bias, "none", [], "")


class _OneDnnLinear(torch.autograd.Function):
    """y = x W^T + b with the input's gradient g W computed by oneDNN too (W and b stay frozen)."""

    @staticmethod
    def forward(ctx: Any, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(weight)
        return _onednn_linear(rows, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (weight,) = ctx.saved_tensors
        return _onednn_linear(grad.contiguous(), weight.t(), None), None, None


_MHA_SIGNATURE = inspect.signature(F.multi_head_attention_forward)


def _self_attention(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[torch.Tensor, None] | None:
    """torch's multi-head attention for the self-attention case of ViT / CLIP towers; None otherwise."""
    try:
        bound = _MHA_SIGNATURE.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    a = bound.arguments
    x, mask = a["query"], a["attn_mask"]
    if not (isinstance(x, torch.Tensor) and x is a["key"] and x is a["value"] and x.dim() == 3):
        return None
    if a["use_separate_proj_weight"] or a["bias_k"] is not None or a["bias_v"] is not None or a["add_zero_attn"]:
        return None
    if a["key_padding_mask"] is not None or a["need_weights"] or a["static_k"] is not None or a["static_v"] is not None:
        return None
    if a["training"] and a["dropout_p"] > 0:
        return None
    if not _plain(x, a["in_proj_weight"], a["in_proj_bias"], a["out_proj_weight"], a["out_proj_bias"]):
        return None
    length, batch, embed = x.shape
    heads = int(a["num_heads"])
    if embed != a["embed_dim_to_check"] or embed % heads or a["in_proj_weight"] is None:
        return None
    causal = bool(a["is_causal"])
    if mask is not None and tuple(mask.shape) not in ((length, length), (batch * heads, length, length)):
        return None  # torch's own version checks the shape and says what is wrong
    if causal:
        if mask is None:
            return None  # torch's own version asks for the mask the hint describes
        mask = None  # torch's own version drops the mask for the hint when no weights are returned
    elif mask is not None:
        if mask.dtype == torch.bool:  # True = may not attend, as F.multi_head_attention_forward reads it
            mask = torch.zeros(mask.shape, dtype=x.dtype).masked_fill_(mask, float("-inf"))
        elif not mask.is_floating_point():
            return None
        if mask.dim() == 3:
            mask = mask.view(batch, heads, length, length)
    head_dim = embed // heads
    qkv = _linear(x, a["in_proj_weight"], a["in_proj_bias"])
    if qkv is None:
        return None
    q, k, v = qkv.view(length, batch, 3, heads, head_dim).permute(2, 1, 3, 0, 4)  # each (batch, heads, L, d)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    out = out.permute(2, 0, 1, 3).reshape(length * batch, embed)
    out = _linear(out, a["out_proj_weight"], a["out_proj_bias"])
    assert out is not None
    return out.view(length, batch, embed), None
