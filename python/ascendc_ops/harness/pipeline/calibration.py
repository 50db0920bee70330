"""The 910B pipeline model checked against measurement: the least work each built-in kernel cann-bench timed
must do (bytes read and written once, a GEMM's FLOPs, one kernel start), priced with the platform's
parameters, beside its measured time; the per-case error; and the fit of the two parameters those times
identify, the kernel's fixed cost (launch_us) and the effective HBM bandwidth, on a fixed calibration set,
with the cases held out to show the error on cases not fitted.

Rules (fixed, so the split cannot follow the results):
- in the check: baselines that are measured (not the cap) and run one built-in kernel (the note's
  "baseline_kernels: Op×1"); several kernels' intermediate traffic is unknown;
- a case's bound is its largest term under the prior (sourced or assumed) parameters; "launch" when no
  work term exceeds the prior launch cost; a cube or HBM case counts as such only when its term is at
  least LARGE x the fitted fixed cost (the fixed cost then <= 20% of the time), else "mixed";
- odd case ids calibrate, even ones are held out; the launch cost is fitted first (its cases' work is
  below a microsecond), then HBM (its cases chosen with that launch cost); the cube's peak is sourced and
  kept (checked, not fitted).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from .l2 import floor_seconds, l2_traffic
from .platform import PLATFORM_DIR, Platform

CALIBRATION_DIR = PLATFORM_DIR / "calibration"
LARGE = 4.0  # a bound's term must be this many fixed costs for the case to test that term
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float": 4, "int64": 8, "int32": 4}
FITTED = ("launch_us", "hbm_bytes_per_s")
ROUNDS = 4  # alternations of the two fits (each moves the other by < 1e-4 after the first)


@dataclass(frozen=True)
class Work:
    """The least a built-in kernel must do for one case."""

    bytes: int  # inputs read once, outputs written once
    flops: int  # a GEMM's 2*M*K*N (0 for vector ops)
    dtype: str  # the first input's (the cube's rate depends on it)
    cube: bool  # runs on the AIC (its launch counts the cube cores)


def _nbytes(shape, dtype) -> int:
    return math.prod(shape) * DTYPE_BYTES[dtype]


def builtin_work(task: str, case: dict) -> Work | None:
    """The minimal work of cann-bench's built-in for `case` (its reference call, scripts/baseline/refs):
    npu_rms_norm writes y and rstd (fp32, one per row), npu_swiglu half of x, npu_grouped_matmul y [M, N],
    npu_apply_rotary_pos_emb query and key (its baselines run several kernels: not in the check, but the
    least work of one kernel is what the below-1.0x explanations compare against)."""
    shapes, dtypes = case["input_shape"], [("float32" if d == "float" else d) for d in case["dtype"]]
    read = sum(_nbytes(s, d) for s, d in zip(shapes, dtypes, strict=False) if s is not None)
    x = shapes[0]
    if task == "rms_norm":
        rows = math.prod(x[: len(x) - len(shapes[1])])
        return Work(read + _nbytes(x, dtypes[0]) + 4 * rows, 0, dtypes[0], False)
    if task == "swi_glu":
        return Work(read + _nbytes(x, dtypes[0]) // 2, 0, dtypes[0], False)
    if task == "grouped_matmul":
        w = shapes[1]
        n = w[1] if case["attrs"].get("transpose_weight") else w[2]
        return Work(read + x[0] * n * DTYPE_BYTES[dtypes[0]], 2 * x[0] * x[1] * n, dtypes[0], True)
    if task == "apply_rotary_pos_emb":
        return Work(read + _nbytes(x, dtypes[0]) + _nbytes(shapes[1], dtypes[1]), 0, dtypes[0], False)
    return None


def kernels(case: dict) -> int:
    """How many built-in kernels the baseline ran (the note's "baseline_kernels: A×1 + B×2"; 0: not said)."""
    m = re.search(r"baseline_kernels:\s*(.*)$", case.get("note") or "")
    return sum(int(n) for n in re.findall(r"×(\d+)", m.group(1))) if m else 0


WORK_TERMS = ("HBM", "L2", "cube")


def terms(work: Work, plat: Platform) -> dict:
    """The model's time terms for the work, us: the kernel's start, the bytes that reach HBM at its rate and
    every byte at the L2's (each byte once: no re-reads; a warm L2 holding all of them sends none to HBM:
    pipeline/l2.py), the FLOPs at the cube's peak; the prediction is the start plus the largest work term."""
    memory = floor_seconds(l2_traffic(work.bytes, work.bytes, 0, plat), plat)
    return {
        "launch": plat.launch_us(plat.cube_cores if work.cube else plat.vector_cores),
        "HBM": memory["HBM"] * 1e6,
        "L2": memory["L2"] * 1e6,
        "cube": work.flops / plat.cube_peak_flops(work.dtype) * 1e6 if work.flops else 0.0,
    }


def predict(work: Work, plat: Platform) -> float:
    t = terms(work, plat)
    return t["launch"] + max(t[k] for k in WORK_TERMS)


def held_out(case_id: int) -> bool:
    return case_id % 2 == 0


# ---------------------------------------------------------------- the cases and their bound
def check_cases(facts: dict) -> tuple[list[dict], list[str]]:
    """(cases in the check: task, case_id, work, measured_us; lines for the cases left out and why)."""
    out, left = [], []
    for task, t in facts["tasks"].items():
        for c in t["cases"]:
            name = f"{task} {c['case_id']}"
            work = builtin_work(task, c)
            if c["baseline_kind"] != "measured":
                left.append(f"{name}: baseline {c['baseline_kind']}, no measurement")
            elif kernels(c) != 1:
                left.append(f"{name}: the baseline ran {kernels(c) or 'an unknown number of'} kernels")
            elif work is None:
                left.append(f"{name}: no work model for {task}")
            else:
                out.append({"task": task, "case_id": c["case_id"], "work": work, "measured_us": c["baseline_perf_us"]})
    return out, left


def bound(work: Work, prior: Platform, launch_us: float) -> str:
    """launch / HBM / L2 / cube / mixed under the prior parameters (see the module's rules)."""
    t = terms(work, prior)
    big = max(WORK_TERMS, key=lambda k: t[k])
    if t[big] <= t["launch"]:
        return "launch"
    return big if t[big] >= LARGE * launch_us else "mixed"


# ---------------------------------------------------------------- the fit
def _golden(f, lo: float, hi: float, tol: float = 1e-10) -> float:
    """The minimum of a unimodal f on [lo, hi]."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    while b - a > tol * max(1.0, abs(a)):
        if f(c) < f(d):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    return (a + b) / 2


def _log_sq(preds_meas) -> float:
    return sum((math.log(p) - math.log(m)) ** 2 for p, m in preds_meas)


def fit_launch(cases: list[dict], plat: Platform) -> float:
    """launch_us (the per-core term kept) minimising the squared log error of launch + work on `cases`."""
    per_core = plat.costs["launch_us_per_core"]

    def err(base):
        p = plat.with_costs(launch_us=base)
        return _log_sq((predict(c["work"], p), c["measured_us"]) for c in cases)

    return _golden(err, -per_core * plat.cube_cores + 1e-6, 1e3)


def fit_hbm(cases: list[dict], plat: Platform) -> float:
    """The HBM bandwidth (bytes/s) minimising the squared log error on `cases` (log-spaced search)."""
    lg = _golden(lambda v: _log_sq((predict(c["work"], plat.with_hbm(10**v)), c["measured_us"]) for c in cases), 9, 14)
    return 10**lg


def calibrate(cases: list[dict], prior: Platform) -> dict:
    """The fit on the calibration cases (odd ids): launch_us from the launch-bound ones, then the effective
    HBM bandwidth from the HBM-bound ones chosen with that launch cost, then both again in turn until
    settled. Held-out cases are never read."""
    fit = [c for c in cases if not held_out(c["case_id"])]
    launch_set = [c for c in fit if bound(c["work"], prior, prior.launch_us(0)) == "launch"]
    launch_us = fit_launch(launch_set, prior) if launch_set else prior.costs["launch_us"]
    p = prior.with_costs(launch_us=launch_us)
    hbm_set = [c for c in fit if bound(c["work"], prior, p.launch_us(p.vector_cores)) == "HBM"]
    for _ in range(ROUNDS):  # the launch cases' small work depends on the bandwidth, and back
        hbm = fit_hbm(hbm_set, p) if hbm_set else prior.hbm_bytes_per_s
        launch_us = fit_launch(launch_set, p.with_hbm(hbm)) if launch_set else launch_us
        p = p.with_values({"launch_us": launch_us, "hbm_bytes_per_s": hbm})
    return {
        "launch_us": {"value": launch_us, "cases": [_name(c) for c in launch_set]},
        "hbm_bytes_per_s": {"value": hbm, "cases": [_name(c) for c in hbm_set]},
    }


def _name(c) -> str:
    return f"{c['task']}:{c['case_id']}"


# ---------------------------------------------------------------- rows, errors, the table
def rows(facts: dict, prior: Platform, calibrated: Platform) -> list[dict]:
    """One row per case in the check: its bound, set, measured time, both predictions and their errors."""
    cases, _ = check_cases(facts)
    fixed = calibrated.launch_us(calibrated.vector_cores)
    out = []
    for c in cases:
        before, after = predict(c["work"], prior), predict(c["work"], calibrated)
        out.append(
            {
                "task": c["task"],
                "case_id": c["case_id"],
                "bound": bound(c["work"], prior, fixed),
                "set": "held out" if held_out(c["case_id"]) else "calibration",
                "mbytes": c["work"].bytes / 1e6,
                "gflop": c["work"].flops / 1e9,
                "measured_us": c["measured_us"],
                "prior_us": before,
                "prior_err": before / c["measured_us"] - 1,
                "calibrated_us": after,
                "calibrated_err": after / c["measured_us"] - 1,
            }
        )
    return out


def error_summary(check_rows: list[dict]) -> dict:
    """Per bound and set: count, median and largest |error| before and after calibration."""
    out = {}
    for r in check_rows:
        out.setdefault((r["bound"], r["set"]), []).append(r)
    summary = {}
    for (b, s), rs in sorted(out.items()):
        summary[f"{b}, {s}"] = {
            "n": len(rs),
            **{
                f"{k}_abs_err_{stat}": fn(sorted(abs(r[f"{k}_err"]) for r in rs))
                for k in ("prior", "calibrated")
                for stat, fn in (("median", median), ("max", max))
            },
        }
    return summary


def median(v: list) -> float:
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _pct(v: float) -> str:
    return f"{100 * v:+.0f}%"


def table(check_rows: list[dict]) -> str:
    head = ["task", "case", "built-in bound", "set", "MB", "GFLOP", "measured us", "model us (prior)",
            "error (prior)", "model us (calibrated)", "error (calibrated)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in check_rows:
        cells = [r["task"], str(r["case_id"]), r["bound"], r["set"], f"{r['mbytes']:.1f}", f"{r['gflop']:.2f}",
                 f"{r['measured_us']:.2f}", f"{r['prior_us']:.1f}", _pct(r["prior_err"]), f"{r['calibrated_us']:.1f}",
                 _pct(r["calibrated_err"])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_lines(check_rows: list[dict]) -> list[str]:
    lines = ["model error (model / measured - 1) per built-in bound and set: median |error|, largest |error|"]
    for key, s in error_summary(check_rows).items():
        lines.append(
            f"  {key} ({s['n']}): prior {100 * s['prior_abs_err_median']:.0f}%, {100 * s['prior_abs_err_max']:.0f}%; "
            f"calibrated {100 * s['calibrated_abs_err_median']:.0f}%, {100 * s['calibrated_abs_err_max']:.0f}%"
        )
    return lines


# ---------------------------------------------------------------- the calibration file
def calibration_path(plat_name: str) -> Path:
    from .platform import platform_files

    return CALIBRATION_DIR / platform_files()[plat_name.lower()].name


def calibration_doc(facts: dict, prior: Platform, evidence: dict) -> dict:
    """The calibration file's content: the fitted values with their cases (in the L2 state `evidence`,
    l2_check.decide, chose), the data's source, the rules, and the error before and after on the held-out
    cases."""
    file_warm, prior = prior.l2_warm, prior.with_l2_warm(evidence["warm"])
    cases, left = check_cases(facts)
    fit = calibrate(cases, prior)
    cal = prior.with_values({k: sig(fit[k]["value"]) for k in FITTED})
    s = facts["source"]
    src = f"{s['repository']} @ {s['commit']}, {s['times_file']}"
    prior_values = {"launch_us": prior.costs["launch_us"], "hbm_bytes_per_s": prior.hbm_bytes_per_s}
    return {
        "platform": prior.name,
        "about": "Parameters fitted to the built-in kernels' measured times (harness/pipeline/calibration.py); they "
        "replace the platform file's values when the model runs calibrated. Written by "
        "tools/calibrate_platform.py; tests check it equals a fresh fit of the snapshot.",
        "data": src,
        "rules": (__doc__ or "").split("Rules (fixed, so the split cannot follow the results):")[1].strip(),
        "values": {
            k: {
                "value": sig(fit[k]["value"]),
                "prior": prior_values[k],
                "source": "fitted (least squares in log time) to the measured built-in times of "
                f"{', '.join(fit[k]['cases'])} ({src})",
            }
            for k in FITTED
        }
        | {
            "l2_warm": {
                "value": evidence["warm"],
                "prior": file_warm,
                "source": "decided on the calibration cases (harness/pipeline/l2_check.py): the L2 state whose fit "
                f"has the smaller |error| there; see l2_state ({src})",
            }
        },
        "l2_state": {k: evidence[k] for k in ("chosen", "states", "support", "against", "hbm_cases")},
        "held_out_error": {
            k: {n: sig(x) for n, x in v.items()}
            for k, v in error_summary(rows(facts, prior, cal)).items()
            if "held out" in k
        },
        "left_out": left,
    }


def sig(v: float) -> float:
    """4 significant digits: the fit's precision is far coarser, and the file stays the same across libms."""
    return float(f"{v:.4g}")


def same_calibration(a: dict, b: dict) -> bool:
    """The two calibration files agree: the same text, cases and sources, the numbers within rounding."""

    def skeleton(d):
        l2 = {**d["l2_state"], "states": {k: sorted(v) for k, v in d["l2_state"]["states"].items()}}
        return {**d, "values": {k: v["source"] for k, v in d["values"].items()}, "l2_state": l2,
                "held_out_error": {k: sorted(v) for k, v in d["held_out_error"].items()}}  # fmt: skip

    def numbers(d):
        return (
            [v[f] for v in d["values"].values() for f in ("value", "prior")]
            + [x for part in ("held_out_error",) for v in d[part].values() for x in v.values()]
            + [x for v in d["l2_state"]["states"].values() for x in v.values()]
        )

    if skeleton(a) != skeleton(b):
        return False
    return all(math.isclose(x, y, rel_tol=2e-3) for x, y in zip(numbers(a), numbers(b), strict=True))
