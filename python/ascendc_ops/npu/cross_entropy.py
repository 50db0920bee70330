"""torch_npu's cross-entropy names on our cross_entropy family: npu_cross_entropy_loss and its backward."""

from __future__ import annotations

import torch

from ..ops.cross_entropy import cross_entropy_loss as _cross_entropy_loss


def npu_cross_entropy_loss(
    input,
    target,
    weight=None,
    reduction="mean",
    ignore_index=-100,
    label_smoothing=0.0,
    lse_square_scale_for_zloss=0.0,
    return_zloss=False,
):
    """(loss, log_prob, zloss, lse_for_zloss) of logits [N, C]; loss and zloss are differentiable."""
    return _cross_entropy_loss(
        input, target, weight, reduction, ignore_index, label_smoothing, lse_square_scale_for_zloss, return_zloss
    )


def npu_cross_entropy_loss_backward(
    grad_loss,
    log_prob,
    target,
    weight=None,
    grad_zloss=None,
    lse_for_zloss=None,
    reduction="mean",
    ignore_index=-100,
    label_smoothing=0.0,
    lse_square_scale_for_zloss=0.0,
):
    """x_grad [N, C] in log_prob's dtype."""
    return torch.ops.custom.cross_entropy_loss_grad(
        grad_loss,
        log_prob,
        target,
        weight,
        grad_zloss,
        lse_for_zloss,
        reduction,
        ignore_index,
        label_smoothing,
        lse_square_scale_for_zloss,
    )
