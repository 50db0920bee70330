"""SwiGLU ops: thin wrapper, fake kernels and autograd for

- ``torch.ops.custom.swiglu(x, dim=-1)``: torch_npu's ``npu_swiglu``, ``silu(A) * B`` with A the first
  and B the second half of x along ``dim``; the output has ``dim`` halved;
- ``torch.ops.custom.swiglu_grad(dy, x, dim=-1)``: its gradient ``dx`` (``npu_swiglu_backward``),
  ``[dy * B * silu'(A), dy * silu(A)]`` concatenated along ``dim``.

Schemas come from op_proto/swiglu.json and swiglu_grad.json. fp32, fp16 and bf16; the kernels
compute in fp32 and round once.
"""

from __future__ import annotations

import torch

from ..op_proto import load_all
from .checks import check_dtype, check_dtypes, check_same_device, fail

PROTOS = load_all()


def check_swiglu(op: str, x: torch.Tensor, dim: int, dy: torch.Tensor | None = None) -> list:
    """The argument rules of swiglu / swiglu_grad (the C++ bindings enforce the same ones).

    Returns x's shape with ``dim`` halved (SymInts under torch.compile: the parity test becomes a guard).
    """
    proto = PROTOS[op]
    x_index = 1 if dy is not None else 0
    xn = proto.inputs[x_index].name
    if dy is not None:
        check_same_device(proto, dy, x)
    rank = x.dim()
    if rank < 1:
        fail(ValueError, op, f"{xn} must have at least 1 dim to split, got a 0-dim tensor")
    if not -rank <= dim < rank:
        fail(ValueError, op, f"dim must be in [{-rank}, {rank - 1}] for {xn} of shape {list(x.shape)}, got {dim}")
    d = dim % rank
    n = x.shape[d]
    if n % 2 != 0:
        fail(
            ValueError,
            op,
            f"{xn}.size({dim}) must be even to split into two halves, got {n} ({xn} shape {list(x.shape)})",
        )
    half = list(x.shape)
    half[d] = n // 2
    if dy is not None:
        if list(dy.shape) != half:
            fail(
                ValueError,
                op,
                f"{proto.inputs[0].name} must have shape {half} ({xn} shape {list(x.shape)} "
                f"with dim {dim} halved), got {list(dy.shape)}",
            )
        check_dtype(proto, x_index, x)
        check_dtypes(proto, dy, x)
    else:
        check_dtype(proto, 0, x)
    return half


def swiglu(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """npu_swiglu: ``silu(A) * B`` for A, B the two halves of x along ``dim`` (output: ``dim`` halved)."""
    check_swiglu("swiglu", x, dim)
    return torch.ops.custom.swiglu(x, dim)


# ---- fake kernels: shape and dtype rules only ----
@torch.library.register_fake("custom::swiglu")
def _swiglu_fake(x, dim=-1):
    return x.new_empty(check_swiglu("swiglu", x, dim))


@torch.library.register_fake("custom::swiglu_grad")
def _swiglu_grad_fake(dy, x, dim=-1):
    check_swiglu("swiglu_grad", x, dim, dy)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


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
