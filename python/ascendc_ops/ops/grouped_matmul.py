"""Grouped matmul ops: wrappers and autograd for

- ``grouped_matmul(x, weight, group_list, group_list_type=1, transpose_weight=False, bias=None)``: torch_npu's
  ``npu_grouped_matmul`` MoE form (split M): ``y[rows of e] = x_e @ w[e] (+ bias[e])`` (``w[e].T`` with
  transpose_weight, HF's ``[E, N, K]``); bias ``[E, N]`` in x's dtype (float32 for bfloat16 x, as A2's
  Matmul takes it), added in the kernel's fp32 accumulation; rows past the last group are 0;
- ``grouped_matmul_weight_grad(x, dy, group_list, group_list_type=1)``: ``dw[e] = x_e^T @ dy_e``.

Schemas come from op_proto/grouped_matmul/*.json; the argument rules and the output shapes (also for
FakeTensor / torch.compile, through a C++ Meta kernel) from tiling/grouped_matmul_problem.h.
Autograd: dx by grouped_matmul with the weight's transposition flipped, dweight by the weight-grad
kernel, dbias[e] = the sum of group e's rows of dy (fp32, then the bias's dtype). Data-dependent checks
(group_list values) run in the C++ bindings. The MoE routing ops are in moe_routing.py.
"""

from __future__ import annotations

import torch


# ---- wrappers ----
def grouped_matmul(x, weight, group_list, group_list_type: int = 1, transpose_weight: bool = False, bias=None):
    """y = x_e @ w[e] (+ bias[e]) per group of rows (``w[e].T`` with transpose_weight); rows past the groups are 0."""
    return torch.ops.custom.grouped_matmul(x, weight, group_list, bias, group_list_type, transpose_weight)


# ---- autograd ----
def _gmm_setup(ctx, inputs, output):
    x, weight, group_list = inputs[:3]
    bias = inputs[3] if len(inputs) > 3 else None
    ctx.group_list_type = inputs[4] if len(inputs) > 4 else 1
    ctx.transpose_weight = inputs[5] if len(inputs) > 5 else False
    ctx.bias_dtype = None if bias is None else bias.dtype
    ctx.save_for_backward(x, weight, group_list)


def _bias_grad(dy, group_list, group_list_type: int, dtype):
    """dbias[e] = the sum of group e's rows of dy, accumulated in fp32 (rows past the groups have no bias)."""
    counts = group_list if group_list_type == 1 else torch.diff(group_list, prepend=group_list.new_zeros(1))
    groups = torch.repeat_interleave(torch.arange(counts.numel(), device=dy.device), counts.to(dy.device))
    db = dy.new_zeros((counts.numel(), dy.shape[1]), dtype=torch.float32)
    db.index_add_(0, groups, dy[: groups.numel()].float())
    return db.to(dtype)


def _gmm_backward(ctx, dy):
    x, weight, group_list = ctx.saved_tensors
    dy = dy.contiguous()
    t, trans = ctx.group_list_type, ctx.transpose_weight
    dx = dw = db = None
    if ctx.needs_input_grad[0]:  # dx = dy @ w[e]^T: the same weight read with the other transposition
        dx = torch.ops.custom.grouped_matmul(dy, weight, group_list, None, t, not trans)
    if ctx.needs_input_grad[1]:  # [E, K, N]: x_e^T dy_e; [E, N, K]: dy_e^T x_e
        dw = (
            torch.ops.custom.grouped_matmul_weight_grad(dy, x, group_list, t)
            if trans
            else torch.ops.custom.grouped_matmul_weight_grad(x, dy, group_list, t)
        )
    if ctx.bias_dtype is not None and ctx.needs_input_grad[3]:
        db = _bias_grad(dy, group_list, t, ctx.bias_dtype)
    return dx, dw, None, db, None, None


torch.library.register_autograd("custom::grouped_matmul", _gmm_backward, setup_context=_gmm_setup)
