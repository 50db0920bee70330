"""The fp32 evaluation bounds of the fused linear cross-entropy's outputs, shared by `verify`
(families/cross_entropy.py) and tests/ops/test_linear_cross_entropy.py: one implementation of the bounds.

The kernels make each logit as an fp32 dot product of H terms and the bias (its error at most gamma(H + 1)
(sum |h_i w_i| + |b|)), take p from it and lse, round G = a p - b onehot - c w to the input dtype for the cube (as
the attention kernels' P and dS) and sum G x moving rows in fp32 over V (grad_hidden) or T (grad_weight); grad_bias
sums the fp32 G over T."""

from __future__ import annotations

import numpy as np

from ... import precision as P

# G's rounding on its way to the cube, relative: half an epsilon of fp16 / bf16; fp32 stays fp32
G_ROUNDING = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 0.0}


def _f64(x) -> np.ndarray:
    return x.detach().double().numpy() if hasattr(x, "detach") else np.asarray(x, np.float64)


def score_error(h, w, bias=None) -> np.ndarray:
    """Per token: the fp32 evaluation bound of its largest logit, gamma(H + 1) * max_v (|h| . |w_v| + |b_v|) (the
    bias one more term of the sum; gamma(H) without one)."""
    terms = np.abs(_f64(h)) @ np.abs(_f64(w)).T
    if bias is None:
        return P.gamma(h.shape[1]) * terms.max(axis=1, initial=0.0)
    return P.gamma(h.shape[1] + 1) * (terms + np.abs(_f64(bias))[None, :]).max(axis=1, initial=0.0)


def bias_grad_bound(h, w, g, bias=None) -> np.ndarray:
    """grad_bias's evaluation bound for the exact gradient g [T, V]: each fp32 element of G off by its logit's error
    carried through p (twice), then an fp32 sum over T, cast once."""
    es = score_error(h, w, bias)[:, None]
    return (np.abs(g) * (2 * es + P.gamma(h.shape[0] + 16))).sum(axis=0)


def grad_bounds(h, w, g, dtype, bias=None) -> tuple[np.ndarray, np.ndarray]:
    """grad_hidden / grad_weight's evaluation bounds for the exact logits' gradient g [T, V] (float64): G rounded to
    the dtype, fp32 sums over V and T, each logit's error (twice: in p and in lse) carried through p."""
    es = score_error(h, w, bias)[:, None]
    ga = np.abs(g) * (1 + 2 * es) + G_ROUNDING[P.dtype_name(dtype)] * np.abs(g)
    hv, wv = np.abs(_f64(h)), np.abs(_f64(w))
    extra = P.gamma(max(h.shape[0], w.shape[0]) + 16)
    return (ga + extra * np.abs(g)) @ wv + 2 * es * (np.abs(g) @ wv), (ga + extra * np.abs(g)).T @ hv
