"""The 910B pipeline model checked against measurement: the least work each built-in kernel cann-bench timed
must do (bytes read and written once, a GEMM's FLOPs, one kernel start), priced with the platform's
parameters, beside its measured time; the per-case error; and the fit of the machine figures those times
identify -- the vector and the cube kernels' start (launch_us, cube_launch_us) and the HBM rate -- on kernels
that sit at their floor (cann-bench's simple streaming tasks), never on the built-ins we are compared with.

Rules (fixed, so the split cannot follow the results):
- in the check: baselines that are measured (not the cap) and run one built-in kernel (the note's
  "baseline_kernels: Op×1"); several kernels' intermediate traffic is unknown;
- bytes reaching HBM: cann-bench starts every timed step with an empty L2, the L2 is write-back, so a
  launch reads its distinct inputs from HBM and writes back only the written share of what exceeds the
  L2 (pipeline/l2.py);
- a case's bound is its largest term under the prior (sourced or assumed) parameters; "launch" when no
  work term exceeds the prior launch cost; a cube or HBM case counts as such only when its term is at
  least LARGE x the fitted fixed cost (the fixed cost then <= 20% of the time), else "mixed";
- the fit: the floor tasks' (data.FLOOR_TASKS) odd case ids whose bytes fit the L2 calibrate; their even
  ids and every case larger than the L2 are held out; the built-ins we compete with (rms_norm, swi_glu,
  apply_rotary_pos_emb, grouped_matmul) are only checked, except the cube start, which only GroupedMatmul
  measures: its cases whose work is below the prior start ("launch" bound) calibrate it, the rest are held
  out (a start is identified only where it dominates; the odd/even split left the smallest ones out);
- the vector start and the HBM rate are the lower envelope of the calibration cases (no case faster than
  start + HBM bytes / rate; the smallest total relative gap), the cube start the largest that keeps every
  cube calibration case at or above its floor; the cube's peak is sourced and kept.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from .l2 import floor_seconds, l2_traffic
from .platform import PLATFORM_DIR, Platform

# cann-bench's tasks priced here beyond our ops' (pipeline sits below cann_bench, whose data.py lists them too):
ATTENTION_TASKS = ("mha", "gqa")  # level4: one fusion_attention call each, baseline FusedInferAttentionScore
# simple streaming tasks, one built-in kernel each that reads its inputs once and writes one output: their
# measured times are the evidence for the chip's start cost and HBM rate, not cases we compete on
FLOOR_TASKS = ("sigmoid", "gelu", "exp", "maximum")

CALIBRATION_DIR = PLATFORM_DIR / "calibration"
LARGE = 4.0  # a bound's term must be this many fixed costs for the case to test that term
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float": 4, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
               "uint8": 1, "bool": 1}  # fmt: skip
FITTED = ("launch_us", "cube_launch_us", "hbm_bytes_per_s")
CUBE_TASKS = ("grouped_matmul",)


@dataclass(frozen=True)
class Work:
    """The least a built-in kernel must do for one case."""

    bytes: int  # inputs read once, outputs written once
    flops: int  # a GEMM's 2*M*K*N (0 for vector ops)
    dtype: str  # the first input's (the cube's rate depends on it)
    cube: bool  # runs on the AIC (its launch counts the cube cores)
    written: int = 0  # of `bytes`, those written (the L2 holds them back: pipeline/l2.py)
    in_place: bool = False  # the outputs overwrite inputs: the launch touches no lines beyond those it reads

    @property
    def read(self) -> int:
        return self.bytes - self.written


def tensor_bytes(shape, dtype) -> int:
    """The bytes of a tensor of `shape` in cann-bench's dtype name `dtype`."""
    return math.prod(shape) * DTYPE_BYTES[dtype]


def builtin_work(task: str, case: dict) -> Work | None:
    """The minimal work of cann-bench's built-in for `case` (its reference call, scripts/baseline/refs):
    npu_rms_norm writes y and rstd (fp32, one per row), npu_swiglu half of x, npu_grouped_matmul y [M, N],
    npu_apply_rotary_pos_emb query and key, in place (aclnnApplyRotaryPosEmb's queryRef and keyRef are updated
    in place: hicann/ops-transformer posembedding/apply_rotary_pos_emb/docs/aclnnApplyRotaryPosEmb.md; its
    baselines run several kernels: not in the check, but the least work of one kernel is what the below-1.0x
    explanations compare against); FusedInferAttentionScore (mha, gqa) y of query's shape and
    4 B Nq Sq Skv D FLOPs (Q K^T and P V), halved by is_causal; CrossEntropyLoss its loss (one per target
    element for 'none', else one; its baselines run several kernels: log_softmax, then NLLLoss, with casts); a
    LinearCrossEntropy kernel the fp32 loss and 2 T H V FLOPs (no built-in: the floor of our rows); the floor
    tasks one output of the inputs' broadcast shape in the first input's dtype."""
    shapes, dtypes = case["input_shape"], [("float32" if d == "float" else d) for d in case["dtype"]]
    read = sum(tensor_bytes(s, d) for s, d in zip(shapes, dtypes, strict=False) if s is not None)
    x = shapes[0]
    if task == "rms_norm":
        rows = math.prod(x[: len(x) - len(shapes[1])])
        out = tensor_bytes(x, dtypes[0]) + 4 * rows
    elif task == "swi_glu":
        out = tensor_bytes(x, dtypes[0]) // 2
    elif task == "grouped_matmul":
        w = shapes[1]
        n = w[1] if case["attrs"].get("transpose_weight") else w[2]
        out = x[0] * n * DTYPE_BYTES[dtypes[0]]
        return Work(read + out, 2 * x[0] * x[1] * n, dtypes[0], True, out)
    elif task == "apply_rotary_pos_emb":
        out = tensor_bytes(x, dtypes[0]) + tensor_bytes(shapes[1], dtypes[1])
        return Work(read + out, 0, dtypes[0], False, out, in_place=True)
    elif task in ATTENTION_TASKS:
        (b, sq, nq, d), skv = x, shapes[1][1]
        out, flops = tensor_bytes(x, dtypes[0]), 4 * b * nq * sq * skv * d
        return Work(read + out, flops // 2 if case["attrs"].get("is_causal") else flops, dtypes[0], True, out)
    elif task == "cross_entropy_loss":  # one loss per target element ('none'), else one
        out = (math.prod(shapes[1]) if case["attrs"].get("reduction") == "none" else 1) * DTYPE_BYTES[dtypes[0]]
    elif task == "linear_cross_entropy":  # the logits stay on chip: hidden, weight and labels in, 4 bytes out
        (t, h), v = x, shapes[1][0]
        return Work(read + 4, 2 * t * h * v, dtypes[0], True, 4)
    elif task in FLOOR_TASKS:
        out = tensor_bytes(broadcast_shape(shapes), dtypes[0])
    else:
        return None
    return Work(read + out, 0, dtypes[0], False, out)


def broadcast_shape(shapes: list) -> list:
    """The shape the inputs broadcast to (numpy's rule: trailing dims, 1 stretches)."""
    n = max(len(s) for s in shapes)
    padded = [[1] * (n - len(s)) + list(s) for s in shapes]
    return [max(dims) for dims in zip(*padded, strict=True)]


def kernels(case: dict) -> int:
    """How many built-in kernels the baseline ran (the note's "baseline_kernels: A×1 + B×2"; 0: not said)."""
    m = re.search(r"baseline_kernels:\s*(.*)$", case.get("note") or "")
    return sum(int(n) for n in re.findall(r"×(\d+)", m.group(1))) if m else 0


WORK_TERMS = ("HBM", "L2", "cube")


def traffic(work: Work, plat: Platform):
    """The work's GM traffic split between HBM and the L2 (pipeline/l2.py)."""
    return l2_traffic(work.read, work.read, work.written, plat, work.written if work.in_place else 0)


def terms(work: Work, plat: Platform) -> dict:
    """The model's time terms for the work, us: the kernel's start, the bytes that reach HBM at its rate and
    every byte at the L2's (each byte once: no re-reads; the written ones reach HBM only past the L2's
    capacity, a warm L2 holding all of them sends none: pipeline/l2.py), the FLOPs at the cube's peak; the
    prediction is the start plus the largest work term."""
    memory = floor_seconds(traffic(work, plat), plat)
    return {
        "launch": plat.launch_us(plat.cube_cores if work.cube else plat.vector_cores, work.cube),
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
    for task, t in [*facts["tasks"].items(), *facts.get("floor_tasks", {}).items()]:
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
def fit_set(c: dict, plat: Platform) -> str:
    """'calibration', 'held out' (a floor task's even id, any case larger than the L2, a GroupedMatmul case
    not bound by its start) or 'checked' (a built-in we compete with: never fitted)."""
    if c["task"] in CUBE_TASKS:
        return "calibration" if bound(c["work"], plat, plat.launch_us(0)) == "launch" else "held out"
    if c["task"] not in FLOOR_TASKS:
        return "checked"
    return "held out" if c["work"].bytes > plat.l2_bytes or held_out(c["case_id"]) else "calibration"


def lower_envelope(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """(a, b) of the line t = a + b * x under every point (x, t, weight), the weighted sum of t - (a + b x)
    least: a vertex of the 2-variable program, so through two points (or the lowest point, flat)."""
    feasible = []
    for i, (x1, t1, _) in enumerate(points):
        for x2, t2, _ in points[i + 1 :]:
            if x1 != x2:
                b = (t2 - t1) / (x2 - x1)
                feasible.append((t1 - b * x1, b))
    lowest = min(points, key=lambda p: p[1])
    feasible.append((lowest[1], 0.0))
    ok = [(a, b) for a, b in feasible if b >= 0 and all(a + b * x <= t * (1 + 1e-12) for x, t, _ in points)]
    return min(ok, key=lambda ab: sum(w * (t - ab[0] - ab[1] * x) for x, t, w in points))


def calibrate(cases: list[dict], prior: Platform) -> dict:
    """The fit on the calibration cases: the vector start and the HBM rate as the lower envelope of the floor
    tasks' (time minus the per-core start share against HBM bytes, each weighted by 1 / its time: the
    relative gap), then the cube start as the largest that keeps every cube calibration case at or above
    start + its largest work term. Held-out and checked cases are never read."""
    fit = [c for c in cases if fit_set(c, prior) == "calibration"]
    vector = [c for c in fit if c["task"] in FLOOR_TASKS]
    per_core = prior.costs["launch_us_per_core"]
    points = []
    for c in vector:
        hbm = traffic(c["work"], prior).hbm_bytes
        points.append((hbm, c["measured_us"] - per_core * prior.vector_cores, 1 / c["measured_us"]))
    launch_us, us_per_byte = lower_envelope(points)
    p = prior.with_values({"launch_us": launch_us, "hbm_bytes_per_s": 1e6 / us_per_byte})
    cube = [c for c in fit if c["task"] in CUBE_TASKS]
    cube_us = min(
        c["measured_us"] - per_core * prior.cube_cores - max(terms(c["work"], p)[k] for k in WORK_TERMS) for c in cube
    )
    return {
        "launch_us": {"value": launch_us, "cases": [_name(c) for c in vector]},
        "cube_launch_us": {"value": cube_us, "cases": [_name(c) for c in cube]},
        "hbm_bytes_per_s": {"value": 1e6 / us_per_byte, "cases": [_name(c) for c in vector]},
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
                "set": fit_set(c, prior) + (" (> L2)" if c["work"].bytes > prior.l2_bytes else ""),
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


ROUNDING = 1e-3  # the fitted values are kept to 4 digits: a case on the envelope may land this far below


def below_floor(check_rows: list[dict]) -> list[dict]:
    """The measured cases faster than the calibrated model's least work for them (model / measured > 1)."""
    return [r for r in check_rows if r["calibrated_err"] > ROUNDING]


def calibration_doc(facts: dict, prior: Platform) -> dict:
    """The calibration file's content: the fitted values with their cases, the data's source, the rules, the
    error before and after on the held-out and the checked cases, and the cases below the model's floor."""
    cases, left = check_cases(facts)
    fit = calibrate(cases, prior)
    cal = prior.with_values({k: sig(fit[k]["value"]) for k in FITTED})
    s = facts["source"]
    src = f"{s['repository']} @ {s['commit']}, {s['times_file']}"
    prior_values = {k: prior.costs[k] for k in ("launch_us", "cube_launch_us")}
    prior_values["hbm_bytes_per_s"] = prior.hbm_bytes_per_s
    how = {"launch_us": "lower envelope (with hbm_bytes_per_s)", "hbm_bytes_per_s": "lower envelope (with launch_us)",
           "cube_launch_us": "the largest start under every case (the HBM rate and the cube's peak kept)"}  # fmt: skip
    check = rows(facts, prior, cal)
    return {
        "platform": prior.name,
        "about": "Parameters fitted to the measured times of built-in kernels at their floor "
        "(harness/pipeline/calibration.py); they replace the platform file's values when the model runs "
        "calibrated. Written by tools/calibrate_platform.py; tests check it equals a fresh fit of the snapshot.",
        "data": src,
        "rules": (__doc__ or "").split("Rules (fixed, so the split cannot follow the results):")[1].strip(),
        "values": {
            k: {
                "value": sig(fit[k]["value"]),
                "prior": prior_values[k],
                "source": f"fitted, {how[k]}, to the measured built-in times of {', '.join(fit[k]['cases'])} ({src})",
            }
            for k in FITTED
        },
        "held_out_error": {
            k: {n: sig(x) for n, x in v.items()} for k, v in error_summary(check).items() if "calibration" not in k
        },
        "below_floor": {f"{r['task']}:{r['case_id']}": sig(r["calibrated_err"]) for r in below_floor(check)},
        "left_out": left,
    }


def sig(v: float) -> float:
    """4 significant digits: the fit's precision is far coarser, and the file stays the same across libms."""
    return float(f"{v:.4g}")


def same_calibration(a: dict, b: dict) -> bool:
    """The two calibration files agree: the same text, cases and sources, the numbers within rounding."""

    def skeleton(d):
        return {**d, "values": {k: v["source"] for k, v in d["values"].items()},
                "below_floor": sorted(d["below_floor"]),
                "held_out_error": {k: sorted(v) for k, v in d["held_out_error"].items()}}  # fmt: skip

    def numbers(d):
        return (
            [v[f] for v in d["values"].values() for f in ("value", "prior")]
            + [x for part in ("held_out_error",) for v in d[part].values() for x in v.values()]
            + [d["below_floor"][k] for k in sorted(d["below_floor"])]
        )

    if skeleton(a) != skeleton(b):
        return False
    return all(math.isclose(x, y, rel_tol=2e-3) for x, y in zip(numbers(a), numbers(b), strict=True))
