"""The float64 NumPy golden of the fused linear cross-entropy: the logits made whole (the golden may), then the
statistics, the loss and its gradients exactly as the definitions read. Independent of torch and of the kernels."""

from __future__ import annotations

import numpy as np


def scores_of(hidden, weight, bias=None) -> np.ndarray:
    """hidden [T, H] @ weight [V, H]^T + bias [V] in float64."""
    x = np.asarray(hidden, np.float64) @ np.asarray(weight, np.float64).T
    return x if bias is None else x + np.asarray(bias, np.float64)[None, :]


def logits_of(hidden, weight, softcap: float = 0.0, bias=None) -> np.ndarray:
    """The scores, then softcap * tanh(x / softcap) when softcap > 0."""
    x = scores_of(hidden, weight, bias)
    return softcap * np.tanh(x / softcap) if softcap > 0 else x


def softcap_slope(hidden, weight, softcap: float, bias=None):
    """d logit / d score: 1 - tanh^2(score / softcap), or 1 without softcap."""
    return 1 - np.tanh(scores_of(hidden, weight, bias) / softcap) ** 2 if softcap > 0 else 1.0


def linear_cross_entropy_reference(
    hidden, weight, target, vocab_start_index: int = 0, softcap: float = 0.0, bias=None, class_weight=None
):
    """The forward op's four per-token statistics: max, sum of exp(logit - max), the target's logit (0 outside the
    shard), the sum of the logits (each times its class weight when given)."""
    x = logits_of(hidden, weight, softcap, bias)
    t = np.asarray(target, np.int64) - vocab_start_index
    if x.shape[1] == 0:
        zero = np.zeros(x.shape[0])
        return np.full(x.shape[0], -np.inf), zero, zero, zero
    m = x.max(axis=1)
    inside = (t >= 0) & (t < x.shape[1])
    picked = np.where(inside, x[np.arange(x.shape[0]), np.clip(t, 0, x.shape[1] - 1)], 0.0)
    weighed = x if class_weight is None else x * np.asarray(class_weight, np.float64)[None, :]
    return m, np.exp(x - m[:, None]).sum(axis=1), picked, weighed.sum(axis=1)


def loss_reference(
    hidden,
    weight,
    target,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale: float = 0.0,
    softcap: float = 0.0,
    reduction: str = "mean",
    bias=None,
    class_weight=None,
):
    """(loss, z_loss) as ascendc_ops.linear_cross_entropy defines them, and the gradient of the loss (as reduced)
    with respect to the scores, G [T, V], so that d hidden = G @ weight, d weight = G^T @ hidden and d bias = the
    column sums of G (softcap's 1 - tanh^2 folded into G). With class weights w, torch's definition: the token's
    loss is w[y] (1 - eps) (-log p_y) + eps / V sum_c w[c] (-log p_c), 'mean' divides it by the sum of w over the
    counted targets; the z-loss is not weighted and its mean is over their count (Liger's)."""
    x = logits_of(hidden, weight, softcap, bias)
    t = np.asarray(target, np.int64)
    n, v = x.shape
    w = np.ones(v) if class_weight is None else np.asarray(class_weight, np.float64)
    keep = t != ignore_index
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    logp = x - lse[:, None]
    rows = np.arange(n)
    wy = np.where(keep, w[np.where(keep, t, 0)], 0.0)
    nll = -logp[rows, np.where(keep, t, 0)]
    smooth = -(logp * w[None, :]).sum(axis=1) / v
    per = np.where(keep, (1 - label_smoothing) * wy * nll + label_smoothing * smooth, 0.0)
    z = np.where(keep, lse_square_scale * lse**2, 0.0)
    count = max(int(keep.sum()), 1)
    weight_total = wy.sum() if wy.sum() != 0 else 1.0
    ce_scale = {"mean": 1.0 / weight_total, "sum": 1.0, "none": 1.0}[reduction]
    z_scale = {"mean": 1.0 / count, "sum": 1.0, "none": 1.0}[reduction]
    p = np.exp(logp)
    onehot = np.zeros_like(x)
    onehot[rows[keep], t[keep]] = 1.0
    # d per / d x: (1 - eps) w_y (p - onehot) + eps / V (p sum(w) - w); d z / d x: 2 scale lse p
    ce_grad = (1 - label_smoothing) * wy[:, None] * (p - onehot) + label_smoothing / v * (p * w.sum() - w[None, :])
    g = ce_scale * ce_grad + z_scale * (2 * lse_square_scale * lse)[:, None] * p
    g = np.where(keep[:, None], g, 0.0) * softcap_slope(hidden, weight, softcap, bias)
    if reduction == "mean":
        return per.sum() / weight_total + z.sum() / count, z.sum() / count, g
    if reduction == "sum":
        return per.sum() + z.sum(), z.sum(), g
    return per + z, z, g


def grads_reference(hidden, weight, g):
    """d hidden = G @ weight, d weight = G^T @ hidden, d bias = G summed over the tokens (float64)."""
    h, w = np.asarray(hidden, np.float64), np.asarray(weight, np.float64)
    return g @ w, g.T @ h, g.sum(axis=0)


def logits_grad_reference(
    hidden,
    weight,
    target,
    lse,
    grad_softmax,
    grad_target,
    grad_uniform,
    vocab_start_index=0,
    softcap=0.0,
    bias=None,
    class_weight=None,
):
    """The grad op's gradient of the scores G [T, V] as its definition reads: a p - b onehot(target) - c w per token
    with p = exp(logit - lse) (lse given, w the class weights or 1), times softcap's 1 - tanh^2 of score / softcap."""
    x = logits_of(hidden, weight, softcap, bias)
    n, v = x.shape
    t = np.asarray(target, np.int64) - vocab_start_index
    p = np.exp(x - np.asarray(lse, np.float64)[:, None])
    onehot = np.zeros_like(x)
    inside = (t >= 0) & (t < v)
    onehot[np.arange(n)[inside], t[inside]] = 1.0
    a, b, c = (np.asarray(k, np.float64)[:, None] for k in (grad_softmax, grad_target, grad_uniform))
    w = 1.0 if class_weight is None else np.asarray(class_weight, np.float64)[None, :]
    return (a * p - b * onehot - c * w) * softcap_slope(hidden, weight, softcap, bias)
