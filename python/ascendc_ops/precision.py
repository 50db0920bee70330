"""The Ascend operator accuracy standards (README, "Accuracy") as NumPy functions.

Notation: ``d = |actual - golden|``, ``g = golden`` (our goldens are float64 NumPy references), judged in
the output's dtype.

Small-value domain (the CANN commercial standard): an element whose |g| is below the dtype's small-value
threshold (fp16 2^-11, bf16 2^-8, fp32 2^-14) is a small value. It is judged by absolute error: it is an
error when d exceeds the small-value error bound (fp16 2^-16, bf16 2^-16, fp32 2^-30); ErrorCount is the
number of such errors, and ours may have at most 2x the comparison implementation's (floored at 1). Small
values leave the relative metrics (MERE, MARE, RMSE), where rel = d / (|g| + 1e-7) explodes near a zero
golden for any implementation. Sources (read with the search tool): CANN's commercial ops precision standard
as quoted by the cannbot-skills "ops-precision-standard" skill (gitcode.com/cann/cannbot-skills; a copy at
gitcode.com/W4termy/cannbot, ops/ops-precision-standard/scripts/small_value_check.py: the per-dtype threshold
and error table above, ErrorCount = #(|g| < threshold and d > error); reference/float_compute.md: levels
L0/L1/L2 with MARE/MERE/RMSE ratios 10/2/2, 5/1.5/1.5, 2/1.2/1.2), and an implementation of precision
standard 2.1 in gitcode.com/ascend-tribe/openPangu-2.0-Op (tests/utils.py: the same tables, the count
ratio npu / max(bench, 1) <= 2, MARE/MERE/RMSE over the large values only).

- ``metrics(actual, golden, dtype)``: over the large values MERE = mean(rel), MARE = max(rel),
  RMSE = sqrt(mean(d^2)); over all finite elements the error balance EB = |#(a > g) - #(a < g)| / N;
  the small values' count, share and ErrorCount; the sanity numbers (below); whether NaN / +Inf / -Inf
  sit at the same positions in actual and golden. Error numbers are taken where both are finite. A golden
  value beyond the output dtype's range counts as the +-inf it rounds to (``rounded_overflow``).
- ``check_mere_mare(actual, golden, dtype, second=None)``: the CANN standard for contributed ops: MERE < T
  and MARE < 10*T over the large values, T = 2^-10 (fp16), 2^-7 (bf16), 2^-13 (fp32); ErrorCount at most
  2x the second implementation's (without one: at most 2); NaN/Inf positions match.
- ``check_ratio(actual, second, golden, dtype)``: the double benchmark (level L1) against a second
  implementation of the op in the same dtype (PyTorch's): our MARE, MERE and RMSE over theirs (floored
  at 2^-8, this project's floor; the reference implementation below floors at the small-value threshold)
  <= 5, 1.5, 1.5; ErrorCount ratio <= 2; NaN/Inf positions match; and the sanity bound, which ours must
  meet and theirs too (see below).
- Sanity bound (double benchmark): d <= 16 * T * max(|g|, S) on every element, T the MERE threshold above of
  the least precise dtype the op computes in (its inputs' and the output's: an fp32 dgamma of fp16 x is
  computed from fp16 data), S the golden's magnitude scale (its RMS, at least the dtype's smallest normal).
  A ratio alone passes any error ours shares with the comparison (the same wrong formula: ratio 1.0), so
  it counts only where both are near the golden. Why no correct implementation misses it: evaluating an
  op in a dtype rounds each term and partial result once per step, k steps, each off by at most eps/2 of
  its own size, so d <= k * eps/2 * (sum of |terms|); here k <= 8 and the terms stay within ~4 S even
  where they cancel element by element (RoPE: |x*cos| + |rot(x)*sin| <= 4.3 S on uniform data; RMSNorm
  grad: |rstd*dg| and |x*rstd^3*mean(dg*x)| within ~3 S), so d <= 16 eps S, and eps <= T in every dtype
  (fp16 and bf16 T = eps; fp32 T = 2^10 eps, the room CANN gives fp32 for long reductions and
  approximations: our fp32 dgamma, summed over rows in order, is at 36 eps S over 8192 rows where
  PyTorch's pairwise sum is at 4). Measured on the full default suite (`ascendc-ops verify --json`, the
  sanity columns): PyTorch's worst is 4 eps S, a quarter of the bound in fp16/bf16 (tests/harness/test_cli.py
  holds the quick suites to half of it). A wrong formula misses it by orders of magnitude (a user's case
  file with a deliberately wrong golden: tests/harness/test_judge.py); when the comparison misses it, the
  comparison or the golden is wrong, and the case fails saying so.
- ``check_double_thousandth(actual, golden, dtype, threshold)``: "double thousandth", rel = d / (|g| + 1e-7)
  <= 1e-3 (fp16) / 1e-4 (fp32) on >= 99.9% of elements; bf16: d <= 1e-3 + 1e-3*|g| (`threshold`
  [bound, share] overrides the limits). A case file's error_threshold is judged by msOpST's own rule
  instead (harness/verify/error_threshold.py).

- ``mare_within_rounding(actual, golden, dtype, fp32_bound)``: the one documented allowance on
  MARE (tests only). Large values over the MARE limit pass only when their error is what the dtype itself
  forces: fp32 results within the classic error bound of evaluating the formula in fp32 (``gamma(k)`` times
  the sum of |terms|); fp16/bf16 results correctly rounded, or, when the op computes in fp32 and
  ``fp32_bound`` is given, the fp32 result within that bound rounded once (half an ulp of the output dtype
  on top of the bound). MERE, NaN/Inf positions, ErrorCount and every ratio criterion are never relaxed.

Pure NumPy (inputs: anything ``np.asarray`` takes; convert bf16 tensors to float32 first) and outside the
harness: model patching's probe and coverage judge with it inside a user's training job, where the CLI harness
has no business being imported. Each check returns a ``Check`` with ``passed``, the numbers, the limits and
``describe()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .dtypes import canonical

REL_EPS = 1e-7  # rel = d / (|g| + REL_EPS)
THRESHOLDS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-13}  # MERE/MARE's T
SMALL_VALUE = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-14}  # |g| below: a small value
SMALL_ERROR = {"float16": 2.0**-16, "bfloat16": 2.0**-16, "float32": 2.0**-30}  # a small value is wrong above
SMALL_COUNT_RATIO = 2.0  # our ErrorCount <= 2 * max(theirs, 1)
RATIO_LIMITS = {"mare": 5.0, "mere": 1.5, "rmse": 1.5}  # double benchmark L1, over the large values
RATIO_FLOOR = 2.0**-8  # the ratios' denominators are floored here
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23}  # machine epsilon
MIN_NORMAL = {"float16": 2.0**-14, "bfloat16": 2.0**-126, "float32": 2.0**-126}
SANITY_UNITS = 16.0  # sanity bound: d <= SANITY_UNITS * T * max(|g|, S)


# The golden rounded to the output dtype is +-inf from here on (round to nearest: the largest finite value plus
# half its ulp, 2^(emax+1) - 2^(emax-p) for p mantissa bits); an fp16 op's 1e6 is inf, as PyTorch's and CANN's.
OVERFLOW = {"float16": 2.0**16 - 2.0**4, "bfloat16": 2.0**128 - 2.0**119, "float32": 2.0**128 - 2.0**103}


def rounded_overflow(golden, dtype) -> np.ndarray:
    """The float64 golden with the values the output dtype cannot hold (they round to +-inf) made +-inf."""
    g = np.asarray(golden, dtype=np.float64)
    over = np.abs(g) >= OVERFLOW[dtype_name(dtype)]
    return np.where(over, np.copysign(np.inf, g), g) if over.any() else g


def dtype_name(dtype) -> str:
    """'float16' | 'bfloat16' | 'float32' from a name ('fp16', 'torch.bfloat16', ...) or a NumPy dtype."""
    name = canonical(dtype)
    if name not in THRESHOLDS:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            pass
    if name not in THRESHOLDS:
        raise ValueError(f"dtype must be one of {sorted(THRESHOLDS)}, got {dtype!r}")
    return name


def sanity_bound(golden, dtype) -> np.ndarray:
    """The loosest error any correct evaluation in `dtype` (the least precise dtype it computes in) stays
    within: SANITY_UNITS * T * max(|g|, S)."""
    name = dtype_name(dtype)
    g = np.abs(np.asarray(golden, dtype=np.float64))
    finite = g[np.isfinite(g)]
    scale = max(float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0, MIN_NORMAL[name])
    return SANITY_UNITS * THRESHOLDS[name] * np.maximum(g, scale)


REPORTED = ("n", "mere", "mare", "rmse", "eb", "small_share", "small_err_count")


def reported(m: dict) -> dict:
    """The figures of metrics() a report lists for every output."""
    return {k: m[k] for k in REPORTED}


def metrics(actual, golden, dtype, compute_dtype=None) -> dict:
    """MERE, MARE, RMSE over the large values; EB; small values and their ErrorCount; the sanity numbers
    (for an op computing in `compute_dtype`, default `dtype`); NaN/Inf position match; of actual vs golden
    in the output dtype `dtype`."""
    name = dtype_name(dtype)
    a = np.asarray(actual, dtype=np.float64)
    g = rounded_overflow(golden, name)
    if a.shape != g.shape:
        raise ValueError(f"actual has shape {a.shape} but golden has shape {g.shape}")
    nan_inf_match = bool(
        np.array_equal(np.isnan(a), np.isnan(g))
        and np.array_equal(np.isposinf(a), np.isposinf(g))
        and np.array_equal(np.isneginf(a), np.isneginf(g))
    )
    finite = np.isfinite(a) & np.isfinite(g)
    where = np.flatnonzero(finite)
    a, g = a[finite], g[finite]
    n = a.size
    d = np.abs(a - g)
    small = np.abs(g) < SMALL_VALUE[name]
    large = ~small
    rel = d[large] / (np.abs(g[large]) + REL_EPS)
    small_err = int(np.count_nonzero(small & (d > SMALL_ERROR[name])))
    over = d / sanity_bound(g, _coarser(name, compute_dtype)) if n else d
    return {
        "n": n,
        "mere": float(rel.mean()) if rel.size else 0.0,
        "mare": float(rel.max()) if rel.size else 0.0,
        "rmse": float(np.sqrt(np.mean(d[large] ** 2))) if rel.size else 0.0,
        "eb": abs(int(np.count_nonzero(a > g)) - int(np.count_nonzero(a < g))) / n if n else 0.0,
        "small_count": int(np.count_nonzero(small)),
        "small_share": float(np.count_nonzero(small)) / n if n else 0.0,
        "small_err_count": small_err,
        "sanity": float(over.max()) if n else 0.0,  # worst d / sanity bound: <= 1 within it
        "sanity_bad": int(np.count_nonzero(over > 1)),
        "sanity_index": int(where[np.argmax(over)]) if n else -1,
        "nan_inf_match": nan_inf_match,
        "worst_index": int(where[np.flatnonzero(large)[np.argmax(rel)]]) if rel.size else -1,
    }


def _coarser(dtype: str, other) -> str:
    """The less precise of two dtypes (other may be None)."""
    if other is None:
        return dtype
    other = dtype_name(other)
    return other if EPS[other] > EPS[dtype] else dtype


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


def _count_failure(ours: int, theirs: int | None) -> str | None:
    """The ErrorCount criterion: ours <= 2 * max(theirs, 1) (theirs None: no comparison, taken as 0)."""
    limit = SMALL_COUNT_RATIO * max(theirs or 0, 1)
    if ours <= limit:
        return None
    of = "" if theirs is None else f" (the comparison has {theirs})"
    return f"small-value ErrorCount {ours}{of} > {limit:g}"


def check_mere_mare(actual, golden, dtype, second=None, compute_dtype=None) -> Check:
    """CANN standard: MERE < T and MARE < 10*T over the large values, ErrorCount within 2x the second
    implementation's (or <= 2 without one), and NaN/Inf positions match. (compute_dtype: as in metrics.)"""
    name = dtype_name(dtype)
    t = THRESHOLDS[name]
    m = metrics(actual, golden, name, compute_dtype)
    theirs = metrics(second, golden, name, compute_dtype)["small_err_count"] if second is not None else None
    limits = {"mere": t, "mare": 10 * t, "small_err_count_ratio": SMALL_COUNT_RATIO}
    failures = [f"{k.upper()} {m[k]:.4g} >= {limits[k]:.4g}" for k in ("mere", "mare") if not m[k] < limits[k]]
    count = _count_failure(m["small_err_count"], theirs)
    if count:
        failures.append(count)
    if not m["nan_inf_match"]:
        failures.append("NaN/Inf positions differ from the golden's")
    numbers = {
        "dtype": name,
        **reported(m),
        "second_small_err_count": theirs,
        "worst_index": m["worst_index"],
    }
    return Check("MERE/MARE", not failures, numbers, limits, tuple(failures))


def check_ratio(actual, second, golden, dtype, compute_dtype=None) -> Check:
    """Double benchmark: our errors over the second implementation's within limits, ErrorCount within 2x,
    and both results within the sanity bound of the golden (for an op computing in `compute_dtype`: the
    least precise of its input dtypes; default the output dtype)."""
    name = dtype_name(dtype)
    ours, theirs = metrics(actual, golden, name, compute_dtype), metrics(second, golden, name, compute_dtype)
    floor = RATIO_FLOOR
    numbers: dict = {"dtype": name}
    failures = []
    for k, lim in RATIO_LIMITS.items():
        ratio = ours[k] / max(theirs[k], floor)
        numbers.update({f"{k}_ratio": ratio, k: ours[k], f"second_{k}": theirs[k]})
        if not ratio <= lim:
            failures.append(f"{k} ratio {ratio:.4g} > {lim:g}")
    numbers.update(
        {
            "small_err_count": ours["small_err_count"],
            "second_small_err_count": theirs["small_err_count"],
            "small_err_count_ratio": ours["small_err_count"] / max(theirs["small_err_count"], 1),
            "sanity": ours["sanity"],
            "second_sanity": theirs["sanity"],
        }
    )
    count = _count_failure(ours["small_err_count"], theirs["small_err_count"])
    if count:
        failures.append(count)
    if theirs["sanity"] > 1:
        failures.append(
            f"the comparison implementation misses the sanity bound on {theirs['sanity_bad']} elements "
            f"(worst {theirs['sanity']:.3g}x the bound, flat {theirs['sanity_index']}): the comparison "
            "or the golden is wrong, so the ratio proves nothing"
        )
    if ours["sanity"] > 1:
        failures.append(
            f"ours misses the sanity bound on {ours['sanity_bad']} elements "
            f"(worst {ours['sanity']:.3g}x the bound, flat {ours['sanity_index']})"
        )
    if not ours["nan_inf_match"]:
        failures.append("NaN/Inf positions differ from the golden's")
    limits = {**RATIO_LIMITS, "small_err_count": SMALL_COUNT_RATIO, "sanity": f"{SANITY_UNITS:g} T max(|g|, S)"}
    return Check("double benchmark", not failures, numbers, limits, tuple(failures))


# ---------------------------------------------------------------- double thousandth
DT_SHARE = 1e-3  # at least 99.9% of elements within the bound
DT_BOUNDS = {"float16": 1e-3, "float32": 1e-4, "bfloat16": 1e-3}  # bf16: rtol and atol


def check_double_thousandth(actual, golden, dtype, threshold: tuple[float, float] | None = None) -> Check:
    """ "Double thousandth": rel = d / (|g| + 1e-7) <= 1e-3 (fp16) / 1e-4 (fp32) on >= 99.9% of elements;
    bf16: d <= 1e-3 + 1e-3*|g|. `threshold` = (bound, allowed failing share) overrides the defaults
    (bf16 then uses the bound as both rtol and atol). NaN/Inf positions must match the golden's."""
    name = dtype_name(dtype)
    bound, share = threshold if threshold is not None else (DT_BOUNDS[name], DT_SHARE)
    a, g = np.asarray(actual, dtype=np.float64), np.asarray(golden, dtype=np.float64)
    m = metrics(a, g, name)  # also checks the shapes and NaN/Inf positions
    finite = np.isfinite(a) & np.isfinite(g)
    d, ag = np.abs(a[finite] - g[finite]), np.abs(g[finite])
    bad = d > bound + bound * ag if name == "bfloat16" else d / (ag + REL_EPS) > bound
    n_bad = int(np.count_nonzero(bad))
    bad_share = n_bad / d.size if d.size else 0.0
    failures = []
    if bad_share > share:
        failures.append(
            f"{n_bad} of {d.size} elements ({bad_share:.3%}) over the bound {bound:g}, more than {share:.3%}"
        )
    if not m["nan_inf_match"]:
        failures.append("NaN/Inf positions differ from the golden's")
    crit = "atol+rtol" if name == "bfloat16" else "rel"
    numbers = {
        "dtype": name,
        "n": d.size,
        "criterion": crit,
        "bad": n_bad,
        "bad_share": bad_share,
        "mere": m["mere"],
        "mare": m["mare"],
    }
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
    """Whether every large value over the MARE limit carries no more error than `dtype` itself forces."""
    name = dtype_name(dtype)
    a, g = np.asarray(actual, dtype=np.float64), np.asarray(golden, dtype=np.float64)
    d = np.abs(a - g)
    over = (d / (np.abs(g) + REL_EPS) >= 10 * THRESHOLDS[name]) & (np.abs(g) >= SMALL_VALUE[name])
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
        return False, (
            f"{int(bad.sum())} elements over the MARE limit are not {what}, e.g. flat {i}: "
            f"error {d.flat[i]:.3g} > allowed {allowed.flat[i]:.3g}"
        )
    return True, f"{int(over.sum())} elements over the MARE limit, all {what}"
