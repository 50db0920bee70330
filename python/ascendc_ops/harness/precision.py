"""The Ascend operator accuracy standards (README, "Accuracy") as NumPy functions.

Notation: ``d = |actual - golden|``, ``g = golden`` (our goldens are float64 NumPy references).

- ``metrics(actual, golden)``: rel = d / (|g| + 1e-7); MERE = mean(rel), MARE = max(rel);
  RMSE = sqrt(mean(d^2)); error balance EB = |#(a > g) - #(a < g)| / N; small values |g| < 2^-10,
  counted as errors when d > 1e-16 (count, and share of all N elements); whether NaN / +Inf / -Inf
  sit at the same positions in actual and golden. The error numbers are taken over the positions
  where both are finite.
- ``check_mere_mare(actual, golden, dtype)``: the CANN standard for contributed ops, pass when
  MERE < T and MARE < 10*T, T = 2^-10 (fp16), 2^-7 (bf16), 2^-13 (fp32), and NaN/Inf positions match.
- ``check_ratio(actual, second, golden)``: the double benchmark (level L1): our error over a second
  implementation's error on the same golden, each denominator floored at 2^-8: MARE ratio <= 5,
  MERE ratio <= 1.5, RMSE ratio <= 1.5, small-value error (count) ratio <= 2; NaN/Inf positions match.

- ``check_double_thousandth(actual, golden, dtype, threshold)``: "double thousandth", rel = d / (|g| + 1e-7)
  <= 1e-3 (fp16) / 1e-4 (fp32) on >= 99.9% of elements; bf16: d <= 1e-3 + 1e-3*|g|; a case file's
  error_threshold [bound, share] overrides the limits (msOpST's judgement).

- ``mare_within_rounding(actual, golden, dtype, fp32_bound)``: the one documented allowance on
  MARE. Elements over the MARE limit pass only when their error is what the dtype itself forces:
  fp32 results within the classic error bound of evaluating the formula in fp32 (``gamma(k)`` times
  the sum of |terms|; with cancellation no fp32 implementation, PyTorch's included, meets MARE on
  random data); fp16/bf16 results correctly rounded (fp16 subnormals cannot meet MARE even then),
  or, when the op computes in fp32 and ``fp32_bound`` is given, the fp32 result within that bound
  rounded once (half an ulp of the output dtype on top of the bound).
  MERE, NaN/Inf positions and every ratio criterion are never relaxed.

Pure NumPy (inputs: anything ``np.asarray`` takes; convert bf16 tensors to float32 first), so the
CLI harness can reuse it. Each check returns a ``Check`` with ``passed``, the numbers, the limits
and ``describe()``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

REL_EPS = 1e-7  # rel = d / (|g| + REL_EPS)
SMALL_VALUE = 2.0**-10  # |g| below this is a small value
SMALL_ERROR = 1e-16  # a small value is wrong when d exceeds this
RATIO_FLOOR = 2.0**-8  # double benchmark: denominators floored here
THRESHOLDS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-13}
RATIO_LIMITS = {"mare": 5.0, "mere": 1.5, "rmse": 1.5, "small_err_count": 2.0}
_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32", "float": "float32"}


def dtype_name(dtype) -> str:
    """'float16' | 'bfloat16' | 'float32' from a name ('fp16', 'torch.bfloat16', ...) or a NumPy dtype."""
    name = str(dtype).removeprefix("torch.")
    name = _ALIASES.get(name, name)
    if name not in THRESHOLDS:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            pass
    if name not in THRESHOLDS:
        raise ValueError(f"dtype must be one of {sorted(THRESHOLDS)}, got {dtype!r}")
    return name


def metrics(actual, golden) -> dict:
    """MERE, MARE, RMSE, EB, small-value errors and NaN/Inf position match of actual vs golden."""
    a = np.asarray(actual, dtype=np.float64)
    g = np.asarray(golden, dtype=np.float64)
    if a.shape != g.shape:
        raise ValueError(f"actual has shape {a.shape} but golden has shape {g.shape}")
    nan_inf_match = bool(
        np.array_equal(np.isnan(a), np.isnan(g))
        and np.array_equal(np.isposinf(a), np.isposinf(g))
        and np.array_equal(np.isneginf(a), np.isneginf(g))
    )
    finite = np.isfinite(a) & np.isfinite(g)
    a, g = a[finite], g[finite]
    n = a.size
    d = np.abs(a - g)
    rel = d / (np.abs(g) + REL_EPS)
    small = np.abs(g) < SMALL_VALUE
    small_err = int(np.count_nonzero(small & (d > SMALL_ERROR)))
    return {
        "n": n,
        "mere": float(rel.mean()) if n else 0.0,
        "mare": float(rel.max()) if n else 0.0,
        "rmse": float(np.sqrt(np.mean(d * d))) if n else 0.0,
        "eb": abs(int(np.count_nonzero(a > g)) - int(np.count_nonzero(a < g))) / n if n else 0.0,
        "small_count": int(np.count_nonzero(small)),
        "small_err_count": small_err,
        "small_err_ratio": small_err / n if n else 0.0,
        "nan_inf_match": nan_inf_match,
        "worst_index": int(np.flatnonzero(finite)[np.argmax(rel)]) if n else -1,
    }


@dataclass(frozen=True)
class Check:
    """The outcome of one standard: ``passed``, the numbers it judged, its limits and the failed criteria."""

    standard: str
    passed: bool
    numbers: dict
    limits: dict
    failures: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        verdict = "PASS" if self.passed else "FAIL (" + "; ".join(self.failures) + ")"
        nums = ", ".join(f"{k}={_fmt(v)}" for k, v in self.numbers.items())
        return f"{self.standard}: {verdict}: {nums}"

    def __bool__(self) -> bool:
        return self.passed


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def check_mere_mare(actual, golden, dtype) -> Check:
    """CANN standard: MERE < T and MARE < 10*T for the output dtype, and NaN/Inf positions match."""
    name = dtype_name(dtype)
    t = THRESHOLDS[name]
    m = metrics(actual, golden)
    limits = {"mere": t, "mare": 10 * t}
    failures = [f"{k.upper()} {m[k]:.4g} >= {lim:.4g}" for k, lim in limits.items() if not m[k] < lim]
    if not m["nan_inf_match"]:
        failures.append("NaN/Inf positions differ from the golden's")
    numbers = {"dtype": name, "n": m["n"], "mere": m["mere"], "mare": m["mare"], "rmse": m["rmse"], "eb": m["eb"],
               "small_err_count": m["small_err_count"], "worst_index": m["worst_index"]}
    return Check("MERE/MARE", not failures, numbers, limits, tuple(failures))


def check_ratio(actual, second, golden) -> Check:
    """Double benchmark: each of our errors over the second implementation's (floored at 2^-8) within limits."""
    ours, theirs = metrics(actual, golden), metrics(second, golden)
    numbers: dict = {}
    failures = []
    for k, lim in RATIO_LIMITS.items():
        ratio = ours[k] / max(theirs[k], RATIO_FLOOR)
        numbers[f"{k}_ratio"] = ratio
        numbers[k] = ours[k]
        numbers[f"second_{k}"] = theirs[k]
        if not ratio <= lim:
            failures.append(f"{k} ratio {ratio:.4g} > {lim:g}")
    if not ours["nan_inf_match"]:
        failures.append("NaN/Inf positions differ from the golden's")
    return Check("double benchmark", not failures, numbers, dict(RATIO_LIMITS), tuple(failures))


# ---------------------------------------------------------------- double thousandth
DT_SHARE = 1e-3  # at least 99.9% of elements within the bound
DT_BOUNDS = {"float16": 1e-3, "float32": 1e-4, "bfloat16": 1e-3}  # bf16: rtol and atol


def check_double_thousandth(actual, golden, dtype, threshold: tuple[float, float] | None = None) -> Check:
    """"Double thousandth": rel = d / (|g| + 1e-7) <= 1e-3 (fp16) / 1e-4 (fp32) on >= 99.9% of elements;
    bf16: d <= 1e-3 + 1e-3*|g|. `threshold` = (bound, allowed failing share) overrides the defaults
    (bf16 then uses the bound as both rtol and atol). NaN/Inf positions must match the golden's."""
    name = dtype_name(dtype)
    bound, share = threshold if threshold is not None else (DT_BOUNDS[name], DT_SHARE)
    a, g = np.asarray(actual, dtype=np.float64), np.asarray(golden, dtype=np.float64)
    m = metrics(a, g)  # also checks the shapes and NaN/Inf positions
    finite = np.isfinite(a) & np.isfinite(g)
    d, ag = np.abs(a[finite] - g[finite]), np.abs(g[finite])
    bad = d > bound + bound * ag if name == "bfloat16" else d / (ag + REL_EPS) > bound
    n_bad = int(np.count_nonzero(bad))
    bad_share = n_bad / d.size if d.size else 0.0
    failures = []
    if bad_share > share:
        failures.append(f"{n_bad} of {d.size} elements ({bad_share:.3%}) over the bound {bound:g}, "
                        f"more than {share:.3%}")
    if not m["nan_inf_match"]:
        failures.append("NaN/Inf positions differ from the golden's")
    crit = "atol+rtol" if name == "bfloat16" else "rel"
    numbers = {"dtype": name, "n": d.size, "criterion": crit, "bad": n_bad, "bad_share": bad_share,
               "mere": m["mere"], "mare": m["mare"]}
    return Check("double thousandth", not failures, numbers, {"bound": bound, "share": share}, tuple(failures))


# (mantissa bits, minimum normal exponent) of the low-precision output dtypes
_FORMATS = {"float16": (10, -14), "bfloat16": (7, -126)}
U32 = 2.0**-24  # unit roundoff of fp32


def half_ulp(golden, dtype) -> np.ndarray:
    """Half a unit in the last place of `dtype` at each golden value: the error of correct rounding."""
    bits, emin = _FORMATS[dtype_name(dtype)]
    _, e = np.frexp(np.abs(np.asarray(golden, dtype=np.float64)))  # |g| = m * 2^e, m in [0.5, 1)
    return np.ldexp(0.5, np.maximum(e - 1, emin) - bits)


def gamma(k: int) -> float:
    """Higham's gamma_k = k*u / (1 - k*u): the relative error bound of k roundings in fp32."""
    return k * U32 / (1 - k * U32)


def mare_within_rounding(actual, golden, dtype, fp32_bound=None) -> tuple[bool, str]:
    """Whether every element over the MARE limit carries no more error than `dtype` itself forces."""
    name = dtype_name(dtype)
    a, g = np.asarray(actual, dtype=np.float64), np.asarray(golden, dtype=np.float64)
    d = np.abs(a - g)
    over = d / (np.abs(g) + REL_EPS) >= 10 * THRESHOLDS[name]
    if name == "float32":
        if fp32_bound is None:
            return False, "fp32 MARE failed and no fp32 error bound was given"
        allowed, what = np.broadcast_to(fp32_bound, d.shape), "within the fp32 evaluation error bound"
    elif fp32_bound is None:
        allowed, what = half_ulp(g, name), f"correctly rounded to {name}"
    else:  # computed in fp32 (within fp32_bound of g), then rounded once to the output dtype
        b = np.broadcast_to(fp32_bound, d.shape)
        allowed, what = half_ulp(np.abs(g) + b, name) + b, f"the fp32 result (within its bound) rounded once to {name}"
    bad = over & ~(d <= allowed)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return False, (f"{int(bad.sum())} elements over the MARE limit are not {what}, e.g. flat {i}: "
                       f"error {d.flat[i]:.3g} > allowed {allowed.flat[i]:.3g}")
    return True, f"{int(over.sum())} elements over the MARE limit, all {what}"
