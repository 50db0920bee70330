"""The optimizer family's float64 NumPy references: torch.optim.AdamW's update (decoupled weight decay, bias
corrections from the step count, amsgrad, maximize) and the p-norms of foreach_norm, written from the formulas
and independent of the kernels and of torch."""

from __future__ import annotations

import numpy as np


def adam_w(var, m, v, grad, max_v=None, *, lr, beta1, beta2, weight_decay, eps, step, amsgrad=False, maximize=False):
    """One AdamW step in float64: (var, m, v, max_v) after it (max_v None without amsgrad)."""
    var, m, v, g = (np.asarray(a, dtype=np.float64) for a in (var, m, v, grad))
    if maximize:
        g = -g
    var = var * (1.0 - lr * weight_decay)
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    second = v
    if amsgrad:
        max_v = np.maximum(np.asarray(max_v, dtype=np.float64), v)
        second = max_v
    denom = np.sqrt(second) / np.sqrt(1.0 - beta2**step) + eps
    var = var - lr / (1.0 - beta1**step) * m / denom
    return var, m, v, (max_v if amsgrad else None)


def foreach_norm(tensors, p):
    """The p-norm (1, 2 or inf) of each array, in float64 (0 for an empty one)."""
    out = []
    for x in tensors:
        a = np.abs(np.asarray(x, dtype=np.float64)).ravel()
        if a.size == 0:
            out.append(0.0)
        elif p == 1:
            out.append(float(a.sum()))
        elif p == 2:
            out.append(float(np.sqrt((a * a).sum())))
        else:
            out.append(float(a.max()))
    return np.array(out)


def clip_by_total_norm(tensors, norms, max_norm, p):
    """foreach_clip_by_total_norm in float64: (the tensors scaled, the total of ``norms``), torch's clip_grad_norm_
    coefficient min(1, max_norm / (total + 1e-6)) (NaN stays NaN, as torch's clamp keeps it)."""
    n = np.asarray([float(np.asarray(x, dtype=np.float64).reshape(-1)[0]) for x in norms], dtype=np.float64)
    if p == 1:
        total = float(n.sum())
    elif p == 2:
        total = float(np.sqrt((n * n).sum()))
    else:
        total = float(n.max()) if n.size else 0.0
        total = float("nan") if np.isnan(n).any() else total
    coef = max_norm / (total + 1e-6)
    coef = coef if np.isnan(coef) else min(coef, 1.0)
    return [np.asarray(x, dtype=np.float64) * coef for x in tensors], total
