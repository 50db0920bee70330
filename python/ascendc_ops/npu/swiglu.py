"""torch_npu's SwiGLU names on our swiglu family: npu_swiglu and its backward."""

from __future__ import annotations

import torch

from ..ops.swiglu import swiglu as _swiglu


def npu_swiglu(input, dim=-1):
    """``silu(A) * B`` for A the first and B the second half of ``dim``."""
    return _swiglu(input, dim)


def npu_swiglu_backward(grad_output, input, dim=-1):
    return torch.ops.custom.swiglu_grad(grad_output.contiguous(), input, dim)
