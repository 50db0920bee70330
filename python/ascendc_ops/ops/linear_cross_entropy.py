"""Fused linear cross-entropy: the LM head and its loss without the logits.

- ``torch.ops.custom.linear_cross_entropy(hidden [T, H], weight [V, H], target [T] int64, bias=None,
  class_weight=None, vocab_start_index=0, softcap=0.0) -> (logits_max, sum_exp, target_logit, logit_sum)``, each
  fp32 [T]: per token, over the logits ``hidden @ weight.T + bias`` of this vocabulary shard (softcapped:
  ``softcap * tanh(logit / softcap)``), their max, the sum of ``exp(logit - max)``, the target's logit (0 when the
  target is outside the shard) and the sum of the logits, each times its class weight when ``class_weight`` (fp32
  [V]) is given. A shard holds weight rows ``vocab_start_index ...`` (and the same slice of bias and
  class_weight); shards combine by a max and two sums.
- ``torch.ops.custom.linear_cross_entropy_grad(hidden, weight, target, lse, grad_softmax, grad_target,
  grad_uniform, bias=None, class_weight=None, vocab_start_index=0, softcap=0.0) -> (grad_hidden, grad_weight,
  grad_bias)``: with ``p = exp(logit - lse)`` the gradient of the logits is ``grad_softmax * p - grad_target *
  onehot(target) - grad_uniform * class_weight`` (per token; class_weight 1 when absent), times softcap's
  ``1 - tanh^2``, multiplied into hidden's and weight's gradients and summed over the tokens into grad_bias [V]
  (the weight's dtype, whether or not a bias was given).

Nothing of size T x V is allocated: the kernels make the logits one 128 x 128 block at a time
(csrc/kernels/linear_cross_entropy*.cpp). The forward op's autograd treats ``logits_max`` as the constant the
sums are shifted by (as logsumexp does): its statistics are differentiable through ``lse = logits_max +
log(sum_exp)``, ``target_logit`` and ``logit_sum``, which is how every loss below uses them.

``linear_cross_entropy(...)`` and ``LinearCrossEntropyLoss`` take Liger's ``LigerFusedLinearCrossEntropyLoss``
arguments, so a model switches by import.
"""

from __future__ import annotations

import torch

REDUCTIONS = ("mean", "sum", "none")
# the forward op's arguments after hidden, weight, target (op_proto/cross_entropy/linear_cross_entropy.json) and
# their defaults
_OPTIONAL_ARGS = (None, None, 0, 0.0)


def _setup_context(ctx, inputs, output):
    hidden, weight, target = inputs[:3]
    bias, class_weight, ctx.vocab_start, ctx.softcap = (*inputs[3:], *_OPTIONAL_ARGS[len(inputs) - 3 :])
    ctx.has_bias = bias is not None
    logits_max, sum_exp = output[0], output[1]
    ctx.save_for_backward(hidden, weight, target, logits_max, sum_exp, bias, class_weight)


def _backward(ctx, g_max, g_sum, g_target, g_logit_sum):
    hidden, weight, target, logits_max, sum_exp, bias, class_weight = ctx.saved_tensors
    zeros = torch.zeros_like(sum_exp)
    # d sum_exp / d logit = exp(logit - max) = p * sum_exp, with max held constant (g_max is not propagated)
    softmax = zeros if g_sum is None else g_sum * sum_exp
    lse = logits_max + torch.log(sum_exp)
    grad_hidden, grad_weight, grad_bias = torch.ops.custom.linear_cross_entropy_grad(
        hidden,
        weight,
        target,
        lse,
        softmax,
        zeros if g_target is None else -g_target,
        zeros if g_logit_sum is None else -g_logit_sum,
        bias,
        class_weight,
        ctx.vocab_start,
        ctx.softcap,
    )
    return grad_hidden, grad_weight, None, grad_bias if ctx.has_bias else None, None, None, None


torch.library.register_autograd("custom::linear_cross_entropy", _backward, setup_context=_setup_context)


def _check(name: str, value, ok: bool, expected: str) -> None:
    if not ok:
        raise ValueError(f"linear_cross_entropy: {name} must be {expected}, got {value!r}")


def _checked_target(target, vocab: int, ignore_index: int, options: dict) -> torch.Tensor:
    """target flattened to int64 [T], the options and (eager only: the check reads values) the ids checked."""
    _check("reduction", options["reduction"], options["reduction"] in REDUCTIONS, "one of 'mean', 'sum', 'none'")
    _check("label_smoothing", options["label_smoothing"], 0.0 <= options["label_smoothing"] <= 1.0, "in [0, 1]")
    _check("lse_square_scale", options["lse_square_scale"], options["lse_square_scale"] >= 0.0, ">= 0")
    _check("softcap", options["softcap"], options["softcap"] is None or options["softcap"] > 0, "None or > 0")
    if target.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"linear_cross_entropy: target must be int64 or int32, got {target.dtype}")
    t = target.reshape(-1).to(torch.int64)
    bad = (t != ignore_index) & ((t < 0) | (t >= vocab))
    # under torch.compile the kernel takes such a target as outside the vocabulary (its target logit is 0)
    if not torch.compiler.is_compiling() and t.numel() and bool(bad.any()):
        raise ValueError(
            f"linear_cross_entropy: target must be in [0, {vocab}) or ignore_index ({ignore_index}), "
            f"got {int(t[bad][0])}"
        )
    return t


def _token_losses(lse, target_logit, logit_sum, weights, vocab: int, label_smoothing: float, lse_square_scale: float):
    """Per token: the cross-entropy with label smoothing as F.cross_entropy defines it with class weights, and the
    z-loss (unweighted, as Liger's), each 0 where ignored. ``weights``: (the target's class weight, 0 where ignored;
    the sum of the class weights), or None (weight 1, ``keep`` the mask), then ``logit_sum`` is weighed alike."""
    target_weight, weight_sum, keep = weights
    # w_y (1 - eps) (lse - x_y) + eps / V (sum_c w_c lse - sum_c w_c x_c)
    loss = target_weight * (1.0 - label_smoothing) * (lse - target_logit)
    if label_smoothing:
        loss = loss + (label_smoothing / vocab) * (weight_sum * lse - logit_sum) * keep
    z = lse_square_scale * lse.square() * keep if lse_square_scale else torch.zeros_like(lse)
    return loss, z


def _class_weights(target, keep, vocab: int, ce_weight):
    """(target weight per token, their class weights' sum, keep) for _token_losses; without class weights every
    class weighs 1."""
    if ce_weight is None:
        return keep, float(vocab), keep
    return ce_weight[target.clamp(0, max(vocab - 1, 0))] * keep, ce_weight.sum(), keep


def _reduced(loss, z, weights, reduction: str, shape):
    """'mean': the cross-entropy over the ignored-free tokens' target weights (their count without class weights),
    the z-loss over their count (Liger's); a zero divisor (every token ignored) divides by 1, so the mean is 0."""
    target_weight, _, keep = weights
    if reduction == "none":
        return (loss + z).reshape(shape), z.reshape(shape)
    if reduction == "sum":
        return loss.sum() + z.sum(), z.sum()
    total = target_weight.sum()
    z_mean = z.sum() / keep.sum().clamp(min=1.0)
    return loss.sum() / torch.where(total == 0, torch.ones_like(total), total) + z_mean, z_mean


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    ce_weight: torch.Tensor | None = None,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale: float = 0.0,
    softcap: float | None = None,
    reduction: str = "mean",
    return_z_loss: bool = False,
):
    """Cross-entropy of ``hidden @ weight.T + bias`` against ``target`` without making the logits.

    hidden [..., H] and weight [V, H] in one float dtype, bias [V] in it too, target [...] of token ids (int64 or
    int32); fp32 accumulation whatever the dtype. ``ce_weight`` [V]: class weights as ``F.cross_entropy``'s
    ``weight`` (any float dtype, used in fp32). ``ignore_index`` tokens add nothing; ``label_smoothing`` mixes in the
    uniform distribution as ``F.cross_entropy`` does; ``lse_square_scale`` adds the z-loss ``scale * lse**2`` per
    token (not weighted, as Liger's); ``softcap`` applies ``softcap * tanh(logit / softcap)`` first. ``reduction``:
    mean (the cross-entropy over the sum of the counted targets' class weights, their count without; the z-loss
    over their count; 0 when every token is ignored or the weights sum to 0, never NaN), sum, or none (one loss per
    token, target's shape). Returns the loss, or ``(loss, z_loss)`` with ``return_z_loss`` (z_loss reduced alike,
    already part of the loss). Every value comes back in fp32.
    """
    if ce_weight is not None:
        _check("ce_weight", ce_weight.dtype, ce_weight.is_floating_point(), "a floating-point tensor")
        ce_weight = ce_weight.to(torch.float32)
    options = dict(
        reduction=reduction, label_smoothing=label_smoothing, lse_square_scale=lse_square_scale, softcap=softcap
    )
    vocab = weight.shape[0] if weight.dim() == 2 else 0
    t = _checked_target(target, vocab, ignore_index, options)
    h = hidden.reshape(-1, hidden.shape[-1]) if hidden.dim() != 2 else hidden
    stats = torch.ops.custom.linear_cross_entropy(h, weight, t, bias, ce_weight, 0, float(softcap or 0.0))
    loss, z = loss_from_statistics(
        stats, t, vocab, ignore_index, float(label_smoothing), lse_square_scale, reduction, target.shape, ce_weight
    )
    return (loss, z) if return_z_loss else loss


def loss_from_statistics(
    stats,
    target,
    vocab: int,
    ignore_index: int,
    label_smoothing: float,
    lse_square_scale: float,
    reduction,
    shape,
    ce_weight=None,
):
    """(loss, z_loss) from the forward op's four statistics of the whole vocabulary (logit_sum weighed by
    ``ce_weight`` when given, fp32 [V]) and the int64 targets [T]: linear_cross_entropy's composition (torch ops on
    [T] vectors), `shape` the loss's for reduction 'none'."""
    logits_max, sum_exp, target_logit, logit_sum = stats
    lse = logits_max + torch.log(sum_exp)
    keep = (target != ignore_index).to(lse.dtype)
    weights = _class_weights(target, keep, vocab, ce_weight)
    loss, z = _token_losses(lse, target_logit, logit_sum, weights, vocab, label_smoothing, lse_square_scale)
    return _reduced(loss, z, weights, reduction, shape)


class LinearCrossEntropyLoss(torch.nn.Module):
    """Liger's ``LigerFusedLinearCrossEntropyLoss`` interface: ``forward(lin_weight, _input, target, bias=None)``."""

    def __init__(
        self,
        ce_weight: torch.Tensor | None = None,
        ignore_index: int = -100,
        lse_square_scale: float = 0.0,
        label_smoothing: float = 0.0,
        reduction: str = "mean",
        softcap: float | None = None,
        return_z_loss: bool = False,
        accum_dtype: torch.dtype | None = None,
    ):
        super().__init__()
        _check("accum_dtype", accum_dtype, accum_dtype in (None, torch.float32), "None or torch.float32 (always fp32)")
        self.options = dict(
            ce_weight=ce_weight,
            ignore_index=ignore_index,
            lse_square_scale=lse_square_scale,
            label_smoothing=label_smoothing,
            reduction=reduction,
            softcap=softcap,
            return_z_loss=return_z_loss,
        )

    def forward(self, lin_weight, _input, target, bias=None):
        return linear_cross_entropy(_input, lin_weight, target, bias, **self.options)
