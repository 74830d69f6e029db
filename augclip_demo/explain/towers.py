"""The image towers relevancy maps support, and how their attention probabilities are recorded.

Two families of open_clip ViT towers:

* open_clip's own ``VisionTransformer`` (every ``ViT-*`` arch, CLIPA, CoCa...). Its blocks call
  ``nn.MultiheadAttention`` with ``need_weights=False`` (fused kernels, no probabilities) or
  open_clip's ``Attention`` with ``scaled_dot_product_attention``. During a pass the ``forward`` of
  each attention module is shadowed (an instance attribute) by an explicit computation of the same
  function that keeps the probabilities in the autograd graph.
* timm trunks behind open_clip's ``TimmModel`` that are ViTs: timm's ``VisionTransformer`` and
  ``Eva`` (EVA01/02, MobileCLIP-B, SigLIP, PE-Core...) whose attention modules (``Attention``,
  ``AttentionRope``, ``EvaAttention``) have an explicit path ``softmax -> attn_drop -> @ v``
  behind their ``fused_attn`` flag. During a pass the flag is switched off and a forward hook on
  ``attn_drop`` records its output, the probabilities used by ``@ v``. timm's latent attention
  pool (``global_pool="map"``) is shadowed by an explicit copy of its forward.

Afterwards the shadowed forwards, the flags, the hooks, every module's training mode and gradient
checkpointing are restored exactly, also when the pass raises.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ExplanationUnavailableError

_MISSING = object()
#: timm attention classes whose explicit path is softmax -> attn_drop -> @ v (checked against timm 1.0).
_TIMM_ATTENTIONS = ("Attention", "AttentionRope", "EvaAttention")


@dataclass
class Tower:
    """What a relevancy pass needs to know about an image tower."""

    family: str  # "open_clip" | "timm"
    visual: nn.Module  # model.visual: its modules' modes are saved and restored
    attentions: list[nn.Module]  # the self-attention module of every block, in order
    pooler: nn.Module | None  # an attention pool after the blocks (CoCa, timm "map"), else None
    grid: tuple[int, int]  # patch grid (rows, columns)
    prefix: int  # tokens before the patches (class token, register tokens)
    readout: str  # "token": class-token row; "avg" / "avg_all": mean of patch / all rows; "pool": via the pooler
    pool_query: str  # for "pool": "first" query, "mean" of all, or "mean_rest" (open_clip avg over queries 1+)
    pool_sees_prefix: bool  # the pooler attends to the prefix tokens too
    input_size: tuple[int, int]  # (height, width) of the model input
    heads: int

    @property
    def tokens(self) -> int:
        return self.prefix + self.grid[0] * self.grid[1]

    @property
    def readout_name(self) -> str:
        if self.readout == "token":
            return "class token"
        if self.readout == "avg":
            return "mean of the patch tokens (average pooling)"
        if self.readout == "avg_all":
            return "mean of all tokens (average pooling)"
        query = {"first": "query 0", "mean": "mean of its queries", "mean_rest": "mean of queries 1+"}[self.pool_query]
        return f"attention pooler, {query}"


class Recorder:
    """Collects the attention probabilities of one forward pass."""

    def __init__(self) -> None:
        self.block_probs: list[torch.Tensor] = []
        self.pool_probs: torch.Tensor | None = None

    def set_pool(self, probs: torch.Tensor) -> None:
        self.pool_probs = probs


def tower_of(model: nn.Module, spec: str) -> Tower:
    """The :class:`Tower` of ``model.visual``, or :class:`ExplanationUnavailableError` saying why not."""
    from open_clip.transformer import VisionTransformer

    visual = getattr(model, "visual", None)
    if isinstance(visual, VisionTransformer):
        return _open_clip_tower(visual, spec)
    trunk = getattr(visual, "trunk", None)
    if trunk is not None and type(trunk).__name__ in ("VisionTransformer", "Eva"):
        return _timm_tower(visual, trunk, spec)
    if trunk is not None:
        kind = f"a timm {type(trunk).__name__} trunk"
        reason = "not a plain ViT (timm VisionTransformer / Eva) whose attention this tool can record"
    else:
        kind = type(visual).__name__
        reason = ("a convolutional ResNet has no attention maps" if kind == "ModifiedResNet"
                  else "not a ViT tower this tool can instrument")
    raise ExplanationUnavailableError(
        f"relevancy maps need a ViT image tower (open_clip's VisionTransformer, or timm's VisionTransformer / Eva); "
        f"{spec} uses {kind} ({reason}). Use a ViT backbone such as ViT-B-16/openai (the paper's model); the "
        "hyperplane views and rankings work with any backbone.")


def _open_clip_tower(visual: nn.Module, spec: str) -> Tower:
    if visual.attn_pool is not None and getattr(visual, "attn_pool_contrastive", None) is not None:
        # open_clip marks its 'parallel' / 'cascade' poolers as untested work in progress (no config uses them).
        raise ExplanationUnavailableError(f"{spec}: the '{visual.attn_pool_type}' attention pooler is not supported")
    if visual.pool_type == "none":
        raise ExplanationUnavailableError(f"{spec}: pool_type 'none' returns every token, not one embedding to explain")
    blocks = list(visual.transformer.resblocks)
    if visual.attn_pool is None:
        readout, query = ("token" if visual.pool_type == "tok" else "avg"), "first"
    else:  # CoCa: pooled = global_pool(ln_post(attn_pool(x))) over the pooler's query outputs
        readout, query = "pool", ("first" if visual.pool_type == "tok" else "mean_rest")
    return Tower(
        family="open_clip", visual=visual, attentions=[block.attn for block in blocks],
        pooler=visual.attn_pool.attn if visual.attn_pool is not None else None,
        grid=(int(visual.grid_size[0]), int(visual.grid_size[1])), prefix=1, readout=readout, pool_query=query,
        pool_sees_prefix=True, input_size=(int(visual.image_size[0]), int(visual.image_size[1])),
        heads=int(getattr(blocks[0].attn, "num_heads", 8)),
    )


def _timm_tower(visual: nn.Module, trunk: nn.Module, spec: str) -> Tower:
    head_pool = getattr(visual, "head", None)
    if head_pool is not None and hasattr(head_pool, "pool"):
        raise ExplanationUnavailableError(f"{spec}: open_clip's attention-pool head on a timm trunk is not supported")
    attentions = []
    for i, block in enumerate(trunk.blocks):
        attn = getattr(block, "attn", None)
        if type(attn).__name__ not in _TIMM_ATTENTIONS or not hasattr(attn, "fused_attn")\
                or not isinstance(getattr(attn, "attn_drop", None), nn.Module):
            raise ExplanationUnavailableError(
                f"{spec}: block {i} of the timm trunk uses {type(attn).__name__ if attn is not None else type(block).__name__}"
                f", whose attention probabilities this tool cannot record (supported: {', '.join(_TIMM_ATTENTIONS)})")
        attentions.append(attn)
    prefix = int(getattr(trunk, "num_prefix_tokens", 0))
    pooler = getattr(trunk, "attn_pool", None)
    pool = getattr(trunk, "global_pool", "")
    query = "first"
    if pooler is not None:
        if type(pooler).__name__ != "AttentionPoolLatent":
            raise ExplanationUnavailableError(f"{spec}: the timm pool {type(pooler).__name__} is not supported")
        readout = "pool"
        query = "mean" if pooler.pool == "avg" else "first"
        if pooler.pool not in ("token", "avg", "") or (pooler.pool == "" and pooler.latent_len != 1):
            raise ExplanationUnavailableError(f"{spec}: the latent pool returns several tokens, not one embedding")
    elif pool == "token" and prefix >= 1:
        readout = "token"
    elif pool == "avg":
        readout = "avg_all" if getattr(trunk, "pool_include_prefix", False) else "avg"
    else:
        raise ExplanationUnavailableError(
            f"{spec}: the timm trunk pools with {pool!r}; relevancy supports class-token, average and latent "
            "attention pooling")
    size = tuple(int(s) for s in getattr(visual, "image_size", trunk.patch_embed.img_size))
    if getattr(trunk, "dynamic_img_size", False):  # the grid follows the input, which the preprocessing fixes
        patch = tuple(int(p) for p in trunk.patch_embed.patch_size)
        grid = (size[0] // patch[0], size[1] // patch[1])
    else:
        grid = tuple(int(s) for s in trunk.patch_embed.grid_size)
    return Tower(
        family="timm", visual=visual, attentions=attentions, pooler=pooler, grid=(grid[0], grid[1]), prefix=prefix,
        readout=readout, pool_query=query, pool_sees_prefix=getattr(trunk, "pool_include_prefix", True),
        input_size=(size[0], size[1]), heads=int(attentions[0].num_heads),
    )


@contextlib.contextmanager
def instrumented(tower: Tower) -> Iterator[Recorder]:
    """Record the attention probabilities of the next forward passes; restore the model afterwards."""
    recorder = Recorder()
    modes = [(module, module.training) for module in tower.visual.modules()]
    checkpointing = [(module, module.grad_checkpointing) for module in tower.visual.modules()
                     if isinstance(getattr(module, "grad_checkpointing", None), bool)]
    undo: list[Callable[[], None]] = []
    try:
        for attn in tower.attentions:
            undo.append(_record_attention(attn, recorder.block_probs.append))
        if tower.pooler is not None:
            undo.append(_record_attention(tower.pooler, recorder.set_pool))
        for module, _ in checkpointing:
            module.grad_checkpointing = False  # recomputation would bypass the recorded tensors
        tower.visual.eval()  # no dropout, no patch dropout: the pass explains the deployed function
        yield recorder
    finally:
        for restore in reversed(undo):
            restore()
        for module, mode in modes:
            module.training = mode
        for module, flag in checkpointing:
            module.grad_checkpointing = flag


def readout_row(tower: Tower, relevance: torch.Tensor, pool_cam: torch.Tensor | None) -> torch.Tensor:
    """Relevance of every token for the pooled embedding, shape (N, L)."""
    if tower.readout == "token":
        return relevance[:, 0, :]
    if tower.readout == "avg":
        return relevance[:, tower.prefix:, :].mean(dim=1)
    if tower.readout == "avg_all":  # timm's average pool with pool_include_prefix: every token's row
        return relevance.mean(dim=1)
    assert pool_cam is not None  # (N, queries, L or L - prefix)
    if tower.pool_query == "first":
        query_row = pool_cam[:, 0, :]
    elif tower.pool_query == "mean_rest":
        query_row = pool_cam[:, 1:, :].mean(dim=1)
    else:
        query_row = pool_cam.mean(dim=1)
    if not tower.pool_sees_prefix:  # the pooler attended to the patches only
        query_row = F.pad(query_row, (tower.prefix, 0))
    return torch.bmm(query_row.unsqueeze(1), relevance)[:, 0, :]


# ---------------------------------------------------------------------------------------- recording
def _record_attention(module: nn.Module, sink: Callable[[torch.Tensor], Any]) -> Callable[[], None]:
    """Start recording ``module``'s probabilities into ``sink``; returns the function that undoes it."""
    from open_clip.transformer import Attention

    if isinstance(module, nn.MultiheadAttention):
        return _shadow_forward(module, functools.partial(_explicit_multihead_attention, module, sink))
    if isinstance(module, Attention):
        return _shadow_forward(module, functools.partial(_explicit_open_clip_attention, module, sink))
    if type(module).__name__ == "AttentionPoolLatent":
        return _shadow_forward(module, functools.partial(_explicit_attention_pool_latent, module, sink))
    if type(module).__name__ in _TIMM_ATTENTIONS:
        previous = module.fused_attn
        module.fused_attn = False  # timm's explicit path: softmax -> attn_drop -> @ v
        handle = module.attn_drop.register_forward_hook(lambda _module, _args, output: sink(output))

        def restore() -> None:
            handle.remove()
            module.fused_attn = previous

        return restore
    raise ExplanationUnavailableError(f"cannot record the attention probabilities of {type(module).__name__}")


def _shadow_forward(module: nn.Module, replacement: Callable[..., Any]) -> Callable[[], None]:
    previous = module.__dict__.get("forward", _MISSING)
    module.forward = replacement  # an instance attribute shadows the class's forward for this pass only

    def restore() -> None:
        if previous is _MISSING:
            del module.forward
        else:
            module.forward = previous

    return restore


def _no_mask(*masks: Any) -> None:
    if any(mask is not None and mask is not False for mask in masks):
        raise ExplanationUnavailableError("the image tower called attention with a mask; relevancy supports the "
                                          "unmasked attention of ViT image towers")


def _explicit_multihead_attention(
    mha: nn.MultiheadAttention,
    sink: Callable[[torch.Tensor], Any],
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    need_weights: bool = True,
    attn_mask: torch.Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``nn.MultiheadAttention.forward`` (eval, no masks) written out so the probabilities stay in the graph."""
    _no_mask(attn_mask, key_padding_mask, is_causal)
    if mha.bias_k is not None or mha.add_zero_attn:
        raise ExplanationUnavailableError("nn.MultiheadAttention with add_bias_kv / add_zero_attn is not supported")
    if not mha.batch_first:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    n, len_q, embed = query.shape
    len_k = key.shape[1]
    heads, head_dim = mha.num_heads, mha.head_dim
    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    b_q = b_k = b_v = None
    if mha.in_proj_bias is not None:
        b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    q = F.linear(query, w_q, b_q).reshape(n, len_q, heads, head_dim).transpose(1, 2)
    k = F.linear(key, w_k, b_k).reshape(n, len_k, heads, head_dim).transpose(1, 2)
    v = F.linear(value, w_v, b_v).reshape(n, len_k, heads, head_dim).transpose(1, 2)
    probs = torch.matmul(q * head_dim ** -0.5, k.transpose(-2, -1)).softmax(dim=-1)
    sink(probs)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(n, len_q, embed)
    out = F.linear(out, mha.out_proj.weight, mha.out_proj.bias)
    if not mha.batch_first:
        out = out.transpose(0, 1)
    weights = None
    if need_weights:
        weights = probs.mean(dim=1) if average_attn_weights else probs
    return out, weights


def _explicit_open_clip_attention(
    attn: nn.Module, sink: Callable[[torch.Tensor], Any], x: torch.Tensor, attn_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """open_clip's ``Attention.forward`` (the scaled-dot-product path, eval) with explicit probabilities."""
    _no_mask(attn_mask)
    if attn.logit_scale is not None:
        raise ExplanationUnavailableError("open_clip's scaled-cosine attention (scaled_cosine_attn) is not supported")
    n, length, channels = x.shape
    q, k, v = F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, dim=-1)
    q = q.reshape(n, length, attn.num_heads, -1).transpose(1, 2)
    k = k.reshape(n, length, attn.num_heads, -1).transpose(1, 2)
    v = v.reshape(n, length, attn.num_heads, -1).transpose(1, 2)
    q, k = attn.ln_q(q), attn.ln_k(k)
    probs = torch.matmul(q * attn.scale, k.transpose(-2, -1)).softmax(dim=-1)
    sink(probs)
    out = torch.matmul(probs, v)
    if attn.head_scale is not None:
        out = out * attn.head_scale
    out = out.transpose(1, 2).reshape(n, length, channels)
    out = attn.ln_inner(out)
    out = attn.out_proj(out)
    return attn.out_drop(out)


def _explicit_attention_pool_latent(
    pool: nn.Module, sink: Callable[[torch.Tensor], Any], x: torch.Tensor, attn_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """timm's ``AttentionPoolLatent.forward`` (eval, no mask) with explicit probabilities."""
    _no_mask(attn_mask)
    batch, length, channels = x.shape
    if pool.pos_embed is not None:
        x = x + pool.pos_embed.unsqueeze(0).to(x.dtype)
    q = pool.q(pool.latent.expand(batch, -1, -1))
    q = q.reshape(batch, pool.latent_len, pool.num_heads, pool.head_dim).transpose(1, 2)
    k, v = pool.kv(x).reshape(batch, length, 2, pool.num_heads, pool.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
    q, k = pool.q_norm(q), pool.k_norm(k)
    probs = torch.matmul(q * pool.scale, k.transpose(-2, -1)).softmax(dim=-1)
    sink(probs)
    out = torch.matmul(probs, v).transpose(1, 2).reshape(batch, pool.latent_len, channels)
    out = pool.proj_drop(pool.proj(out))
    if pool.mlp is not None:
        out = out + pool.mlp(pool.norm(out))
    if pool.pool == "token":
        out = out[:, 0]
    elif pool.pool == "avg":
        out = out.mean(1)
    return out
