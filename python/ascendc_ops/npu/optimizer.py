"""torch_npu's optimizer names on our optimizer family: npu_apply_adam_w (its ``.out`` form, var / m / v updated in
place, the bias corrections given as beta powers as torch_npu takes them) and NpuFusedAdamW (torch_npu.optim's,
re-exported by the optim subpackage)."""

from __future__ import annotations

import math

import torch

from ..optim import FusedAdamW, clip_grad_norm_


def npu_apply_adam_w(
    beta1_power,
    beta2_power,
    lr,
    weight_decay,
    beta1,
    beta2,
    epsilon,
    grad,
    max_grad_norm=None,
    amsgrad=False,
    maximize=False,
    *,
    out,
):
    """One AdamW step on ``out = (var, m, v)`` in place; returns them. ``beta1_power`` = beta1^step."""
    var, m, v = out
    # our op takes the step count; beta^step recovers torch_npu's power to a double's rounding
    beta, power = (beta1, beta1_power) if 0.0 < beta1 < 1.0 else (beta2, beta2_power)
    step = math.log(float(power)) / math.log(float(beta)) if 0.0 < beta < 1.0 and float(power) > 0.0 else 1.0
    torch.ops.custom.apply_adam_w(
        var, m, v, grad, max_grad_norm, lr=float(lr), beta1=float(beta1), beta2=float(beta2),
        weight_decay=float(weight_decay), eps=float(epsilon), step=step, amsgrad=bool(amsgrad),
        maximize=bool(maximize),
    )  # fmt: skip
    return var, m, v


class NpuFusedAdamW(FusedAdamW):
    """torch_npu.optim.NpuFusedAdamW's constructor (params, lr, betas, eps, weight_decay, amsgrad) over FusedAdamW's
    one-pass update (torch_npu's flattens the states and runs about eight elementwise passes)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)

    def clip_grad_norm_fused_(self, max_norm, norm_type=2):
        """torch_npu's NpuFusedOptimizerBase.clip_grad_norm_fused_: every grad of the optimizer's params scaled to a
        total ``norm_type`` norm of at most ``max_norm``; returns the total norm."""
        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        return clip_grad_norm_(params, max_norm, norm_type=norm_type)
