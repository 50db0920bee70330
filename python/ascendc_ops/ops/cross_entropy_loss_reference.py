"""Independent float64 NumPy reference (golden) of cross_entropy_loss and its gradient: no torch, no compiled
code, NumPy in, float64 out. Formulas as torch_npu documents npu_cross_entropy_loss (Ascend/op-plugin
docs/zh/custom_APIs/torch_npu/torch_npu-npu_cross_entropy_loss.md), label smoothing with class weights as
torch.nn.functional.cross_entropy defines it, and the z-loss as CANN's aclnnCrossEntropyLossGrad formula has it
(ops/cross_entropy.py says how)."""

from __future__ import annotations

import numpy as np


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _rows(target, ignore_index: int, classes: int):
    t = np.asarray(target, dtype=np.int64).reshape(-1)
    counted = t != ignore_index
    if np.any(counted & ((t < 0) | (t >= classes))):
        raise ValueError("target values must be in [0, C) or ignore_index")
    return np.where(counted, t, 0), counted.astype(np.float64)


def log_softmax(x) -> tuple[np.ndarray, np.ndarray]:
    """(log_prob, lse) of logits [N, C]: lse = max + log(sum(exp(x - max)))."""
    x = _f64(x)
    if x.shape[1] == 0 or x.shape[0] == 0:
        return x.copy(), np.zeros(x.shape[0])
    m = x.max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lse = m[:, 0] + np.log(np.exp(x - m).sum(axis=1))
    return x - lse[:, None], lse


def _reduce(v: np.ndarray, reduction: str, denominator: float) -> np.ndarray:
    if reduction == "none":
        return v
    total = v.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.array([total / denominator if reduction == "mean" else total])


def cross_entropy_loss(
    x,
    target,
    weight=None,
    reduction: str = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale_for_zloss: float = 0.0,
    return_zloss: bool = False,
):
    """(loss, log_prob, zloss, lse_for_zloss), float64; zloss / lse_for_zloss are None where the op returns [0].
    Per row l_n = (1 - ls) w[t] (-log_prob[t]) + ls / C sum_c w[c] (-log_prob[c]) on counted rows (target !=
    ignore_index), z_n = s lse^2; 'mean' divides sum l by sum w[t] and sum z by the count of counted rows."""
    log_prob, lse = log_softmax(x)
    n, c = log_prob.shape
    t, counted = _rows(target, ignore_index, c)
    w = np.ones(c) if weight is None else _f64(weight)
    wt = w[t] * counted
    nll = -log_prob[np.arange(n), t] * counted if n else np.zeros(0)
    smooth = -(log_prob * w[None, :]).sum(axis=1) * counted
    rows = (1.0 - label_smoothing) * wt * nll + label_smoothing / c * smooth
    s = lse_square_scale_for_zloss
    z = s * lse**2 * counted if s != 0.0 else np.zeros(n)
    zloss = _reduce(z, reduction, counted.sum())
    loss = _reduce(rows, reduction, wt.sum()) + (zloss if s != 0.0 else 0.0)
    return loss, log_prob, (zloss if return_zloss else None), (lse if s != 0.0 else None)


def cross_entropy_loss_backward(
    grad_loss,
    log_prob,
    target,
    weight=None,
    grad_zloss=None,
    lse_for_zloss=None,
    reduction: str = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    lse_square_scale_for_zloss: float = 0.0,
) -> np.ndarray:
    """x_grad [N, C] of the loss above, derived by hand: with p = exp(log_prob) and g the loss's gradient per row,
    d l_n / d x_j = (1 - ls) w[t] (p_j - [j = t]) + ls / C (p_j sum_c w[c] - w[j]), d z_n / d x_j = 2 s lse p_j;
    'mean' divides the first by sum w[t] and the second by the count (a sum of 0 counts as 1: every row ignored
    has gradient 0); the z part takes g + grad_zloss."""
    log_prob = _f64(log_prob)
    n, c = log_prob.shape
    t, counted = _rows(target, ignore_index, c)
    w = np.ones(c) if weight is None else _f64(weight)
    wt = w[t] * counted
    g = np.broadcast_to(_f64(grad_loss).reshape(-1), (n,))
    mean = reduction == "mean"
    d = (wt.sum() or 1.0) if mean else 1.0
    p = np.exp(log_prob)
    onehot = np.zeros((n, c))
    onehot[np.arange(n), t] = 1.0
    ls = label_smoothing
    grad = (g * (1.0 - ls) * wt / d)[:, None] * (p - onehot)
    grad += (g * ls / c * counted / d)[:, None] * (p * w.sum() - w[None, :])
    s = lse_square_scale_for_zloss
    if s != 0.0:
        gz = g + (np.broadcast_to(_f64(grad_zloss).reshape(-1), (n,)) if grad_zloss is not None else 0.0)
        dz = (counted.sum() or 1.0) if mean else 1.0
        grad += (2.0 * s * _f64(lse_for_zloss) * counted * gz / dz)[:, None] * p
    return grad
