"""Grouped matmul ops: wrappers and autograd for

- ``grouped_matmul(x, weight, group_list, group_list_type=1, transpose_weight=False)``: torch_npu's
  ``npu_grouped_matmul`` MoE form (split M): ``y[rows of e] = x_e @ w[e]`` (``w[e].T`` with
  transpose_weight, HF's ``[E, N, K]``); rows past the last group are 0;
- ``grouped_matmul_weight_grad(x, dy, group_list, group_list_type=1)``: ``dw[e] = x_e^T @ dy_e``.

Schemas come from op_proto/grouped_matmul*.json; the argument rules and the output shapes (also for
FakeTensor / torch.compile, through a C++ Meta kernel) from tiling/grouped_matmul_problem.h.
Autograd: dx by grouped_matmul with the weight's transposition flipped, dweight by the weight-grad
kernel. Data-dependent checks (group_list values) run in the C++ bindings. The MoE routing ops are
in moe_routing.py.
"""

from __future__ import annotations

import torch


# ---- wrappers ----
def grouped_matmul(x, weight, group_list, group_list_type: int = 1, transpose_weight: bool = False):
    """y = x_e @ w[e] per group of rows (``w[e].T`` with transpose_weight); rows past the groups are 0."""
    return torch.ops.custom.grouped_matmul(x, weight, group_list, group_list_type, transpose_weight)


# ---- autograd ----
def _gmm_setup(ctx, inputs, output):
    x, weight, group_list = inputs[:3]
    ctx.group_list_type = inputs[3] if len(inputs) > 3 else 1
    ctx.transpose_weight = inputs[4] if len(inputs) > 4 else False
    ctx.save_for_backward(x, weight, group_list)


def _gmm_backward(ctx, dy):
    x, weight, group_list = ctx.saved_tensors
    dy = dy.contiguous()
    t, trans = ctx.group_list_type, ctx.transpose_weight
    dx = dw = None
    if ctx.needs_input_grad[0]:  # dx = dy @ w[e]^T: the same weight read with the other transposition
        dx = torch.ops.custom.grouped_matmul(dy, weight, group_list, t, not trans)
    if ctx.needs_input_grad[1]:  # [E, K, N]: x_e^T dy_e; [E, N, K]: dy_e^T x_e
        dw = (
            torch.ops.custom.grouped_matmul_weight_grad(dy, x, group_list, t)
            if trans
            else torch.ops.custom.grouped_matmul_weight_grad(x, dy, group_list, t)
        )
    return dx, dw, None, None, None


torch.library.register_autograd("custom::grouped_matmul", _gmm_backward, setup_context=_gmm_setup)
