"""Grouped matmul ops: wrappers, fake kernels and autograd for

- ``grouped_matmul(x, weight, group_list, group_list_type=1, transpose_weight=False)``: torch_npu's
  ``npu_grouped_matmul`` MoE form (split M): ``y[rows of e] = x_e @ w[e]`` (``w[e].T`` with
  transpose_weight, HF's ``[E, N, K]``); rows past the last group are 0;
- ``grouped_matmul_weight_grad(x, dy, group_list, group_list_type=1)``: ``dw[e] = x_e^T @ dy_e``.

Schemas come from op_proto/grouped_matmul*.json. Autograd: dx by grouped_matmul with the weight's
transposition flipped, dweight by the weight-grad kernel. Data-dependent checks (group_list values)
run in the C++ bindings. The MoE routing ops are in moe_routing.py.
"""

from __future__ import annotations

import torch
from torch.fx.experimental.symbolic_shapes import guard_or_false

from ..op_proto import load_all
from .checks import check_dtype, check_same_dtype, fail

PROTOS = load_all()


def check_grouped_matmul(
    op: str,
    a: torch.Tensor,
    b: torch.Tensor,
    group_list: torch.Tensor,
    group_list_type: int,
    transpose_weight: bool = False,
) -> list:
    """Shape and dtype rules of grouped_matmul / grouped_matmul_weight_grad; returns the output shape."""
    proto = PROTOS[op]
    an, bn = proto.inputs[0].name, proto.inputs[1].name
    if group_list_type not in (0, 1):
        fail(ValueError, op, f"group_list_type must be 0 (cumulative ends) or 1 (counts), got {group_list_type}")
    if a.dim() != 2:
        fail(ValueError, op, f"{an} must be 2-D [M, K], got shape {list(a.shape)}")
    # group_list's length may be data-dependent under torch.compile (bincount): undecidable checks pass here
    # and the bindings enforce them at run time.
    if group_list.dim() != 1 or guard_or_false(group_list.shape[0] < 1):
        fail(
            ValueError,
            op,
            f"group_list must be 1-D with one entry per group (at least 1), got shape {list(group_list.shape)}",
        )
    for i, t in enumerate((a, b, group_list)):
        check_dtype(proto, i, t)
    check_same_dtype(op, bn, b, an, a)
    m, k = a.shape
    e = group_list.shape[0]
    if op == "grouped_matmul_weight_grad":
        if b.dim() != 2 or b.shape[0] != m:
            fail(ValueError, op, f"{bn} must be 2-D [M, N] with M = {m} ({an} rows), got shape {list(b.shape)}")
        return [e, k, b.shape[1]]
    layout = "N, K" if transpose_weight else "K, N"
    if b.dim() != 3 or guard_or_false(b.shape[0] != e):
        fail(
            ValueError,
            op,
            f"{bn} must be 3-D [E, {layout}] with E = {e} (group_list entries), got shape {list(b.shape)}",
        )
    wk = b.shape[2] if transpose_weight else b.shape[1]
    if wk != k:
        fail(
            ValueError,
            op,
            f"{bn} must have K = {k} ({an}.size(1)) in dim {2 if transpose_weight else 1} "
            f"(transpose_weight={transpose_weight}), got shape {list(b.shape)}",
        )
    return [m, b.shape[1] if transpose_weight else b.shape[2]]


# ---- wrappers ----
def grouped_matmul(x, weight, group_list, group_list_type: int = 1, transpose_weight: bool = False):
    """y = x_e @ w[e] per group of rows (``w[e].T`` with transpose_weight); rows past the groups are 0."""
    check_grouped_matmul("grouped_matmul", x, weight, group_list, group_list_type, transpose_weight)
    return torch.ops.custom.grouped_matmul(x, weight, group_list, group_list_type, transpose_weight)


# ---- fake kernels ----
@torch.library.register_fake("custom::grouped_matmul")
def _gmm_fake(x, weight, group_list, group_list_type=1, transpose_weight=False):
    return x.new_empty(check_grouped_matmul("grouped_matmul", x, weight, group_list, group_list_type, transpose_weight))


@torch.library.register_fake("custom::grouped_matmul_weight_grad")
def _gmm_wgrad_fake(x, dy, group_list, group_list_type=1):
    return x.new_empty(check_grouped_matmul("grouped_matmul_weight_grad", x, dy, group_list, group_list_type))


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
