"""RMSNorm ops: thin wrappers, fake kernels and autograd for

- ``torch.ops.custom.rms_norm(x, gamma, epsilon=1e-6) -> (y, rstd)``: torch_npu's ``npu_rms_norm``.
  gamma's dims are x's trailing dims (the normalized dims, N elements); ``rstd = 1/sqrt(mean(x^2) + eps)``
  in float32 with keepdim shape (x's shape, normalized dims set to 1); ``y = (x * rstd) * gamma``
  computed in fp32 and rounded once to x's dtype. (x, gamma) dtypes: (fp16, fp32), (bf16, fp32),
  (fp16, fp16), (bf16, bf16), (fp32, fp32).
- ``torch.ops.custom.add_rms_norm(x1, x2, gamma, epsilon=1e-6) -> (y, rstd, x)``: torch_npu's
  ``npu_add_rms_norm`` with the residual add fused in: ``x = x1 + x2`` rounded once to x1's dtype,
  then rms_norm of that x (the kernel normalizes the rounded x, so autograd through x is exact).

Backward ops (from op_proto/*.json like the forward ones):
- ``rms_norm_grad(dy, x, rstd, gamma) -> (dx, dgamma)``:
  ``dx = rstd*dy*g - x*rstd^3*sum(dy*g*x)/N``, ``dgamma = sum over rows of dy*x*rstd`` accumulated in
  fp32 (per-block partials, then a deterministic reduction) and returned in gamma's dtype.
- ``add_rms_norm_grad(dy, x, rstd, gamma, dx_out) -> (dx, dgamma)``: the same plus ``dx_out``, the
  gradient flowing into the x output; dx1 = dx2 = dx.
rstd is an output without a gradient (marked non-differentiable), as in torch_npu.
"""

from __future__ import annotations

import math

import torch

from ..op_proto import load_all
from .checks import check_dtypes, check_same_device, fail

PROTOS = load_all()
# epsilon's default, as op_proto/rms_norm.json declares it (add_rms_norm.json declares the same)
EPSILON = float(next(a.default for a in PROTOS["rms_norm"].attrs if a.name == "epsilon"))


def _check_shapes(op: str, x: torch.Tensor, gamma: torch.Tensor, xi: int, gi: int) -> None:
    proto = PROTOS[op]
    xn, gn = proto.inputs[xi].name, proto.inputs[gi].name
    if gamma.dim() < 1:
        fail(ValueError, op, f"{gn} must have at least one dim (the normalized dims), got shape {list(gamma.shape)}")
    if not gamma.dim() <= x.dim() <= 8:
        fail(
            ValueError,
            op,
            f"{xn} must have rank {gamma.dim()}..8 (its trailing dims are {gn}'s), got shape {list(x.shape)}",
        )
    if tuple(x.shape[x.dim() - gamma.dim() :]) != tuple(gamma.shape):
        fail(
            ValueError,
            op,
            f"{gn} of shape {list(gamma.shape)} must equal the trailing dims of {xn} of shape {list(x.shape)}",
        )


def _check_epsilon(op: str, epsilon: float) -> None:
    if not (0 <= epsilon < math.inf):  # also refuses NaN
        fail(ValueError, op, f"epsilon must be finite and >= 0, got {epsilon}")


def rstd_shape(x: torch.Tensor, gamma: torch.Tensor) -> list:
    """x's shape with gamma's (the normalized) dims set to 1 (SymInt-friendly)."""
    return list(x.shape[: x.dim() - gamma.dim()]) + [1] * gamma.dim()


def check_rms_norm(x, gamma, epsilon) -> None:
    proto = PROTOS["rms_norm"]
    check_same_device(proto, x, gamma)
    check_dtypes(proto, x, gamma)
    _check_epsilon("rms_norm", epsilon)
    _check_shapes("rms_norm", x, gamma, 0, 1)


def check_add_rms_norm(x1, x2, gamma, epsilon) -> None:
    proto = PROTOS["add_rms_norm"]
    check_same_device(proto, x1, x2, gamma)
    check_dtypes(proto, x1, x2, gamma)
    _check_epsilon("add_rms_norm", epsilon)
    if tuple(x1.shape) != tuple(x2.shape):
        fail(ValueError, "add_rms_norm", f"x1 and x2 must have one shape, got {list(x1.shape)} and {list(x2.shape)}")
    _check_shapes("add_rms_norm", x1, gamma, 0, 2)


def check_grad(op: str, dy, x, rstd, gamma, dx_out=None) -> None:
    proto = PROTOS[op]
    tensors = (dy, x, rstd, gamma) + ((dx_out,) if dx_out is not None else ())
    check_same_device(proto, *tensors)
    check_dtypes(proto, *tensors)
    _check_shapes(op, x, gamma, 1, 3)
    if tuple(dy.shape) != tuple(x.shape):
        fail(ValueError, op, f"dy must have x's shape {list(x.shape)}, got {list(dy.shape)}")
    if dx_out is not None and tuple(dx_out.shape) != tuple(x.shape):
        fail(ValueError, op, f"dx_out must have x's shape {list(x.shape)}, got {list(dx_out.shape)}")
    if list(rstd.shape) != rstd_shape(x, gamma):
        fail(
            ValueError,
            op,
            f"rstd must have shape {rstd_shape(x, gamma)} (x's with the normalized dims set to 1), "
            f"got {list(rstd.shape)}",
        )


def rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = EPSILON) -> tuple[torch.Tensor, torch.Tensor]:
    """npu_rms_norm: ``(y, rstd)``, y = x * rsqrt(mean(x^2) + eps) * gamma over gamma's (trailing) dims."""
    check_rms_norm(x, gamma, epsilon)
    return torch.ops.custom.rms_norm(x, gamma, epsilon)


def add_rms_norm(
    x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, epsilon: float = EPSILON
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """npu_add_rms_norm: ``(y, rstd, x)`` with x = x1 + x2 and (y, rstd) = rms_norm(x, gamma, epsilon)."""
    check_add_rms_norm(x1, x2, gamma, epsilon)
    return torch.ops.custom.add_rms_norm(x1, x2, gamma, epsilon)


# ---- fake kernels: shape and dtype rules only ----
@torch.library.register_fake("custom::rms_norm")
def _rms_norm_fake(x, gamma, epsilon=EPSILON):
    check_rms_norm(x, gamma, epsilon)
    return x.new_empty(x.shape), x.new_empty(rstd_shape(x, gamma), dtype=torch.float32)


@torch.library.register_fake("custom::add_rms_norm")
def _add_rms_norm_fake(x1, x2, gamma, epsilon=EPSILON):
    check_add_rms_norm(x1, x2, gamma, epsilon)
    return x1.new_empty(x1.shape), x1.new_empty(rstd_shape(x1, gamma), dtype=torch.float32), x1.new_empty(x1.shape)


@torch.library.register_fake("custom::rms_norm_grad")
def _rms_norm_grad_fake(dy, x, rstd, gamma):
    check_grad("rms_norm_grad", dy, x, rstd, gamma)
    return x.new_empty(x.shape), gamma.new_empty(gamma.shape)


@torch.library.register_fake("custom::add_rms_norm_grad")
def _add_rms_norm_grad_fake(dy, x, rstd, gamma, dx_out):
    check_grad("add_rms_norm_grad", dy, x, rstd, gamma, dx_out)
    return x.new_empty(x.shape), gamma.new_empty(gamma.shape)


# ---- autograd ----
def _rms_norm_setup(ctx, inputs, output):
    x, gamma = inputs[0], inputs[1]
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, output[1], gamma)


def _rms_norm_backward(ctx, dy, _drstd):
    x, rstd, gamma = ctx.saved_tensors
    dx, dgamma = torch.ops.custom.rms_norm_grad(dy.contiguous(), x, rstd, gamma)
    return (dx if ctx.needs_input_grad[0] else None, dgamma if ctx.needs_input_grad[1] else None, None)


def _add_rms_norm_setup(ctx, inputs, output):
    gamma = inputs[2]
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(output[2], output[1], gamma)


def _add_rms_norm_backward(ctx, dy, _drstd, dx_out):
    x, rstd, gamma = ctx.saved_tensors
    dx, dgamma = torch.ops.custom.add_rms_norm_grad(dy.contiguous(), x, rstd, gamma, dx_out.contiguous())
    return (
        dx if ctx.needs_input_grad[0] else None,
        dx if ctx.needs_input_grad[1] else None,
        dgamma if ctx.needs_input_grad[2] else None,
        None,
    )


torch.library.register_autograd("custom::rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)
torch.library.register_autograd("custom::add_rms_norm", _add_rms_norm_backward, setup_context=_add_rms_norm_setup)
