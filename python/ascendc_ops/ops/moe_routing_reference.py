"""Independent float64 NumPy references (goldens) for the MoE routing ops.

No torch, no compiled code: NumPy arrays in, float64 (or int64 index) arrays out, written from
the formulas in docs/architecture.md ("MoE ops"), not from the kernels.

- ``moe_token_permute(tokens, indices, num_out_tokens)``: a stable sort of the flat expert ids;
  ``sorted_indices[i]`` = the position of flat entry i in that order (argsort of the argsort),
  ``permuted[sorted_indices[i]] = tokens[i // topK]``, the first num_out_tokens rows kept.
- ``moe_token_unpermute(permuted, sorted_indices, probs, topk)``:
  ``out[t] = sum_k probs[t,k] * permuted[sorted_indices[t*K+k]]`` (entries past the permuted rows
  contribute 0; probs None: weight 1).
- ``moe_token_unpermute_backward(permuted, dout, sorted_indices, probs, topk)``:
  ``dpermuted[s[t*K+k]] = probs[t,k] * dout[t]``, ``dprobs[t,k] = <permuted[s[t*K+k]], dout[t]>``.
"""

from __future__ import annotations

import numpy as np


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def moe_token_permute(tokens, indices, num_out_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    tokens = _f64(tokens)
    flat = np.asarray(indices).reshape(-1)
    topk = 1 if np.ndim(indices) == 1 else np.shape(indices)[1]
    order = np.argsort(flat, kind="stable")  # order[j] = the flat entry at sorted position j
    sorted_indices = np.empty_like(order)
    sorted_indices[order] = np.arange(flat.size)
    n_out = flat.size if not num_out_tokens else min(num_out_tokens, flat.size)
    permuted = tokens[order // topk][:n_out]
    return permuted, sorted_indices


def moe_token_unpermute(permuted, sorted_indices, probs=None, topk: int | None = None) -> np.ndarray:
    permuted = _f64(permuted)
    s = np.asarray(sorted_indices, dtype=np.int64)
    k = np.shape(probs)[1] if probs is not None else (topk or 1)
    t = s.size // k
    p = np.ones((t, k)) if probs is None else _f64(probs)
    out = np.zeros((t, permuted.shape[1]))
    for i, j in enumerate(s):
        if j < permuted.shape[0]:
            out[i // k] += p[i // k, i % k] * permuted[j]
    return out


def moe_token_unpermute_backward(permuted, dout, sorted_indices, probs=None, topk: int | None = None):
    permuted, dout = _f64(permuted), _f64(dout)
    s = np.asarray(sorted_indices, dtype=np.int64)
    k = np.shape(probs)[1] if probs is not None else (topk or 1)
    p = None if probs is None else _f64(probs)
    dperm = np.zeros_like(permuted)
    dprobs = None if probs is None else np.zeros_like(p)
    for i, j in enumerate(s):
        if j < permuted.shape[0]:
            t = i // k
            dperm[j] = dout[t] * (1.0 if p is None else p[t, i % k])
            if p is not None:
                dprobs[t, i % k] = permuted[j] @ dout[t]
    return dperm, dprobs
