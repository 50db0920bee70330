"""The float64 NumPy golden of the fused linear cross-entropy: the logits made whole (the golden may), then the
statistics, the loss and its gradients exactly as the definitions read. Independent of torch and of the kernels."""

from __future__ import annotations

import numpy as np


def logits_of(hidden, weight, softcap: float = 0.0) -> np.ndarray:
    """hidden [T, H] @ weight [V, H]^T in float64, then softcap * tanh(x / softcap) when softcap > 0."""
    x = np.asarray(hidden, np.float64) @ np.asarray(weight, np.float64).T
    return softcap * np.tanh(x / softcap) if softcap > 0 else x


def linear_cross_entropy_reference(hidden, weight, target, vocab_start_index: int = 0, softcap: float = 0.0):
    """The forward op's four per-token statistics: max, sum of exp(logit - max), the target's logit (0 outside the
    shard), the sum of the logits."""
    x = logits_of(hidden, weight, softcap)
    t = np.asarray(target, np.int64) - vocab_start_index
    if x.shape[1] == 0:
        zero = np.zeros(x.shape[0])
        return np.full(x.shape[0], -np.inf), zero, zero, zero
    m = x.max(axis=1)
    inside = (t >= 0) & (t < x.shape[1])
    picked = np.where(inside, x[np.arange(x.shape[0]), np.clip(t, 0, x.shape[1] - 1)], 0.0)
    return m, np.exp(x - m[:, None]).sum(axis=1), picked, x.sum(axis=1)


def loss_reference(
    hidden,
    weight,
    target,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale: float = 0.0,
    softcap: float = 0.0,
    reduction: str = "mean",
):
    """(loss, z_loss) as ascendc_ops.linear_cross_entropy defines them, and the gradient of the loss (as reduced)
    with respect to the logits, G [T, V], so that d hidden = G @ weight and d weight = G^T @ hidden (times softcap's
    1 - tanh^2, folded into G)."""
    x = logits_of(hidden, weight, softcap)
    t = np.asarray(target, np.int64)
    n, v = x.shape
    keep = t != ignore_index
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    logp = x - lse[:, None]
    rows = np.arange(n)
    nll = -logp[rows, np.where(keep, t, 0)]
    smooth = -logp.mean(axis=1)
    per = np.where(keep, (1 - label_smoothing) * nll + label_smoothing * smooth, 0.0)
    z = np.where(keep, lse_square_scale * lse**2, 0.0)
    count = max(int(keep.sum()), 1)
    scale = {"mean": 1.0 / count, "sum": 1.0, "none": 1.0}[reduction]
    p = np.exp(logp)
    onehot = np.zeros_like(x)
    onehot[rows[keep], t[keep]] = 1.0
    g = (1 + 2 * lse_square_scale * lse)[:, None] * p - (1 - label_smoothing) * onehot - label_smoothing / v
    g = np.where(keep[:, None], g, 0.0) * scale
    if softcap > 0:
        raw = np.asarray(hidden, np.float64) @ np.asarray(weight, np.float64).T
        g = g * (1 - np.tanh(raw / softcap) ** 2)
    total = per + z
    if reduction == "mean":
        return total.sum() / count, z.sum() / count, g
    if reduction == "sum":
        return total.sum(), z.sum(), g
    return total, z, g


def grads_reference(hidden, weight, g):
    """d hidden = G @ weight, d weight = G^T @ hidden (float64)."""
    h, w = np.asarray(hidden, np.float64), np.asarray(weight, np.float64)
    return g @ w, g.T @ h


def logits_grad_reference(
    hidden, weight, target, lse, grad_softmax, grad_target, grad_uniform, vocab_start_index=0, softcap=0.0
):
    """The grad op's logits gradient G [T, V] as its definition reads: a p - b onehot(target) - c per token with
    p = exp(logit - lse) (lse given), times softcap's 1 - tanh^2 of the raw logit / softcap."""
    x = logits_of(hidden, weight, softcap)
    n, v = x.shape
    t = np.asarray(target, np.int64) - vocab_start_index
    p = np.exp(x - np.asarray(lse, np.float64)[:, None])
    onehot = np.zeros_like(x)
    inside = (t >= 0) & (t < v)
    onehot[np.arange(n)[inside], t[inside]] = 1.0
    a, b, c = (np.asarray(k, np.float64)[:, None] for k in (grad_softmax, grad_target, grad_uniform))
    g = a * p - b * onehot - c
    if softcap > 0:
        raw = np.asarray(hidden, np.float64) @ np.asarray(weight, np.float64).T
        g = g * (1 - np.tanh(raw / softcap) ** 2)
    return g
