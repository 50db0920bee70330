"""Cross-entropy ops: thin wrapper and autograd for

- ``torch.ops.custom.cross_entropy_loss(input, target, weight=None, reduction='mean', ignore_index=-100,
  label_smoothing=0.0, lse_square_scale_for_zloss=0.0, return_zloss=False) -> (loss, log_prob, zloss, lse_for_zloss)``:
  torch_npu's ``npu_cross_entropy_loss`` on logits [N, C] (fp16/bf16/fp32), target int64 [N], weight fp32 [C];
- ``torch.ops.custom.cross_entropy_loss_grad(grad_loss, log_prob, target, weight, grad_zloss, lse_for_zloss, ...)``:
  its gradient (``npu_cross_entropy_loss_backward``), x_grad [N, C] in log_prob's dtype.

Outputs as torch_npu documents them, every one in input's dtype: loss [N] for 'none', else [1]; log_prob [N, C];
zloss (loss's shape) with ``return_zloss``, else an empty [0]; lse_for_zloss [N] when
``lse_square_scale_for_zloss`` is not 0, else an empty [0].

The z-loss (torch_npu: "not supported yet"; here implemented): ``s * lse^2`` per counted row, reduced as the loss
('mean': over the count of counted rows), and, as CANN's CrossEntropyLossGrad formula differentiates it (the loss's
own gradient flows into the lse term), part of ``loss`` whenever s != 0; ``zloss`` returns it alone. Only loss and
zloss are differentiable (torch_npu). 'mean' with every target ignored: loss NaN (0 / 0, as torch), gradient 0.
Schemas come from op_proto/cross_entropy/*.json, argument rules from tiling/cross_entropy_problem.h.
"""

from __future__ import annotations

import torch


def cross_entropy_loss(
    input: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale_for_zloss: float = 0.0,
    return_zloss: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """npu_cross_entropy_loss: (loss, log_prob, zloss, lse_for_zloss) of logits ``input`` [N, C] and ``target`` [N]."""
    return torch.ops.custom.cross_entropy_loss(
        input, target, weight, reduction, ignore_index, label_smoothing, lse_square_scale_for_zloss, return_zloss
    )


# ---- autograd ----
def _setup_context(ctx, inputs, output):
    defaults = (None, None, None, "mean", -100, 0.0, 0.0, False)  # the schema's, where a caller left them out
    _, target, weight, reduction, ignore_index, smoothing, scale, return_zloss = (*inputs, *defaults[len(inputs) :])
    loss, log_prob, zloss, lse = output
    ctx.mark_non_differentiable(log_prob, lse)
    ctx.save_for_backward(log_prob, target, weight, lse)
    ctx.attrs = (reduction, ignore_index, smoothing, scale)
    ctx.return_zloss = return_zloss
    ctx.loss_shape = tuple(loss.shape)


def _cross_entropy_backward(ctx, grad_loss, _grad_log_prob, grad_zloss, _grad_lse):
    log_prob, target, weight, lse = ctx.saved_tensors
    reduction, ignore_index, smoothing, scale = ctx.attrs
    if grad_loss is None:  # only zloss was used
        grad_loss = log_prob.new_zeros(ctx.loss_shape)
    # zloss is s * lse^2 (and empty without return_zloss): its gradient matters only with both
    use_z = ctx.return_zloss and scale != 0.0 and grad_zloss is not None
    dx = None
    if ctx.needs_input_grad[0]:
        dx = torch.ops.custom.cross_entropy_loss_grad(
            grad_loss,
            log_prob,
            target,
            weight,
            grad_zloss if use_z else None,
            lse if scale != 0.0 else None,
            reduction,
            ignore_index,
            smoothing,
            scale,
        )
    return dx, None, None, None, None, None, None, None


torch.library.register_autograd("custom::cross_entropy_loss", _cross_entropy_backward, setup_context=_setup_context)
