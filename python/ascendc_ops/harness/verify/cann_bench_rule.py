"""cann-bench's own accuracy rule, the one its evaluator applies to a candidate kernel on its cases (hicann/cann-bench
docs/design/precision_comparison_design.md and src/kernel_eval/utils/compare.py; the normal-region control since
its commit 855d3ef, "Fixes #92": deep fp32 reductions). Written here from that description:

1. The float64 golden is rounded to the output dtype first (what the kernel can at best return).
2. NaN positions must match. An Inf on one side only is taken as the dtype's largest finite value, an Inf on
   both sides with the same sign matches and leaves the comparison; opposite signs fail.
3. rel = d / (|g| + 1e-7). MERE < T and MARE < 10 T over the compared elements (T: precision.THRESHOLDS) pass.
4. Otherwise each region is judged against the control, cann-bench's golden function run on the case's
   inputs in their dtype (cann_bench/judge.py's `controls`: its formulas written there), an error count at
   most 2x the control's (floored at 1):
   - small values (|g| below precision.SMALL_VALUE): d over precision.SMALL_ERROR;
   - cancellations (|ours| and |g| below CANCEL[dtype], |g| not small): rel over 10 T;
   - the rest, the normal region: rel over 10 T; a control with none there fails any error of ours.
   All three must pass.
5. Ours only: in cann-bench the control is the golden's own function, so the two cannot disagree by formula;
   here the golden is our float64 reference and the control a separate implementation, and a golden that is
   wrong, or an error ours shares with the control, would pass step 4 at a ratio of 1. So step 4 forgives
   only where the control misses MARE on at most CONTROL_SHARE of the elements (the share "double
   thousandth", precision standard 3, lets a correct implementation miss); beyond it the output fails as
   the control and the golden disagreeing. Where the control computes in a 16-bit dtype and so misses MARE
   on more than that share by its own rounding (attention's outputs, averages of signed values, cancel
   near zero), a witness stands in for it in this step: the control's formula in float32, rounded once
   to the output dtype (`witnesses`), the same independence from our golden at a precision that does not
   miss.
The rule differs from precision.check_mere_mare where an ill-conditioned element (a dot product cancelling to a
fraction of its terms) puts every fp32-accumulating implementation, the control included, over MARE: then ours
passes when its count is within 2x the control's, not otherwise.
The rule is one of verify's standards (verify sits below cann_bench, which hands its cases' controls to verify
through Case.control and Case.witness)."""

from __future__ import annotations

import numpy as np

from ... import precision as P
from .error_threshold import round_to

NAME = "cann-bench"
COUNT_RATIO = 2.0  # every region: ours <= 2 * max(control's, 1)
CONTROL_SHARE = 1e-3  # the control may miss MARE on at most this share of the elements (99.9% within)
CANCEL = {"float32": 2.0**-8, "float16": 2.0**-5, "bfloat16": 2.0**-3}  # "|x| near zero" for cancellations
MAX_FINITE = {"float16": 65504.0, "bfloat16": 2.0**128 - 2.0**120, "float32": 2.0**128 - 2.0**104}


def _prepared(actual, golden_rounded, dtype: str):
    """(ours, golden) as float64 with one-sided Infs replaced by the largest finite value, the mask of the
    compared elements, and a failure text (NaN or Inf sign mismatch) or None."""
    a, g = np.array(actual, dtype=np.float64), np.array(golden_rounded, dtype=np.float64)
    if not np.array_equal(np.isnan(a), np.isnan(g)):
        return a, g, None, "NaN positions differ from the golden's"
    both = np.isinf(a) & np.isinf(g)
    if np.any(np.sign(a[both]) != np.sign(g[both])):
        return a, g, None, "Inf signs differ from the golden's"
    top = MAX_FINITE[dtype]
    for x in (a, g):
        one_sided = np.isinf(x) & ~both
        x[one_sided] = np.sign(x[one_sided]) * top
    return a, g, ~(np.isnan(a) | both), None


def _errors(a, g, compared, dtype: str) -> dict:
    """Per-region error masks of one result `a` against the rounded golden `g`."""
    t = P.THRESHOLDS[dtype]
    with np.errstate(invalid="ignore"):  # Inf - Inf where both match: not compared
        d = np.abs(a - g)
    rel = d / (np.abs(g) + P.REL_EPS)
    small = compared & (np.abs(g) < P.SMALL_VALUE[dtype])
    return {"small": small & (d > P.SMALL_ERROR[dtype]), "over": compared & (rel > 10 * t), "small_mask": small}


def check_cann_bench(actual, golden, dtype, control, witness=None) -> P.Check:
    """cann-bench's rule (module docstring) for one output: ours `actual`, float64 `golden`, the same-dtype
    `control`, all of output dtype `dtype`; `witness` (step 5), when given, stands in for the control in the
    check that the control and the golden agree."""
    name = P.dtype_name(dtype)
    t = P.THRESHOLDS[name]
    limits = {"mere": t, "mare": 10 * t, "count_ratio": COUNT_RATIO}
    g_rounded = round_to(golden, name)
    a, g, compared, bad = _prepared(actual, g_rounded, name)
    if bad:
        return P.Check(NAME, False, {"dtype": name}, limits, (bad,))
    rel = np.abs(a[compared] - g[compared]) / (np.abs(g[compared]) + P.REL_EPS)
    numbers = {"dtype": name, "n": int(rel.size), "mere": float(rel.mean()) if rel.size else 0.0}
    numbers["mare"] = float(rel.max()) if rel.size else 0.0
    if numbers["mere"] < t and numbers["mare"] < 10 * t:
        return P.Check(NAME, True, numbers, limits)
    c, _, _, _ = _prepared(control, g_rounded, name)
    ours, theirs = _errors(a, g, compared, name), _errors(c, g, compared, name)
    if witness is not None:
        w, _, _, _ = _prepared(witness, g_rounded, name)
        guard = _errors(w, g, compared, name)["over"]
    else:
        guard = theirs["over"]
    cancel = compared & ~ours["small_mask"] & (np.abs(a) < CANCEL[name]) & (np.abs(g) < CANCEL[name])
    normal = compared & ~ours["small_mask"] & ~cancel
    regions = {
        "small-value": (ours["small"], theirs["small"], ours["small_mask"]),
        "cancellation": (ours["over"] & cancel, theirs["over"] & cancel, cancel),
        "normal": (ours["over"] & normal, theirs["over"] & normal, normal),
    }
    failures = []
    control_over = int((guard & ~ours["small_mask"]).sum())
    who = "the control" if witness is None else "the control's float32 witness"
    numbers["control misses MARE"] = f"{control_over} of {a.size}" + ("" if witness is None else " (witness)")
    if control_over > CONTROL_SHARE * a.size:
        failures.append(
            f"{who} misses MARE on {control_over} of {a.size} elements (over {CONTROL_SHARE:.1%}): it and "
            "the golden disagree, one of them is wrong"
        )
    for region, (mine, control_errs, where) in regions.items():
        n_ours, n_control = int(mine.sum()), int(control_errs.sum())
        numbers[f"{region} errors ours/control"] = f"{n_ours}/{n_control} of {int(where.sum())}"
        if region == "normal" and n_ours and not n_control:
            failures.append(f"{n_ours} normal-region elements over MARE {10 * t:.4g}, the control has none")
        elif n_ours > COUNT_RATIO * max(n_control, 1):
            failures.append(f"{region} errors {n_ours} > {COUNT_RATIO:g} x the control's {n_control}")
    return P.Check(NAME, not failures, numbers, limits, tuple(failures))
