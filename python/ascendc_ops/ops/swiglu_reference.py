"""Independent float64 NumPy references (goldens) of the SwiGLU (swiglu, swiglu_grad) family, as
rope_reference.py: no torch,
no compiled code, NumPy in, float64 out; formulas as torch_npu and Hugging Face transformers compute them."""

from __future__ import annotations

import numpy as np


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


# ---- SwiGLU (docs/architecture.md, "One op's path: `swiglu`"): torch_npu npu_swiglu / npu_swiglu_backward ----
def _swiglu_halves(x, dim: int) -> tuple[np.ndarray, np.ndarray]:
    x = _f64(x)
    if x.shape[dim] % 2:
        raise ValueError(f"x.shape[{dim}] must be even, got {x.shape[dim]}")
    a, b = np.split(x, 2, axis=dim)
    return a, b


def swiglu(x, dim: int = -1) -> np.ndarray:
    """npu_swiglu: ``silu(A) * B``, A/B the first/second half of x along ``dim``, silu(a) = a / (1 + exp(-a))."""
    a, b = _swiglu_halves(x, dim)
    with np.errstate(over="ignore", invalid="ignore"):
        return a / (1.0 + np.exp(-a)) * b


def swiglu_backward(dy, x, dim: int = -1) -> np.ndarray:
    """dx of ``y = silu(A) * B`` for upstream dy (``dim`` halved), derived by hand, float64:
    with s = sigmoid(A) = 1 / (1 + exp(-A)): silu'(A) = s * (1 + A * (1 - s)),
    dA = dy * B * silu'(A), dB = dy * A * s; dx = concat(dA, dB) along ``dim``."""
    a, b = _swiglu_halves(x, dim)
    dy = _f64(dy)
    with np.errstate(over="ignore", invalid="ignore"):
        s = 1.0 / (1.0 + np.exp(-a))
        da = dy * b * (s * (1.0 + a * (1.0 - s)))
        db = dy * (a * s)
    return np.concatenate((da, db), axis=dim)
