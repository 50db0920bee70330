"""Independent float64 NumPy references (goldens) of the RMSNorm (rms_norm, add_rms_norm and their grads)
family, as rope_reference.py: no torch,
no compiled code, NumPy in, float64 out; formulas as torch_npu and Hugging Face transformers compute them."""

from __future__ import annotations

import numpy as np


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


# ---------------------------------------------------------------- RMSNorm (docs/architecture.md, "RMSNorm")
# float64 references of torch_npu npu_rms_norm / npu_add_rms_norm and their gradients. gamma's dims
# are x's trailing dims (the normalized dims, N elements); every sum runs over those dims.
#   rstd = 1/sqrt(mean(x^2) + eps)  (keepdim),  y = x * rstd * gamma
#   dx = rstd*dy*g - x*rstd^3*sum(dy*g*x)/N,  dgamma = sum over the leading dims of dy*x*rstd
#   add_rms_norm: x = x1 + x2 (exact here), (y, rstd) = rms_norm(x); its backward adds dx_out, the
#   gradient reaching the x output, to dx, and dx1 = dx2 = dx.


def _norm_axes(x: np.ndarray, gamma: np.ndarray) -> tuple[int, ...]:
    k = gamma.ndim
    if k < 1 or x.shape[x.ndim - k :] != gamma.shape:
        raise ValueError(f"gamma of shape {gamma.shape} must be the trailing dims of x of shape {x.shape}")
    return tuple(range(x.ndim - k, x.ndim))


def rms_norm(x, gamma, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(y, rstd) of RMSNorm over gamma's trailing dims, rstd with keepdim shape (float64)."""
    x, gamma = _f64(x), _f64(gamma)
    axes = _norm_axes(x, gamma)
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon)
    return x * rstd * gamma, rstd


def rms_norm_backward(dy, x, gamma, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dgamma) of y = rms_norm(x, gamma) for upstream dy, derived by hand (rstd recomputed in float64)."""
    dy, x, gamma = _f64(dy), _f64(x), _f64(gamma)
    axes = _norm_axes(x, gamma)
    n = gamma.size
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon)
    dg = dy * gamma
    dx = rstd * dg - x * rstd**3 * np.sum(dg * x, axis=axes, keepdims=True) / n
    dgamma = np.sum(dy * x * rstd, axis=tuple(range(x.ndim - gamma.ndim)))
    return dx, dgamma.reshape(gamma.shape)


def add_rms_norm(x1, x2, gamma, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, rstd, x) with x = x1 + x2 and (y, rstd) = rms_norm(x, gamma, epsilon) (float64)."""
    x = _f64(x1) + _f64(x2)
    y, rstd = rms_norm(x, gamma, epsilon)
    return y, rstd, x


def add_rms_norm_backward(
    dy, dx_out, x1, x2, gamma, epsilon: float = 1e-6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx1, dx2, dgamma): dx1 = dx2 = rms_norm's dx at x = x1 + x2, plus dx_out (the x output's gradient)."""
    dx, dgamma = rms_norm_backward(dy, _f64(x1) + _f64(x2), gamma, epsilon)
    dx = dx + _f64(dx_out)
    return dx, dx.copy(), dgamma


# gemma_rms_norm (torch_npu npu_gemma_rms_norm, HF GemmaRMSNorm): rms_norm with the weight (1 + gamma).
def gemma_rms_norm(x, gamma, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(y, rstd) of y = x * rstd * (1 + gamma) (float64)."""
    return rms_norm(x, 1.0 + _f64(gamma), epsilon)


def gemma_rms_norm_backward(dy, x, gamma, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(dx, dgamma) of gemma_rms_norm: rms_norm's with the weight 1 + gamma (d(1 + gamma)/dgamma = 1)."""
    return rms_norm_backward(dy, x, 1.0 + _f64(gamma), epsilon)


# gated_rms_norm (HF Qwen3NextRMSNormGated, Qwen3_5RMSNormGated): y = rms_norm(x, gamma) * silu(z),
# z (the gate) of x's shape. Backward, with s = sigmoid(z) and silu'(z) = s * (1 + z * (1 - s)):
#   dx, dgamma = rms_norm_backward(dy * silu(z), x, gamma),  dz = dy * x * rstd * gamma * silu'(z)
def sigmoid(z) -> np.ndarray:
    """1 / (1 + exp(-z)) without overflow: exp of -|z| only."""
    z = _f64(z)
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0, e) / (1.0 + e)


def _gate(x, z) -> tuple[np.ndarray, np.ndarray]:
    x, z = _f64(x), _f64(z)
    if z.shape != x.shape:
        raise ValueError(f"z of shape {z.shape} must have x's shape {x.shape}")
    return z, sigmoid(z)


def gated_rms_norm(x, gamma, z, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """(y, rstd) of y = x * rstd * gamma * silu(z) (float64)."""
    z, s = _gate(x, z)
    y, rstd = rms_norm(x, gamma, epsilon)
    return y * z * s, rstd


def gated_rms_norm_backward(dy, x, gamma, z, epsilon: float = 1e-6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dgamma, dz) of gated_rms_norm for upstream dy (float64)."""
    z, s = _gate(x, z)
    dy = _f64(dy)
    dx, dgamma = rms_norm_backward(dy * z * s, x, gamma, epsilon)
    normed, _ = rms_norm(x, gamma, epsilon)
    return dx, dgamma, dy * normed * s * (1.0 + z * (1.0 - s))
