"""SwiGLU ops: thin wrapper and autograd for

- ``torch.ops.custom.swiglu(x, dim=-1)``: torch_npu's ``npu_swiglu``, ``silu(A) * B`` with A the first
  and B the second half of x along ``dim``; the output has ``dim`` halved;
- ``torch.ops.custom.swiglu_grad(dy, x, dim=-1)``: its gradient ``dx`` (``npu_swiglu_backward``),
  ``[dy * B * silu'(A), dy * silu(A)]`` concatenated along ``dim``.

Schemas come from op_proto/swiglu/swiglu.json and swiglu_grad.json; the argument rules and the output
shapes (also for FakeTensor / torch.compile, through a C++ Meta kernel) from tiling/swiglu_problem.h.
fp32, fp16 and bf16; the kernels compute in fp32 and round once.
"""

from __future__ import annotations

import torch


def swiglu(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """npu_swiglu: ``silu(A) * B`` for A, B the two halves of x along ``dim`` (output: ``dim`` halved)."""
    return torch.ops.custom.swiglu(x, dim)


# ---- autograd ----
def _setup_context(ctx, inputs, output):
    x = inputs[0]
    ctx.dim = inputs[1] if len(inputs) > 1 else -1
    ctx.save_for_backward(x)


def _swiglu_backward(ctx, dy):
    (x,) = ctx.saved_tensors
    dx = torch.ops.custom.swiglu_grad(dy, x, ctx.dim) if ctx.needs_input_grad[0] else None
    return dx, None


torch.library.register_autograd("custom::swiglu", _swiglu_backward, setup_context=_setup_context)
