"""The optimizer ops: thin wrappers over

- ``torch.ops.custom.apply_adam_w(var, m, v, grad, max_grad_norm=None, *, lr, beta1, beta2, weight_decay, eps,
  step, amsgrad, maximize)``: one AdamW step of torch.optim.AdamW (decoupled weight decay, bias corrections
  from ``step``, this update's count), var / m / v (and, with amsgrad, v's running maximum ``max_grad_norm``, as
  torch_npu names it) updated in place in one pass. var and grad fp32, fp16 or bf16; the states fp32.
- ``torch.ops.custom.foreach_adam_w(var[], m[], v[], grad[], max_grad_norm[], master[], *, ...)``: the same step over
  lists of tensors of any sizes in one launch; the tiling deals runs of elements, not tensors, to the cores. With
  ``master`` (fp32 copies of fp16 / bf16 vars, apex FusedAdam's master_weights) the update reads the master in var's
  place, updates it in fp32 and writes var as its rounding (to nearest even): var is written, never read.
- ``torch.ops.custom.foreach_norm(x[], scalar=2.0) -> Tensor[]``: cann-bench's foreach_norm, torch._foreach_norm's
  result: the p-norm (p = scalar: 1, 2 or inf) of each tensor in one launch, accumulated in fp32, in x's dtype.
- ``torch.ops.custom.foreach_clip_by_total_norm(x[], norms[], total_norm, max_norm, norm_type=2.0,
  error_if_nonfinite=False)``: clipping's second launch: the total of ``norms`` (their 1-norm, 2-norm or max) and
  ``min(1, max_norm / (total + 1e-6))`` formed on the device, every x scaled by it in place, the total written into
  ``total_norm`` (one element, x's dtype). With error_if_nonfinite a non-finite total leaves x unscaled.

The schemas and the attribute defaults come from op_proto/optimizer/*.json; the argument rules (shapes,
dtypes, torch.optim.AdamW's hyperparameter ranges) from tiling/optimizer_problem.h, for the CPU, NPU and Meta
kernels alike. No autograd: an optimizer step is not differentiated.
"""

from __future__ import annotations

import torch


def apply_adam_w_(var, m, v, grad, max_grad_norm=None, **hyper):
    """One AdamW step in place; returns (var, m, v). ``hyper``: the op's attributes by name (lr, beta1, beta2,
    weight_decay, eps, step, amsgrad, maximize); those left out take the prototype's defaults."""
    torch.ops.custom.apply_adam_w(var, m, v, grad, max_grad_norm, **hyper)
    return var, m, v


def foreach_adam_w_(var, m, v, grad, max_grad_norm=(), master=(), **hyper):
    """One AdamW step over lists of tensors in one launch, in place; returns (var, m, v). Every var of one dtype;
    ``max_grad_norm`` one tensor per var with amsgrad, else empty; ``master`` an fp32 copy per fp16 / bf16 var
    (updated, var set to its rounding), or empty. ``hyper`` as apply_adam_w_'s."""
    if len(var) == 0 and len(m) == 0 and len(v) == 0 and len(grad) == 0:
        return var, m, v  # no tensor: nothing for the dispatcher to pick a backend by, nothing to do
    lists = (var, m, v, grad, max_grad_norm, master)
    torch.ops.custom.foreach_adam_w(*(list(t) for t in lists), **hyper)
    return var, m, v


def foreach_norm(tensors, ord=2.0) -> list[torch.Tensor]:
    """torch._foreach_norm(tensors, ord) for ord 1, 2 or inf in one launch: a 0-dim norm per tensor, in its dtype
    (accumulated in fp32). Every tensor of one dtype."""
    tensors = list(tensors)
    if not tensors:
        return []  # no tensor: nothing for the dispatcher to pick a backend by
    return list(torch.ops.custom.foreach_norm(tensors, float(ord)))


def foreach_clip_by_total_norm_(x, norms, max_norm, norm_type=2.0, error_if_nonfinite=False, total_norm=None):
    """Scales every tensor of ``x`` in place by min(1, max_norm / (total + 1e-6)), total the ``norm_type`` norm of
    ``norms`` (foreach_norm's outputs: x's own, and those of any other lists clipped with x), in one launch; returns
    the total (a 0-dim tensor in x's dtype, or ``total_norm``'s, which receives it). No host reads the norms."""
    x, norms = list(x), list(norms)
    if total_norm is None:
        like = x[0] if x else norms[0] if norms else None
        if like is None:
            raise ValueError("foreach_clip_by_total_norm: x and norms are both empty, got no tensor to clip by")
        total_norm = torch.empty((), dtype=like.dtype, device=like.device)
    torch.ops.custom.foreach_clip_by_total_norm(
        x, norms, total_norm, float(max_norm), norm_type=float(norm_type), error_if_nonfinite=bool(error_if_nonfinite)
    )
    return total_norm
