"""Independent float64 NumPy references (goldens) of the ops: RoPE, SwiGLU, RMSNorm.

Nothing here imports torch or the compiled library: every function takes NumPy arrays (or
anything ``np.asarray`` accepts), computes in float64 and returns float64 arrays, so the tests and
the CLI harness judge the kernels against arithmetic that shares no code with them.
Formulas: RoPE as the Ascend C tutorial and torch_npu npu_rotary_mul define it, SwiGLU and RMSNorm as torch_npu
and Hugging Face transformers compute them (see each function).

- ``tutorial_cos_sin(L, D, theta)``: the seed tutorial's host-side tables,
  ``freqs = 1/theta^(arange(0, D, 2)/D)``, ``outer(t, freqs)``, ``cos/sin(.)`` with every value
  repeated for its pair (``repeat_interleave(2, dim=1)``), shape ``[L, D]``.
- ``rope_tutorial(x, cos, sin)``: the seed tutorial's PyTorch reference of ``rope_customer``,
  written its way (split into even/odd lanes, rotate each pair, stack and flatten):
  ``y[2i] = x[2i]*cos[2i] - x[2i+1]*sin[2i]``, ``y[2i+1] = x[2i]*sin[2i] + x[2i+1]*cos[2i]``,
  x ``[B, H, L, D]``, cos/sin ``[L, D]`` (only the even lanes of cos/sin are read).
- ``rope_tutorial_backward(dy, x, cos, sin)``: its gradients (dx, dcos, dsin), derived by hand; the odd
  lanes of dcos/dsin are 0.
- ``rotary_mul(x, r1, r2, mode)``: torch_npu ``npu_rotary_mul``, ``x*r1 + rotate(x)*r2`` elementwise
  with NumPy broadcasting; ``'half'``: rotate = ``cat(-x2, x1)`` over the two halves of the last dim
  (HF ``rotate_half``); ``'interleave'``: rotate = ``(-x[2i+1], x[2i])`` interleaved.
- ``rotary_mul_backward(dy, x, r1, r2, mode)``: its gradients, derived by hand:
  ``dx = dy*r1 + rotate^T(dy*r2)``, ``dr1 = sum(dy*x)``, ``dr2 = sum(dy*rotate(x))``, the sums
  running over the dims r1/r2 were broadcast along (so dr1/dr2 have r1's/r2's shape).
  ``rotate`` is a signed permutation, so ``rotate^T`` is written out as its own permutation
  (``'half'``: ``cat(u2, -u1)``; ``'interleave'``: ``(u[2i+1], -u[2i])``), not derived from autograd.
"""

from __future__ import annotations

import numpy as np

MODES = ("half", "interleave")


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")


def tutorial_cos_sin(L: int, D: int, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin ``[L, D]`` exactly as the seed tutorial builds them on the host (float64)."""
    if D % 2:
        raise ValueError(f"D must be even, got {D}")
    freqs = 1.0 / theta ** (np.arange(0, D, 2, dtype=np.float64) / D)  # [D/2]
    t = np.arange(L, dtype=np.float64)
    angles = np.outer(t, freqs)  # [L, D/2]
    # repeat_interleave(2, dim=1): each frequency serves the two lanes of its pair
    return np.repeat(np.cos(angles), 2, axis=1), np.repeat(np.sin(angles), 2, axis=1)


def rope_tutorial(x, cos, sin) -> np.ndarray:
    """The tutorial's pair formula, stacked and flattened. x ``[B, H, L, D]``, cos/sin ``[L, D]``."""
    x, cos, sin = _f64(x), _f64(cos), _f64(sin)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # [B, H, L, D/2]
    c, s = cos[..., 0::2], sin[..., 0::2]  # [L, D/2], broadcast over B, H
    y_even = x_even * c - x_odd * s
    y_odd = x_even * s + x_odd * c
    return np.stack((y_even, y_odd), axis=-1).reshape(x.shape)


def rope_tutorial_backward(dy, x, cos, sin) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of rope_tutorial, derived by hand: with c, s the even lanes of cos/sin,
    ``dx[2i] = dy[2i]*c + dy[2i+1]*s``, ``dx[2i+1] = -dy[2i]*s + dy[2i+1]*c``;
    ``dcos[2i] = sum(dy[2i]*x[2i] + dy[2i+1]*x[2i+1])``, ``dsin[2i] = sum(dy[2i+1]*x[2i] - dy[2i]*x[2i+1])``
    over B and H, and 0 in the odd lanes, which the forward never reads."""
    dy, x, cos, sin = _f64(dy), _f64(x), _f64(cos), _f64(sin)
    c, s = cos[..., 0::2], sin[..., 0::2]
    dy_e, dy_o, x_e, x_o = dy[..., 0::2], dy[..., 1::2], x[..., 0::2], x[..., 1::2]
    dx = np.stack((dy_e * c + dy_o * s, dy_o * c - dy_e * s), axis=-1).reshape(dy.shape)
    dcos, dsin = np.zeros_like(cos), np.zeros_like(sin)
    lead = tuple(range(dy.ndim - cos.ndim))
    dcos[..., 0::2] = np.sum(dy_e * x_e + dy_o * x_o, axis=lead)
    dsin[..., 0::2] = np.sum(dy_o * x_e - dy_e * x_o, axis=lead)
    return dx, dcos, dsin


def rotate(x, mode: str) -> np.ndarray:
    """rotate(x) of the forward formula: a signed permutation of the last dim."""
    _check_mode(mode)
    x = _f64(x)
    if mode == "half":
        x1, x2 = np.split(x, 2, axis=-1)
        return np.concatenate((-x2, x1), axis=-1)
    out = np.empty_like(x)
    out[..., 0::2] = -x[..., 1::2]
    out[..., 1::2] = x[..., 0::2]
    return out


def rotate_t(u, mode: str) -> np.ndarray:
    """rotate^T(u): the transpose of the signed permutation ``rotate``.

    'half': rotate maps (x1, x2) -> (-x2, x1), so its transpose maps (u1, u2) -> (u2, -u1).
    'interleave': rotate maps (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]), transpose (u[2i+1], -u[2i]).
    """
    _check_mode(mode)
    u = _f64(u)
    if mode == "half":
        u1, u2 = np.split(u, 2, axis=-1)
        return np.concatenate((u2, -u1), axis=-1)
    out = np.empty_like(u)
    out[..., 0::2] = u[..., 1::2]
    out[..., 1::2] = -u[..., 0::2]
    return out


def rotary_mul(x, r1, r2, mode: str = "half") -> np.ndarray:
    """npu_rotary_mul: ``x*r1 + rotate(x)*r2`` with NumPy broadcasting of r1/r2 against x."""
    x, r1, r2 = _f64(x), _f64(r1), _f64(r2)
    return x * r1 + rotate(x, mode) * r2


def sum_to_shape(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``a`` over the dims that were broadcast to reach a.shape from ``shape`` (leading and size-1)."""
    shape = tuple(shape)
    lead = a.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot sum shape {a.shape} to the larger rank shape {shape}")
    a = a.sum(axis=tuple(range(lead))) if lead else a
    axes = tuple(k for k, n in enumerate(shape) if n == 1 and a.shape[k] != 1)
    a = a.sum(axis=axes, keepdims=True) if axes else a
    if a.shape != shape:
        raise ValueError(f"shape {shape} does not broadcast to the gradient's shape")
    return a


def rotary_mul_backward(dy, x, r1, r2, mode: str = "half") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dr1, dr2) of ``y = x*r1 + rotate(x)*r2`` for upstream gradient dy (float64).

    dx = dy*r1 + rotate^T(dy*r2); dr1 = sum(dy*x), dr2 = sum(dy*rotate(x)) summed back to r1's/r2's shape.
    """
    dy, x, r1, r2 = _f64(dy), _f64(x), _f64(r1), _f64(r2)
    dy = np.broadcast_to(dy, x.shape)
    dx = dy * r1 + rotate_t(dy * r2, mode)
    dr1 = sum_to_shape(dy * x, r1.shape)
    dr2 = sum_to_shape(dy * rotate(x, mode), r2.shape)
    return dx, dr1, dr2


# ---- SwiGLU (op-semantics.md, section "SwiGLU"): torch_npu npu_swiglu / npu_swiglu_backward ----
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


# ---------------------------------------------------------------- RMSNorm (op-semantics.md, "RMSNorm")
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
