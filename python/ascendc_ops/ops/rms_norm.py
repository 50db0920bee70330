"""RMSNorm ops: thin wrappers and autograd for

- ``torch.ops.custom.rms_norm(x, gamma, epsilon=1e-6) -> (y, rstd)``: torch_npu's ``npu_rms_norm``.
  gamma's dims are x's trailing dims (the normalized dims, N elements); ``rstd = 1/sqrt(mean(x^2) + eps)``
  in float32 with keepdim shape (x's shape, normalized dims set to 1); ``y = (x * rstd) * gamma``
  computed in fp32 and rounded once to x's dtype. (x, gamma) dtypes: (fp16, fp32), (bf16, fp32),
  (fp16, fp16), (bf16, bf16), (fp32, fp32).
- ``torch.ops.custom.add_rms_norm(x1, x2, gamma, epsilon=1e-6) -> (y, rstd, x)``: torch_npu's
  ``npu_add_rms_norm`` with the residual add fused in: ``x = x1 + x2`` rounded once to x1's dtype,
  then rms_norm of that x (the kernel normalizes the rounded x, so autograd through x is exact).

Backward ops (from op_proto/*/*.json like the forward ones):
- ``rms_norm_grad(dy, x, rstd, gamma) -> (dx, dgamma)``:
  ``dx = rstd*dy*g - x*rstd^3*sum(dy*g*x)/N``, ``dgamma = sum over rows of dy*x*rstd`` accumulated in
  fp32 (per-block partials, then a deterministic reduction) and returned in gamma's dtype.
- ``add_rms_norm_grad(dy, x, rstd, gamma, dx_out) -> (dx, dgamma)``: the same plus ``dx_out``, the
  gradient flowing into the x output; dx1 = dx2 = dx.
- ``gemma_rms_norm(x, gamma, epsilon=1e-6) -> (y, rstd)``: torch_npu's ``npu_gemma_rms_norm``, rms_norm with
  the weight ``1 + gamma`` (formed in fp32, as Gemma's RMSNorm does): ``y = (x * rstd) * (1 + gamma)``.
  ``gemma_rms_norm_grad(dy, x, rstd, gamma) -> (dx, dgamma)``: rms_norm_grad with ``1 + gamma`` in dx
  (dgamma is rms_norm's: d(1 + gamma)/dgamma = 1). The same kernels; the tiling carries the offset.
- ``gated_rms_norm(x, gamma, z, epsilon=1e-6) -> (y, rstd)``: HF's Qwen3NextRMSNormGated, rms_norm times
  ``silu(z)`` (z of x's shape and dtype), rounded as HF does: ``h = round(x * rstd)`` to x's dtype, then
  ``gamma * h`` (rounded too when gamma is x's narrow dtype), then ``* silu(z)`` in fp32 and one rounding.
  ``gated_rms_norm_grad(dy, x, rstd, gamma, z) -> (dx, dgamma, dz)``: rms_norm_grad of ``dy * silu(z)``
  (the roundings' derivatives taken as 1, as autograd of HF's module takes them) and
  ``dz = dy * h * silu'(z)`` with h = ``gamma * h`` exactly as the forward rounded it.
rstd is an output without a gradient (marked non-differentiable), as in torch_npu.

The argument rules and the output shapes (also for FakeTensor / torch.compile, through C++ Meta
kernels) come from tiling/rms_norm_problem.h.
"""

from __future__ import annotations

import torch

from ..op_proto import load_all

# epsilon's default, as op_proto/rms_norm/rms_norm.json declares it (add_rms_norm.json declares the same)
EPSILON = float(next(a.default for a in load_all()["rms_norm"].attrs if a.name == "epsilon"))


def rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = EPSILON) -> tuple[torch.Tensor, torch.Tensor]:
    """npu_rms_norm: ``(y, rstd)``, y = x * rsqrt(mean(x^2) + eps) * gamma over gamma's (trailing) dims."""
    return torch.ops.custom.rms_norm(x, gamma, epsilon)


def add_rms_norm(
    x1: torch.Tensor, x2: torch.Tensor, gamma: torch.Tensor, epsilon: float = EPSILON
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """npu_add_rms_norm: ``(y, rstd, x)`` with x = x1 + x2 and (y, rstd) = rms_norm(x, gamma, epsilon)."""
    return torch.ops.custom.add_rms_norm(x1, x2, gamma, epsilon)


def gemma_rms_norm(x: torch.Tensor, gamma: torch.Tensor, epsilon: float = EPSILON) -> tuple[torch.Tensor, torch.Tensor]:
    """npu_gemma_rms_norm: ``(y, rstd)``, y = x * rsqrt(mean(x^2) + eps) * (1 + gamma) over gamma's dims."""
    return torch.ops.custom.gemma_rms_norm(x, gamma, epsilon)


def gated_rms_norm(
    x: torch.Tensor, gamma: torch.Tensor, z: torch.Tensor, epsilon: float = EPSILON
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y, rstd)``, y = rms_norm(x, gamma) * silu(z) with HF's roundings (Qwen3NextRMSNormGated)."""
    return torch.ops.custom.gated_rms_norm(x, gamma, z, epsilon)


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


def _gated_rms_norm_setup(ctx, inputs, output):
    x, gamma, z = inputs[0], inputs[1], inputs[2]
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, output[1], gamma, z)


def _gated_rms_norm_backward(ctx, dy, _drstd):
    x, rstd, gamma, z = ctx.saved_tensors
    dx, dgamma, dz = torch.ops.custom.gated_rms_norm_grad(dy.contiguous(), x, rstd, gamma, z)
    need = ctx.needs_input_grad
    return (dx if need[0] else None, dgamma if need[1] else None, dz if need[2] else None, None)


def _gemma_rms_norm_backward(ctx, dy, _drstd):
    x, rstd, gamma = ctx.saved_tensors
    dx, dgamma = torch.ops.custom.gemma_rms_norm_grad(dy.contiguous(), x, rstd, gamma)
    return (dx if ctx.needs_input_grad[0] else None, dgamma if ctx.needs_input_grad[1] else None, None)


torch.library.register_autograd("custom::rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)
torch.library.register_autograd("custom::gemma_rms_norm", _gemma_rms_norm_backward, setup_context=_rms_norm_setup)
torch.library.register_autograd("custom::add_rms_norm", _add_rms_norm_backward, setup_context=_add_rms_norm_setup)
torch.library.register_autograd("custom::gated_rms_norm", _gated_rms_norm_backward, setup_context=_gated_rms_norm_setup)
