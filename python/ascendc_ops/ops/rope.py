"""RoPE ops: thin wrappers and autograd for

- ``torch.ops.custom.rope_customer(x, cos, sin)``: the seed tutorial's op, x ``[B, H, L, D]``,
  cos/sin ``[L, D]``; pair (2i, 2i+1) rotates by cos[2i], sin[2i] (the tutorial's tables repeat each
  value for its pair; the odd lanes are not read);
- ``torch.ops.custom.rotary_mul(x, r1, r2, rotary_mode='half')``: torch_npu's ``npu_rotary_mul``,
  ``y = x * r1 + rotate(x) * r2`` with cos/sin broadcast over x's layout (BNSD, BSND, SBND, TND).

Schemas come from op_proto/rotary_mul*.json and rope_customer*.json; the argument rules and the
output shapes (also for FakeTensor / torch.compile, through a C++ Meta kernel) from
tiling/rope_problem.h.

Backward: dx comes from the ``*_grad`` kernels; dr1/dr2, when asked for, are the broadcast-summed
products ``dy * x`` and ``dy * rotate(x)``, accumulated in fp32 (rope_customer: summed per pair into
its even lane, the lane the forward reads).
"""

from __future__ import annotations

import torch


def rotary_mul(x: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, rotary_mode: str = "half") -> torch.Tensor:
    """npu_rotary_mul: ``x * r1 + rotate(x) * r2``; rotate is rotate_half ('half') or the pair rotation."""
    return torch.ops.custom.rotary_mul(x, r1, r2, rotary_mode)


def rope_customer(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The tutorial's RoPE: x [B, H, L, D], cos/sin [L, D]; pair (2i, 2i+1) reads cos[2i] and sin[2i] for
    both lanes, as the tutorial's kernel does (its tables repeat each value for its pair)."""
    return torch.ops.custom.rope_customer(x, cos, sin)


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
