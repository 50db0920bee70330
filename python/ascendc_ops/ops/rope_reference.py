"""Independent float64 NumPy references (goldens) of the RoPE family: rotary_mul, rope_customer.

Nothing here imports torch or the compiled library: every function takes NumPy arrays (or
anything ``np.asarray`` accepts), computes in float64 and returns float64 arrays, so the tests and
the CLI harness judge the kernels against arithmetic that shares no code with them.
Formulas: RoPE as the Ascend C tutorial and torch_npu npu_rotary_mul define it (see each function).
SwiGLU and RMSNorm: swiglu_reference.py, rms_norm_reference.py.

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


def apply_rotary_pos_emb(q, k, cos, sin, mode: str = "half") -> tuple[np.ndarray, np.ndarray]:
    """torch_npu ``npu_apply_rotary_pos_emb``'s result (query, key) in float64: ``rotary_mul`` of each on the
    first R = cos.shape[-1] elements of the last dim (all of it in torch_npu; R < D is HF's partial
    rotary), the rest passed through. cos/sin broadcast against q and k (NumPy rules: same rank, 1s)."""
    cos, sin = _f64(cos), _f64(sin)
    r = cos.shape[-1]

    def one(x):
        x = _f64(x).copy()
        x[..., :r] = rotary_mul(x[..., :r], cos, sin, mode)
        return x

    return one(q), one(k)


def apply_rotary_pos_emb_backward(dq, dk, cos, sin, mode: str = "half") -> tuple[np.ndarray, np.ndarray]:
    """(dquery, dkey) of ``apply_rotary_pos_emb`` for upstream (dq, dk): ``dy*cos + rotate^T(dy*sin)`` on the
    rotated part (rotary_mul_backward's dx, written out again here), the pass-through part unchanged."""
    cos, sin = _f64(cos), _f64(sin)
    r = cos.shape[-1]

    def one(dy):
        dy = _f64(dy).copy()
        dy[..., :r] = dy[..., :r] * cos + rotate_t(dy[..., :r] * sin, mode)
        return dy

    return one(dq), one(dk)
