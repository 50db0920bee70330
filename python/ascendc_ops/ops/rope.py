"""RoPE ops: thin wrappers and autograd for

- ``torch.ops.custom.rope_customer(x, cos, sin)``: the seed tutorial's op, x ``[B, H, L, D]``,
  cos/sin ``[L, D]``; pair (2i, 2i+1) rotates by cos[2i], sin[2i] (the tutorial's tables repeat each
  value for its pair; the odd lanes are not read);
- ``torch.ops.custom.rotary_mul(x, r1, r2, rotary_mode='half')``: torch_npu's ``npu_rotary_mul``,
  ``y = x * r1 + rotate(x) * r2`` with cos/sin broadcast over x's layout (BNSD, BSND, SBND, TND).

- ``torch.ops.custom.apply_rotary_pos_emb(query, key, cos, sin, layout='BSND', rotary_mode='half')``:
  torch_npu's ``npu_apply_rotary_pos_emb``, query and key rotated in place by one kernel launch (layouts
  BSND, SBND, BNSD, TND; GQA head counts; partial rotary where cos/sin's last dim is below head_dim).
  ``apply_rotary_pos_emb_`` is that in-place call; ``apply_rotary_pos_emb`` its differentiable functional
  form (new tensors; the backward is ``apply_rotary_pos_emb_grad``, the same kernel in place on the grads).

Schemas come from op_proto/rope/rotary_mul*.json and rope_customer*.json; the argument rules and the
output shapes (also for FakeTensor / torch.compile, through a C++ Meta kernel) from
tiling/rope_problem.h.

Backward: dx comes from the ``*_grad`` kernels; dr1/dr2, when asked for, are the broadcast-summed
products ``dy * x`` and ``dy * rotate(x)``, accumulated in fp32 (rope_customer: summed per pair into
its even lane, the lane the forward reads).
"""

from __future__ import annotations

import torch

from ..op_proto import load_all

_PROTOS = load_all()


def _default(op: str, attr: str):
    """An attr's default as op_proto/rope/<op>.json declares it."""
    return next(a.default for a in _PROTOS[op].attrs if a.name == attr)


ROTARY_MODE = _default("rotary_mul", "rotary_mode")
LAYOUT, APPLY_MODE = _default("apply_rotary_pos_emb", "layout"), _default("apply_rotary_pos_emb", "rotary_mode")


def rotary_mul(x: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = ROTARY_MODE) -> torch.Tensor:
    """npu_rotary_mul: ``x * r1 + rotate(x) * r2``; rotate is rotate_half ('half') or the pair rotation."""
    return torch.ops.custom.rotary_mul(x, r1, r2, rotary_mode)


def rope_customer(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The tutorial's RoPE: x [B, H, L, D], cos/sin [L, D]; pair (2i, 2i+1) reads cos[2i] and sin[2i] for
    both lanes, as the tutorial's kernel does (its tables repeat each value for its pair)."""
    return torch.ops.custom.rope_customer(x, cos, sin)


def apply_rotary_pos_emb_(query, key, cos, sin, layout: str = LAYOUT, rotary_mode: str = APPLY_MODE):
    """npu_apply_rotary_pos_emb: rotates query and key in place, in one launch; returns (query, key). Not
    differentiable (the op writes its inputs): use ``apply_rotary_pos_emb`` where grads are needed."""
    torch.ops.custom.apply_rotary_pos_emb(query, key, cos, sin, layout, rotary_mode)
    return query, key


def apply_rotary_pos_emb(query, key, cos, sin, layout: str = LAYOUT, rotary_mode: str = APPLY_MODE):
    """The functional, differentiable form: new (query, key) rotated by the fused kernel (on copies)."""
    return _ApplyRope.apply(query, key, cos, sin, layout, rotary_mode)


class _ApplyRope(torch.autograd.Function):
    """Forward and backward are the in-place op on fresh copies: the rotation's transpose (P(sin) with
    the sign flipped, rope.cpp) comes from apply_rotary_pos_emb_grad; dcos/dsin, when asked for, are the
    broadcast-summed ``dy * x`` and ``dy * rotate(x)`` over query and key, accumulated in fp32."""

    @staticmethod
    def forward(ctx, query, key, cos, sin, layout, mode):
        q = query.detach().clone(memory_format=torch.contiguous_format)
        k = key.detach().clone(memory_format=torch.contiguous_format)
        torch.ops.custom.apply_rotary_pos_emb(q, k, cos.detach(), sin.detach(), layout, mode)
        ctx.layout, ctx.mode = layout, mode
        ctx.like = ((query.shape, query.dtype), (key.shape, key.dtype))
        tables = ctx.needs_input_grad[2] or ctx.needs_input_grad[3]
        ctx.save_for_backward(query if tables else None, key if tables else None, cos, sin)
        return q, k

    @staticmethod
    def backward(ctx, dq, dk):
        query, key, cos, sin = ctx.saved_tensors
        q_like, k_like = ctx.like
        # an unused output's grad is None: zero, which rotates to zero
        dq = torch.zeros(q_like[0], dtype=q_like[1], device=cos.device) if dq is None else dq
        dk = torch.zeros(k_like[0], dtype=k_like[1], device=cos.device) if dk is None else dk
        dcos = dsin = None
        if ctx.needs_input_grad[2] or ctx.needs_input_grad[3]:
            dcos, dsin = _rope_table_grads(ctx, (dq, dk), (query, key), cos, sin)
        dq = dq.clone(memory_format=torch.contiguous_format)
        dk = dk.clone(memory_format=torch.contiguous_format)
        torch.ops.custom.apply_rotary_pos_emb_grad(dq, dk, cos.detach(), sin.detach(), ctx.layout, ctx.mode)
        return dq, dk, dcos, dsin, None, None


def _rope_table_grads(ctx, grads, inputs, cos, sin):
    """dcos = sum(dy * x), dsin = sum(dy * rotate(x)) over the rotated part of query and key, summed to
    cos's shape; query and key differ in N, which cos/sin broadcast along (N = 1)."""
    r = cos.shape[-1]
    dcos = torch.zeros(cos.shape, dtype=torch.float32, device=cos.device)
    dsin = torch.zeros_like(dcos)
    for dy, x in zip(grads, inputs, strict=True):
        if dy is None:
            continue
        dy, x = dy[..., :r].float(), x[..., :r].float()
        dcos += (dy * x).sum_to_size(cos.shape)
        dsin += (dy * rotate(x, ctx.mode)).sum_to_size(sin.shape)
    return (dcos.to(cos.dtype) if ctx.needs_input_grad[2] else None), (
        dsin.to(sin.dtype) if ctx.needs_input_grad[3] else None
    )


def rotate(x: torch.Tensor, mode: str) -> torch.Tensor:
    """rotate(x) of the forward formula, in PyTorch (used for dr2)."""
    if mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


# ---- autograd ----
def _setup_context(ctx, inputs, output):
    x, r1, r2 = inputs[:3]
    ctx.mode = inputs[3] if len(inputs) > 3 else "interleave"
    ctx.save_for_backward(x if (ctx.needs_input_grad[1] or ctx.needs_input_grad[2]) else None, r1, r2)


def _table_grads(ctx, dy, x, r1, r2, even_lanes: bool = False):
    """dr1 = sum(dy * x), dr2 = sum(dy * rotate(x)) over the dims r1/r2 broadcast along, in fp32;
    even_lanes (rope_customer): both lanes of pair i read the tables at lane 2i, so the pair's grads
    gather there and the odd lanes get 0."""

    def finish(g, like):
        g = g.sum_to_size(like.shape)
        if even_lanes:
            pairs = g.unflatten(-1, (-1, 2))
            g = torch.stack((pairs.sum(-1), torch.zeros_like(pairs[..., 0])), -1).flatten(-2)
        return g.to(like.dtype)

    dr1 = dr2 = None
    if ctx.needs_input_grad[1]:
        dr1 = finish(dy.float() * x.float(), r1)
    if ctx.needs_input_grad[2]:
        dr2 = finish(dy.float() * rotate(x.float(), ctx.mode), r2)
    return dr1, dr2


def _rotary_mul_backward(ctx, dy):
    x, r1, r2 = ctx.saved_tensors
    dx = torch.ops.custom.rotary_mul_grad(dy, r1, r2, ctx.mode) if ctx.needs_input_grad[0] else None
    return (dx, *_table_grads(ctx, dy, x, r1, r2), None)


def _rope_customer_backward(ctx, dy):
    x, cos, sin = ctx.saved_tensors
    dx = torch.ops.custom.rope_customer_grad(dy, cos, sin) if ctx.needs_input_grad[0] else None
    return (dx, *_table_grads(ctx, dy, x, cos, sin, even_lanes=True))


torch.library.register_autograd("custom::rotary_mul", _rotary_mul_backward, setup_context=_setup_context)
torch.library.register_autograd("custom::rope_customer", _rope_customer_backward, setup_context=_setup_context)
