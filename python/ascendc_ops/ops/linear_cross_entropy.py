"""Fused linear cross-entropy: the LM head and its loss without the logits.

- ``torch.ops.custom.linear_cross_entropy(hidden [T, H], weight [V, H], target [T] int64, vocab_start_index=0,
  softcap=0.0) -> (logits_max, sum_exp, target_logit, logit_sum)``, each fp32 [T]: per token, over the logits
  ``hidden @ weight.T`` of this vocabulary shard (softcapped: ``softcap * tanh(logit / softcap)``), their max, the
  sum of ``exp(logit - max)``, the target's logit (0 when the target is outside the shard) and the sum of the
  logits. A shard holds weight rows ``vocab_start_index ...``; shards combine by a max and two sums.
- ``torch.ops.custom.linear_cross_entropy_grad(hidden, weight, target, lse, grad_softmax, grad_target,
  grad_uniform, vocab_start_index=0, softcap=0.0) -> (grad_hidden, grad_weight)``: with ``p = exp(logit - lse)``
  the gradient of the logits is ``grad_softmax * p - grad_target * onehot(target) - grad_uniform`` (per token),
  times softcap's ``1 - tanh^2``, multiplied into hidden's and weight's gradients.

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


def _setup_context(ctx, inputs, output):
    hidden, weight, target = inputs[:3]
    ctx.vocab_start, ctx.softcap = (inputs[3] if len(inputs) > 3 else 0), (inputs[4] if len(inputs) > 4 else 0.0)
    logits_max, sum_exp = output[0], output[1]
    ctx.save_for_backward(hidden, weight, target, logits_max, sum_exp)


def _backward(ctx, g_max, g_sum, g_target, g_logit_sum):
    hidden, weight, target, logits_max, sum_exp = ctx.saved_tensors
    zeros = torch.zeros_like(sum_exp)
    # d sum_exp / d logit = exp(logit - max) = p * sum_exp, with max held constant (g_max is not propagated)
    softmax = zeros if g_sum is None else g_sum * sum_exp
    lse = logits_max + torch.log(sum_exp)
    grad_hidden, grad_weight = torch.ops.custom.linear_cross_entropy_grad(
        hidden,
        weight,
        target,
        lse,
        softmax,
        zeros if g_target is None else -g_target,
        zeros if g_logit_sum is None else -g_logit_sum,
        ctx.vocab_start,
        ctx.softcap,
    )
    return grad_hidden, grad_weight, None, None, None


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


def _token_losses(lse, target_logit, logit_sum, keep, vocab: int, label_smoothing: float, lse_square_scale: float):
    """Per token: the loss (cross-entropy with label smoothing, plus the z-loss) and the z-loss, 0 where ignored."""
    loss = lse - (1.0 - label_smoothing) * target_logit
    if label_smoothing:
        loss = loss - (label_smoothing / vocab) * logit_sum
    z = lse_square_scale * lse.square() * keep if lse_square_scale else torch.zeros_like(lse)
    return loss * keep + z, z


def _reduced(loss, z, keep, reduction: str, shape):
    if reduction == "none":
        return loss.reshape(shape), z.reshape(shape)
    count = keep.sum().clamp(min=1.0) if reduction == "mean" else 1.0
    return loss.sum() / count, z.sum() / count


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
    """Cross-entropy of ``hidden @ weight.T`` against ``target`` without making the logits.

    hidden [..., H] and weight [V, H] in one float dtype, target [...] of token ids (int64 or int32); fp32
    accumulation whatever the dtype. ``ignore_index`` tokens add nothing; ``label_smoothing`` mixes in the uniform
    distribution as ``F.cross_entropy`` does; ``lse_square_scale`` adds the z-loss ``scale * lse**2`` per token;
    ``softcap`` applies ``softcap * tanh(logit / softcap)`` first. ``reduction``: mean over the tokens not ignored
    (0 when every token is ignored, never NaN), sum, or none (one loss per token, target's shape). Returns the
    loss, or ``(loss, z_loss)`` with ``return_z_loss`` (z_loss reduced alike, already part of the loss). Every
    value comes back in fp32.
    """
    _check("bias", "a tensor", bias is None, "None (a bias is not supported yet)")
    _check("ce_weight", "a tensor", ce_weight is None, "None (class weights are not supported yet)")
    options = dict(
        reduction=reduction, label_smoothing=label_smoothing, lse_square_scale=lse_square_scale, softcap=softcap
    )
    vocab = weight.shape[0] if weight.dim() == 2 else 0
    t = _checked_target(target, vocab, ignore_index, options)
    h = hidden.reshape(-1, hidden.shape[-1]) if hidden.dim() != 2 else hidden
    stats = torch.ops.custom.linear_cross_entropy(h, weight, t, 0, float(softcap or 0.0))
    loss, z = loss_from_statistics(
        stats, t, vocab, ignore_index, float(label_smoothing), lse_square_scale, reduction, target.shape
    )
    return (loss, z) if return_z_loss else loss


def loss_from_statistics(
    stats, target, vocab: int, ignore_index: int, label_smoothing: float, lse_square_scale: float, reduction, shape
):
    """(loss, z_loss) from the forward op's four statistics of the whole vocabulary and the int64 targets [T]:
    linear_cross_entropy's composition (torch ops on [T] vectors), `shape` the loss's for reduction 'none'."""
    logits_max, sum_exp, target_logit, logit_sum = stats
    lse = logits_max + torch.log(sum_exp)
    keep = (target != ignore_index).to(lse.dtype)
    loss, z = _token_losses(lse, target_logit, logit_sum, keep, vocab, label_smoothing, lse_square_scale)
    return _reduced(loss, z, keep, reduction, shape)


class _VocabParallel(torch.autograd.Function):
    """The loss over a vocabulary split across a process group: each rank's kernel folds its shard, one max and
    one sum all-reduce make the whole vocabulary's statistics, and each rank's backward launch uses the global
    lse; grad_hidden is summed across the group, grad_weight stays the rank's shard's."""

    @staticmethod
    def forward(ctx, hidden, weight, target, start, vocab, group, ignore_index, eps, zscale, softcap, reduction):
        import torch.distributed as dist

        logits_max, sum_exp, target_logit, logit_sum = torch.ops.custom.linear_cross_entropy(
            hidden, weight, target, start, softcap
        )
        top = logits_max.clone()
        dist.all_reduce(top, dist.ReduceOp.MAX, group=group)
        sums = torch.stack([sum_exp * torch.exp(logits_max - top), target_logit, logit_sum])
        dist.all_reduce(sums, group=group)
        lse = top + torch.log(sums[0])
        keep = (target != ignore_index).to(lse.dtype)
        loss, z = _token_losses(lse, sums[1], sums[2], keep, vocab, eps, zscale)
        loss, z = _reduced(loss, z, keep, reduction, target.shape)
        ctx.save_for_backward(hidden, weight, target, lse, keep)
        ctx.args = (start, vocab, group, eps, zscale, softcap, reduction)
        return loss, z

    @staticmethod
    def backward(ctx, grad, _grad_z):
        import torch.distributed as dist

        hidden, weight, target, lse, keep = ctx.saved_tensors
        start, vocab, group, eps, zscale, softcap, reduction = ctx.args
        g = (
            grad.reshape(-1)
            if reduction == "none"
            else grad / (keep.sum().clamp(min=1.0) if reduction == "mean" else 1)
        )
        g = g * keep
        grad_hidden, grad_weight = torch.ops.custom.linear_cross_entropy_grad(
            hidden, weight, target, lse, g * (1 + 2 * zscale * lse), g * (1 - eps), g * (eps / vocab), start, softcap
        )
        dist.all_reduce(grad_hidden, group=group)
        return grad_hidden, grad_weight, *([None] * 9)


def vocab_parallel_linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    vocab_start_index: int,
    vocab_size: int,
    group=None,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale: float = 0.0,
    softcap: float | None = None,
    reduction: str = "mean",
    return_z_loss: bool = False,
):
    """linear_cross_entropy with the vocabulary split across ``group`` (tensor parallelism): this rank holds weight
    rows ``vocab_start_index ... + weight.shape[0]`` of ``vocab_size``; hidden and target are the same on every rank.
    Every rank gets the whole loss; hidden's gradient is summed over the group, weight's is this shard's."""
    options = dict(
        reduction=reduction, label_smoothing=label_smoothing, lse_square_scale=lse_square_scale, softcap=softcap
    )
    t = _checked_target(target, vocab_size, ignore_index, options)
    h = hidden.reshape(-1, hidden.shape[-1]) if hidden.dim() != 2 else hidden
    loss, z = _VocabParallel.apply(
        h,
        weight,
        t,
        int(vocab_start_index),
        int(vocab_size),
        group,
        ignore_index,
        float(label_smoothing),
        float(lse_square_scale),
        float(softcap or 0.0),
        reduction,
    )
    if reduction == "none":
        loss, z = loss.reshape(target.shape), z.reshape(target.shape)
    return (loss, z.detach()) if return_z_loss else loss


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
