"""torch_npu's RMSNorm names on our rms_norm family: npu_rms_norm (and its backward), npu_add_rms_norm,
npu_gemma_rms_norm; epsilon's default is the prototype's (ops/rms_norm.py)."""

from __future__ import annotations

import torch

from ..ops.rms_norm import (
    EPSILON as _EPSILON,
    add_rms_norm as _add_rms_norm,
    gemma_rms_norm as _gemma_rms_norm,
    rms_norm as _rms_norm,
)


def npu_rms_norm(input, gamma, epsilon=_EPSILON):
    """-> (y, rstd): rstd fp32 with the normalized dims kept as 1."""
    return _rms_norm(input, gamma, epsilon)


def npu_rms_norm_backward(dy, input, gamma, rstd):
    """-> (dx, dgamma). Note torch_npu's argument order (gamma before rstd)."""
    return tuple(torch.ops.custom.rms_norm_grad(dy.contiguous(), input, rstd, gamma))


def npu_add_rms_norm(x1, x2, gamma, epsilon=_EPSILON):
    """-> (y, rstd, x) with x = x1 + x2."""
    return _add_rms_norm(x1, x2, gamma, epsilon)


def npu_gemma_rms_norm(input, gamma, epsilon=_EPSILON):
    """-> (y, rstd) with the weight 1 + gamma (op-plugin's op_plugin_functions.yaml since Ascend/op-plugin#2208:
    ``npu_gemma_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)``)."""
    return _gemma_rms_norm(input, gamma, epsilon)
