"""msOpST's judgement of a case's ``error_threshold`` [diff_thd, pct_thd] (Ascend/msopgen,
tools/msopst/st/interface/compare_data.py; default [0.01, 0.05] from its const_manager.py), read as the
specification and written anew here:

- the golden is stored in the output's dtype (msOpST writes the expect function's result in the output's
  dtype and reads it back as that dtype), and both sides are compared in float32;
- per element d = |actual - golden|; r = d where d < diff_thd, else d / (max(|actual|, |golden|,
  2^-14 / diff_thd) + 1e-9): absolute error for small differences, relative error for large ones;
- an element fails where r > diff_thd; the case passes when the failing share is at most pct_thd and
  no failing element reaches r >= 0.1 (msOpST's fixed max_diff_thd).

Stricter than msOpST, deliberately (docs/harness.md, "Beyond msOpST"): NaN and Inf must sit where the
golden has them. msOpST's comparison lets them through (a NaN difference is never > 0, and Inf / Inf is
NaN), so a kernel writing NaN everywhere would pass it; here the check fails naming that rule."""

from __future__ import annotations

import numpy as np

from ...dtypes import torch_dtype
from ...precision import Check, dtype_name

DEFAULT = (0.01, 0.05)  # msOpST's error_threshold when a case gives none
MAX_DIFF = 0.1  # msOpST's max_diff_thd: no failing element may reach it
NAME = "msOpST error_threshold"


def round_to(values, dtype: str) -> np.ndarray:
    """float64 values rounded to `dtype` (torch's conversion, round to nearest even), returned as float32."""
    import torch

    v = torch.from_numpy(np.asarray(values, dtype=np.float64))
    name = dtype if dtype in ("int32", "int64") else dtype_name(dtype)
    return v.to(torch_dtype(name)).to(torch.float32).numpy()


def check_error_threshold(actual, golden, dtype, threshold: tuple[float, float] | None = None) -> Check:
    """msOpST's rule for `threshold` (default DEFAULT) on one output of `dtype`; see the module docstring."""
    diff_thd, pct_thd = threshold if threshold is not None else DEFAULT
    a = np.asarray(actual, dtype=np.float64).astype(np.float32).ravel()
    g = round_to(golden, dtype).ravel()
    failures = []
    if a.shape != g.shape:
        failures.append(f"{a.size} elements, the golden has {g.size}")
        return Check(NAME, False, {"n": a.size}, {"diff_thd": diff_thd, "pct_thd": pct_thd}, tuple(failures))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        d = np.abs(a - g)
        floor = (1.0 / (1 << 14)) / diff_thd if diff_thd > 0 else np.inf
        scale = np.maximum(np.maximum(np.abs(a), np.abs(g)), floor) + 1e-9
        r = np.where(d < diff_thd, d, d / scale)
        bad = r > diff_thd  # NaN never compares true: msOpST passes NaN and Inf here
    n_bad = int(np.count_nonzero(bad))
    share = n_bad / a.size if a.size else 0.0
    worst = float(r[bad].max()) if n_bad else 0.0
    if share > pct_thd:
        failures.append(f"{n_bad} of {a.size} elements ({share:.3%}) over {diff_thd:g}, more than {pct_thd:.3%}")
    if worst >= MAX_DIFF:
        failures.append(f"an element's error {worst:.3g} reaches msOpST's limit {MAX_DIFF:g}")
    same = (np.isnan(a) == np.isnan(g)) & (np.isposinf(a) == np.isposinf(g)) & (np.isneginf(a) == np.isneginf(g))
    if not same.all():
        failures.append(
            f"NaN/Inf positions differ from the golden's at {int(np.count_nonzero(~same))} elements "
            "(our rule on top of msOpST's, which lets NaN/Inf pass)"
        )
    numbers = {"dtype": dtype, "n": a.size, "bad": n_bad, "bad_share": share, "worst": worst}
    return Check(NAME, not failures, numbers, {"diff_thd": diff_thd, "pct_thd": pct_thd}, tuple(failures))
