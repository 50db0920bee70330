"""Independent float64 NumPy references (goldens) for the grouped matmul family.

No torch, no compiled code: NumPy arrays in, float64 arrays out, written from the formulas in
docs/architecture.md ("MoE ops"), not from the kernels.

- ``group_rows(group_list, group_list_type)``: row counts per group (type 1: the counts; type 0:
  steps between cumulative ends).
- ``grouped_matmul(x, w, group_list, type, transpose_weight)``: ``y[rows of e] = x_e @ w_e`` with
  ``w_e = w[e]`` ``[K, N]`` or ``w[e].T`` (w ``[E, N, K]``); rows past the last group are 0.
- ``grouped_matmul_weight_grad(x, dy, group_list, type)``: ``dw[e] = x_e.T @ dy_e``, 0 for empty groups.
"""

from __future__ import annotations

import numpy as np


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def group_rows(group_list, group_list_type: int) -> np.ndarray:
    g = np.asarray(group_list, dtype=np.int64)
    return g if group_list_type == 1 else np.diff(np.concatenate(([0], g)))


def grouped_matmul(x, w, group_list, group_list_type: int = 1, transpose_weight: bool = False, bias=None) -> np.ndarray:
    x, w = _f64(x), _f64(w)
    n = w.shape[1] if transpose_weight else w.shape[2]
    b = None if bias is None else _f64(bias)
    y = np.zeros((x.shape[0], n))
    start = 0
    for e, rows in enumerate(group_rows(group_list, group_list_type)):
        we = w[e].T if transpose_weight else w[e]
        y[start : start + rows] = x[start : start + rows] @ we + (0.0 if b is None else b[e])
        start += rows
    return y


def grouped_matmul_weight_grad(x, dy, group_list, group_list_type: int = 1) -> np.ndarray:
    x, dy = _f64(x), _f64(dy)
    rows_per = group_rows(group_list, group_list_type)
    dw = np.zeros((len(rows_per), x.shape[1], dy.shape[1]))
    start = 0
    for e, rows in enumerate(rows_per):
        dw[e] = x[start : start + rows].T @ dy[start : start + rows]
        start += rows
    return dw
