"""torch_npu's RoPE names on our rope family: npu_rotary_mul (and its backward), npu_apply_rotary_pos_emb."""

from __future__ import annotations

import torch

from ..ops.rope import apply_rotary_pos_emb_ as _apply_rotary_pos_emb_, rotary_mul as _rotary_mul
from .errors import fail


def npu_rotary_mul(input, r1, r2, rotary_mode="half", rotate=None):
    """``input * r1 + rotate(input) * r2``; r1/r2 of another dtype are cast to input's dtype as torch_npu does."""
    if rotate is not None:
        fail(NotImplementedError, "npu_rotary_mul", "the explicit rotate matrix is not supported; pass rotate=None")
    if rotary_mode not in ("half", "interleave"):  # torch_npu's message, which its callers match
        fail(
            ValueError,
            "npu_rotary_mul",
            f"The rotary_mode of npu_rotary_mul should be half or interleave, but got {rotary_mode!r}",
        )
    if torch.is_tensor(input) and torch.is_tensor(r1) and r1.dtype != input.dtype and r1.dtype.is_floating_point:
        r1, r2 = r1.to(input.dtype), r2.to(input.dtype)
    return _rotary_mul(input, r1, r2, rotary_mode)


def npu_rotary_mul_backward(grad, input, r1, r2, rotary_mode="half"):
    """-> (dx, dr1, dr2): the backward kernels of rotary_mul, through its autograd."""
    with torch.enable_grad():
        x, c, s = (t.detach().requires_grad_() for t in (input, r1, r2))
        y = npu_rotary_mul(x, c, s, rotary_mode)
        return torch.autograd.grad(y, (x, c, s), grad)


def npu_apply_rotary_pos_emb(query, key, cos, sin, layout="BSND", rotary_mode="half"):
    """-> (query, key), both rotated in place by one launch (torch_npu's inference op). Not differentiable
    in place: training code takes ``ascendc_ops.apply_rotary_pos_emb``, the functional form."""
    return _apply_rotary_pos_emb_(query, key, cos, sin, layout, rotary_mode)
