"""The accuracy judgement every op test uses: the Ascend standards from ascendc_ops.precision, with
messages that print all the numbers when a case fails."""

from __future__ import annotations

import numpy as np
import torch

from ascendc_ops import precision as P


def np64(t) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return t.astype(np.float64, copy=False)
    return t.detach().to("cpu", torch.float64).numpy()


def worst(actual: np.ndarray, golden: np.ndarray, index: int) -> str:
    if index < 0:
        return ""
    pos = np.unravel_index(index, golden.shape)
    return f" worst at {tuple(int(p) for p in pos)}: got {actual.flat[index]!r}, golden {golden.flat[index]!r}"


def narrow_dtype(second, dtype):
    """The dtype `second` was computed in when it is narrower than `dtype`: a wider result whose every value
    is exactly a bf16 (or fp16) value came from a bf16 (fp16) computation, e.g. an fp32 grad of bf16 data."""
    if not isinstance(second, torch.Tensor) or second.dtype != torch.float32 or second.numel() == 0:
        return None
    for narrow in (torch.bfloat16, torch.float16):
        if torch.equal(second.to(narrow).to(second.dtype), second):
            return narrow
    return None


def literal_fails(second, golden) -> bool:
    """Whether PyTorch's fp32 result misses the literal fp32 MERE or MARE limit."""
    m, t = P.metrics(np64(second), golden, "float32"), P.THRESHOLDS["float32"]
    return not (m["mere"] < t and m["mare"] < 10 * t)


def assert_accurate(
    actual: torch.Tensor, golden: np.ndarray, second: torch.Tensor, dtype, label: str, bound=None, compute_dtype=None
) -> None:
    """MERE/MARE vs the float64 golden and the double benchmark vs `second` (PyTorch in the same dtype), both
    with the small-value domain (ErrorCount vs `second`'s) and the double benchmark with its sanity bound
    (`compute_dtype`: the least precise dtype the op computes in, when coarser than the output's).

    The one exception to the literal MERE/MARE standard is precision.mare_within_rounding, given the
    fp32 evaluation bound `bound` of the op's formula. MERE, NaN/Inf positions and every
    double-benchmark ratio are always enforced. An fp32 op judged without `bound` where PyTorch's own fp32
    result misses the literal bound fails whatever ours does: that verdict would turn on the summation order.
    """
    assert tuple(actual.shape) == golden.shape, f"{label}: shape {tuple(actual.shape)} != {golden.shape}"
    assert actual.dtype == dtype, f"{label}: dtype {actual.dtype} != {dtype}"
    a = np64(actual)
    if compute_dtype is None:
        compute_dtype = narrow_dtype(second, dtype)
    mm = P.check_mere_mare(a, golden, dtype, np64(second))
    rt = P.check_ratio(a, np64(second), golden, dtype, compute_dtype)
    failures = list(mm.failures)
    note = ""
    if P.dtype_name(dtype) == "float32" and compute_dtype is None and bound is None and literal_fails(second, golden):
        # The literal fp32 bound fails PyTorch's own result: a pass would only say which order this CPU's
        # kernels summed in. Such an op needs its formula's fp32 evaluation bound.
        failures.insert(0, "the literal fp32 MERE/MARE bound fails PyTorch's own result in this run: pass bound=")
        note = failures[0]
    if not note and failures and failures[0].startswith("MARE"):
        ok, note = P.mare_within_rounding(a, golden, dtype, bound)
        if ok:
            failures.pop(0)
    msg = f"{label}\n  {mm.describe()}{worst(a, golden, mm.numbers['worst_index'])}\n  {note}\n  {rt.describe()}"
    assert not failures and rt.passed, msg
