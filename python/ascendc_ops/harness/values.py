"""Input data of a case: the case-file distributions (make_values) and what a named value generator of an
op family may use (GenContext); signed_uniform is shared by several families."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class GenContext:
    """What a value generator may use besides (shape, attrs): the case's random generator, the input's
    own TensorSpec (its value_range) and the float64 values of the inputs made before it (dtype-rounded)."""

    rng: np.random.Generator
    tensor: object
    made: dict


def signed_uniform(shape, attrs, ctx: GenContext | None = None):
    """Random sign times a magnitude uniform in the input's value_range [lo, hi] (0 <= lo): data bounded
    away from zero, so no golden is (near) zero unless the formula itself cancels."""
    lo, hi = ctx.tensor.value_range
    if lo < 0:
        raise ValueError(f"'signed_uniform' takes magnitudes: value_range must have min >= 0, got [{lo}, {hi}]")
    mag = ctx.rng.uniform(lo, hi, shape)
    return np.where(ctx.rng.integers(0, 2, shape) == 1, mag, -mag)


def make_values(t, rng: np.random.Generator, spec, attrs: dict) -> np.ndarray:
    """float64 values of one input `t` (a cases.TensorSpec), before rounding to its dtype."""
    if isinstance(t.value, str):
        return np.asarray(spec.values[t.value](t.shape, attrs), dtype=np.float64).reshape(t.shape)
    if t.value is not None:
        return np.broadcast_to(np.asarray(t.value, dtype=np.float64), t.shape).copy()
    lo, hi = t.value_range
    if t.distribution == "uniform":
        return rng.uniform(lo, hi, t.shape)
    mean, std = (lo + hi) / 2, (hi - lo) / 6
    v = rng.normal(mean, std, t.shape)
    if t.distribution == "truncated_normal":
        for _ in range(100):
            out = (v < lo) | (v > hi)
            if not out.any():
                break
            v[out] = rng.normal(mean, std, int(out.sum()))
        v = np.clip(v, lo, hi)
    return v
