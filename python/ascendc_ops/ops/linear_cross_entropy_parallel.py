"""The fused linear cross-entropy with the vocabulary split across a process group (tensor parallelism): each
rank's kernel folds its shard of weight (and of the bias and class weights), one max and one sum all-reduce make the
whole vocabulary's statistics, and each rank's backward launch takes the global lse."""

from __future__ import annotations

import torch

from .linear_cross_entropy import _checked_target, _class_weights, _reduced, _token_losses


class _VocabParallel(torch.autograd.Function):
    """grad_hidden is summed across the group; grad_weight and grad_bias stay the rank's shard's."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, ce_weight, shard, group, options):
        import torch.distributed as dist

        start, vocab = shard
        ignore_index, eps, zscale, softcap, reduction = options
        local_weight = None if ce_weight is None else ce_weight[start : start + weight.shape[0]]
        logits_max, sum_exp, target_logit, logit_sum = torch.ops.custom.linear_cross_entropy(
            hidden, weight, target, bias, local_weight, start, softcap
        )
        top = logits_max.clone()
        dist.all_reduce(top, dist.ReduceOp.MAX, group=group)
        sums = torch.stack([sum_exp * torch.exp(logits_max - top), target_logit, logit_sum])
        dist.all_reduce(sums, group=group)
        lse = top + torch.log(sums[0])
        keep = (target != ignore_index).to(lse.dtype)
        weights = _class_weights(target, keep, vocab, ce_weight)
        loss, z = _token_losses(lse, sums[1], sums[2], weights, vocab, eps, zscale)
        loss, z = _reduced(loss, z, weights, reduction, target.shape)
        ctx.save_for_backward(hidden, weight, bias, target, local_weight, lse, weights[0], keep)
        ctx.weight_sum = weights[1]
        ctx.args = (start, vocab, group, eps, zscale, softcap, reduction)
        return loss, z

    @staticmethod
    def backward(ctx, grad, _grad_z):
        import torch.distributed as dist

        hidden, weight, bias, target, local_weight, lse, target_weight, keep = ctx.saved_tensors
        start, vocab, group, eps, zscale, softcap, reduction = ctx.args
        # the cross-entropy's and the z-loss's scales per token (their 'mean' divisors differ: _reduced)
        if reduction == "none":
            g_ce = g_z = grad.reshape(-1)
        elif reduction == "sum":
            g_ce = g_z = grad.expand_as(lse)
        else:
            total = target_weight.sum()
            g_ce = (grad / torch.where(total == 0, torch.ones_like(total), total)).expand_as(lse)
            g_z = (grad / keep.sum().clamp(min=1.0)).expand_as(lse)
        # d loss / d lse, d loss / d target logit (negated), d loss / d weighed logit sum (negated): _token_losses
        smooth = g_ce * (eps / vocab) * keep
        grad_softmax = g_ce * target_weight * (1 - eps) + smooth * ctx.weight_sum + g_z * 2 * zscale * lse * keep
        grad_hidden, grad_weight, grad_bias = torch.ops.custom.linear_cross_entropy_grad(
            hidden,
            weight,
            target,
            lse,
            grad_softmax,
            g_ce * target_weight * (1 - eps),
            smooth,
            bias,
            local_weight,
            start,
            softcap,
        )
        dist.all_reduce(grad_hidden, group=group)
        return grad_hidden, grad_weight, grad_bias if bias is not None else None, *([None] * 5)


def vocab_parallel_linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    vocab_start_index: int,
    vocab_size: int,
    group=None,
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
    """linear_cross_entropy with the vocabulary split across ``group`` (tensor parallelism): this rank holds weight
    rows ``vocab_start_index ... + weight.shape[0]`` of ``vocab_size`` and the same rows of ``bias``;
    ``ce_weight`` is the whole vocabulary's [vocab_size] on every rank, as are hidden and target. Every rank gets
    the whole loss; hidden's gradient is summed over the group, weight's and bias's are this shard's."""
    options = dict(
        reduction=reduction, label_smoothing=label_smoothing, lse_square_scale=lse_square_scale, softcap=softcap
    )
    t = _checked_target(target, vocab_size, ignore_index, options)
    if ce_weight is not None:
        ok = ce_weight.is_floating_point() and ce_weight.shape == (vocab_size,)
        if not ok:
            raise ValueError(
                f"vocab_parallel_linear_cross_entropy: ce_weight must be a floating-point [{vocab_size}] tensor "
                f"(the whole vocabulary's), got {ce_weight.dtype} {list(ce_weight.shape)}"
            )
        ce_weight = ce_weight.to(torch.float32)
    h = hidden.reshape(-1, hidden.shape[-1]) if hidden.dim() != 2 else hidden
    shard = (int(vocab_start_index), int(vocab_size))
    knobs = (ignore_index, float(label_smoothing), float(lse_square_scale), float(softcap or 0.0), reduction)
    loss, z = _VocabParallel.apply(h, weight, bias, t, ce_weight, shard, group, knobs)
    if reduction == "none":
        loss, z = loss.reshape(target.shape), z.reshape(target.shape)
    return (loss, z.detach()) if return_z_loss else loss
