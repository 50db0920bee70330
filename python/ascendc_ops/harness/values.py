"""Input data of a case: the case-file distributions (make_values) and what a named value generator of an
op family may use (GenContext); signed_uniform is shared by several families."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class GenContext:
    """What a value generator may use besides (shape, attrs): the case's random generator, the input's
    own TensorSpec (its value_range), the float64 values of the inputs made before it (dtype-rounded) and their
    dtypes by name (a generator running an op on them rebuilds the tensors exactly)."""

    rng: np.random.Generator
    tensor: object
    made: dict
    dtypes: dict = field(default_factory=dict)


def signed_uniform(shape, attrs, ctx: GenContext | None = None):
    """Random sign times a magnitude uniform in the input's value_range [lo, hi] (0 <= lo): data bounded
    away from zero, so no golden is (near) zero unless the formula itself cancels."""
    lo, hi = ctx.tensor.value_range
    if lo < 0:
        raise ValueError(f"'signed_uniform' takes magnitudes: value_range must have min >= 0, got [{lo}, {hi}]")
    mag = ctx.rng.uniform(lo, hi, shape)
    return np.where(ctx.rng.integers(0, 2, shape) == 1, mag, -mag)


def read_bin(path: str, shape, dtype: str) -> np.ndarray:
    """A raw little-endian file of `dtype` values (msOpST's string `value`), as float64."""
    if dtype == "bfloat16":  # bf16 is the top half of an fp32
        bits = np.fromfile(path, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64).reshape(shape)
    return np.fromfile(path, dtype=np.dtype(dtype).newbyteorder("<")).astype(np.float64).reshape(shape)


def from_distribution(dist: str, lo: float, hi: float, rng: np.random.Generator, shape) -> np.ndarray:
    """msOpST's meaning of value_range [lo, hi] per data_distribute (its DataGenerator.gen_data): uniform in
    [lo, hi); normal with mean lo and standard deviation |hi| + 1e-4; beta(|lo| + 1e-4, |hi| + 1e-4);
    laplace(lo, |hi| + 1e-4); triangular on [lo, hi] with its mode drawn uniformly; relu / sigmoid / tanh
    of uniform data and softmax over the whole tensor. Our extension truncated_normal: mean (lo+hi)/2,
    standard deviation (hi-lo)/6, redrawn until inside [lo, hi]."""
    if dist == "uniform":
        return rng.uniform(lo, hi, shape)
    if dist == "normal":
        return rng.normal(lo, abs(hi) + 1e-4, shape)
    if dist == "beta":
        return rng.beta(abs(lo) + 1e-4, abs(hi) + 1e-4, shape)
    if dist == "laplace":
        return rng.laplace(lo, abs(hi) + 1e-4, shape)
    if dist == "triangular":
        return rng.triangular(lo, rng.uniform(lo, hi), hi, shape) if hi > lo else np.full(shape, float(lo))
    if dist in ACTIVATIONS:
        return ACTIVATIONS[dist](rng.uniform(lo, hi, shape))
    mean, std = (lo + hi) / 2, (hi - lo) / 6  # truncated_normal
    v = rng.normal(mean, std, shape)
    for _ in range(100):
        out = (v < lo) | (v > hi)
        if not out.any():
            break
        v[out] = rng.normal(mean, std, int(out.sum()))
    return np.clip(v, lo, hi)


ACTIVATIONS = {
    "relu": lambda u: np.maximum(u, 0.0),
    "sigmoid": lambda u: 1 / (1 + np.exp(-u)),
    "tanh": np.tanh,
    "softmax": lambda u: np.exp(u) / np.sum(np.exp(u)),
}


def make_values(t, rng: np.random.Generator, spec, attrs: dict) -> np.ndarray:
    """float64 values of one input `t` (a cases.TensorSpec), before rounding to its dtype."""
    if isinstance(t.value, str) and t.value.endswith(".bin"):
        return read_bin(t.value, t.shape, t.dtype)
    if isinstance(t.value, str):
        return np.asarray(spec.values[t.value](t.shape, attrs), dtype=np.float64).reshape(t.shape)
    if t.value is not None:
        return np.asarray(t.value, dtype=np.float64).reshape(t.shape).copy()
    return from_distribution(t.distribution, *t.value_range, rng, t.shape)
