"""`bench --preset cann-bench`: per cann-bench case our kernel's 910B estimate (the pipeline model,
pipeline/estimate.py) beside the built-in kernel's published 910B2 time (measured, or the cap, which is no
measurement), cann-bench's t_hw_us, the speedup and HAP, after (unless skipped) the case's accuracy on the twin;
the machine, our commit and cann-bench's commit with it; then the model check (pipeline/calibration.py): the same
model's estimate of each built-in kernel's least work against its measured time. The model runs calibrated (the
values fitted in that check) unless asked not to. `verify --preset cann-bench` is verify.suite.run on
preset.verify_cases, then the model check."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from types import SimpleNamespace

import numpy as np
import torch

from ...dtypes import BYTES, torch_dtype
from .. import pipeline
from ..environment import cpu_model, git_commit
from ..families.cross_entropy import lce_flops
from ..pipeline import calibration, estimate, is_calibrated, load_platform, model_launches, model_platform
from ..values import GenContext, make_values
from ..verify import suite as verify
from . import (
    attention,
    attention_grad as ag,
    attention_grad_enhance as age,
    attention_sink_rows as sink_rows,
    cross_entropy as ce,
    data as D,
    explain as E,
    optimizer as opt,
    preset as CB,
)
from .data import PRECAP_KIND
from .work import builtin_work

PLATFORM = "910B"  # our model's chip; cann-bench measured on a 910B2


def make_tensors(case) -> dict:
    """The case's inputs, the same data verify.run_case makes (same seed, same order; a value generator sees the
    inputs made before it, as there: the attention grad's forward outputs)."""
    spec, rng = CB.spec_of(case.op), np.random.default_rng(case.seed)
    tensors, arrays, dtypes = {}, {}, {}
    for t in case.inputs:
        ctx = GenContext(rng, t, arrays, dtypes)
        bound = SimpleNamespace(values={k: (lambda s, a, f=f, ctx=ctx: f(s, a, ctx)) for k, f in spec.values.items()})
        tensors[t.name] = torch.from_numpy(make_values(t, rng, bound, case.attrs)).to(torch_dtype(t.dtype))
        arrays[t.name], dtypes[t.name] = tensors[t.name].double().numpy(), t.dtype
    return tensors


def must_bytes(case) -> int:
    """What cann-bench's op must move at least: its float inputs read and its outputs (y, our first; query and
    key for ApplyRotaryPosEmb) written once."""
    ins = [t for t in case.inputs if t.dtype in BYTES and t.dtype != "int64"]
    outs = case.outputs[: case.meta.get("cann_outputs", 1)]
    return sum(math.prod(t.shape) * BYTES[t.dtype] for t in [*ins, *outs])


def mix_unmodelled(records: list) -> str | None:
    """Why the model gives no estimate of these launches, or None: a mix launch (AIC and AIV cores in one
    record) needs cross-core timelines, which the pipeline model has once it holds its mix module."""
    mix = any({c.get("kind") for c in r.get("cores") or []} >= {"AIC", "AIV"} for r in records)
    if mix and importlib.util.find_spec(f"{pipeline.__name__}.mix") is None:
        return "a mix kernel (AIC + AIV): the pipeline model has no mix-kernel timelines yet"
    return None


def estimate_case(case, plat) -> dict:
    """Our kernel's modelled time for one call of the case on `plat`: est_us (None when the record holds none of
    its GM traffic, or when the model cannot time its launch: `not_modelled` says why), what binds, the pipes'
    utilisation."""
    spec = CB.spec_of(case.op)
    tensors = make_tensors(case)
    if case.op == ce.LOSS_OP:  # the kernel's launches, each distinct one run once; then the backward launch
        model = ce.forward_model(tensors, plat)
        out = {"est_us": model.est_us, "bound": model.bound, "pipes": model.pipes, "launches": len(model.launches)}
        return out | {"backward": backward_estimate(case, tensors, plat)}
    records = estimate.record_packed(lambda: spec.run(tensors, case.attrs), plat)
    why = mix_unmodelled(records)
    if why:
        return {"est_us": None, "bound": "not modelled", "pipes": {}, "not_modelled": why}
    model = model_launches(records, plat)
    if estimate.unmodelled(model, must_bytes(case)):
        return {"est_us": None, "bound": "not modelled", "pipes": {}}
    between = sink_rows.between_launches_us(tensors, case.attrs, plat) if case.op == sink_rows.OP else 0.0
    return {"est_us": model.est_us + between, "bound": model.bound, "pipes": model.pipes}


def backward_estimate(case, tensors: dict, plat) -> dict:
    """linear_cross_entropy's backward launches (grad_hidden and grad_weight of the case's loss) a training step runs
    next: its modelled time, what binds, and the least backward cube work (3 x 2THV FLOPs) at the cube's peak."""
    args = ce.backward_inputs(tensors, case.attrs)
    model = ce.backward_model(args, plat)
    floor = lce_flops(args, "bwd") / plat.cube_peak_flops(case.inputs[0].dtype) * 1e6  # args: hidden, weight, ...
    return {"est_us": model.est_us, "bound": model.bound, "pipes": model.pipes, "cube_us": floor,
            "pct": 100 * floor / model.est_us if model.est_us else None}  # fmt: skip


def hbm_floor_us(task: str, c: dict, plat) -> float | None:
    """The least work's bytes that reach HBM inside the launch (the model check's: the write-back L2 from
    cann-bench's cold start, pipeline/l2.py) at the model's HBM rate; no start, no FLOPs."""
    work = builtin_work(task, c)
    return None if work is None else calibration.terms(work, plat)["HBM"]


def bench_row(task: str, c: dict, facts: dict, plat, accuracy) -> dict:
    row = {
        "task": task,
        "case_id": c["case_id"],
        "shapes": c["input_shape"],
        "dtype": c["dtype"][0],
        "attrs": c.get("attrs") or {},
        "baseline_us": c["baseline_perf_us"],
        "baseline_kind": c["baseline_kind"],
        "t_hw_us": c["t_hw_us"],
        "precap": c.get("precap"),  # a capped baseline's measurement before the cap (data._History), or None
        "not_run": CB.support(task, c),
    }
    if row["not_run"]:
        return row
    case = CB.to_case(task, c, CB.source_of(facts, task))
    if isinstance(accuracy, dict) or accuracy:  # a dict: verify's records, by case name
        judge(row, accuracy[case.name] if isinstance(accuracy, dict) else verify.run_case(case, "auto"))
    row.update(estimate_case(case, plat), hbm_floor_us=hbm_floor_us(task, c, plat))
    if task in (*attention.TASKS, *attention.LAB_TASKS, ag.TASK, age.TASK, ce.LCE_TASK, *opt.TASKS):
        row["roofline"] = roofline(task, c, row["est_us"], plat)
    return score(row)


def roofline(task: str, c: dict, est_us: float | None, plat) -> dict:
    """A case's share of its roofline: an optimizer case and an attention decode case (S <= 4) of the HBM floor
    (the least work's bytes at the model's HBM rate), a prefill case and linear_cross_entropy of the modelled cube
    peak (its FLOPs at the peak); `pct` is floor / ours, None without an estimate."""
    t = calibration.terms(builtin_work(task, c), plat)
    decode = task in (*attention.TASKS, *attention.LAB_TASKS) and attention.is_decode(c)
    of = "HBM" if task in opt.TASKS or decode else "cube"
    return {"of": of, "floor_us": t[of], "pct": 100 * t[of] / est_us if est_us else None}


def judge(row: dict, records: list[dict]) -> dict:
    """The row's accuracy from verify's records of its case: every output of cann-bench's task passes cann-bench's
    rule. Our outputs beyond the task's (a record's `task_output` False: linear_cross_entropy's statistics,
    RMSNorm's rstd) are judged by the same rule but apart, in `extra_failures`: the task neither defines nor
    judges them, so they are no part of its verdict."""
    task = [r for r in records if r.get("task_output", True)]
    extra = [r for r in records if not r.get("task_output", True)]
    row["accuracy"] = all(r["passed"] for r in task)
    row["failures"] = [f"{r['output']}: {'; '.join(r['failures'])}" for r in task if not r["passed"]]
    row["extra_failures"] = [f"{r['output']}: {'; '.join(r['failures'])}" for r in extra if not r["passed"]]
    row["default_rule"] = all(r.get("default_verdict", r)["passed"] for r in task)
    return row


def score(row: dict) -> dict:
    """The row's speedup and HAP from its estimate, baseline and accuracy."""
    est, base = row["est_us"], row["baseline_us"]
    row["speedup"] = base / est if est and base else None  # spec-only tasks have no baseline
    if row.get("precap") and est:  # counted apart: a measurement the published file no longer holds
        row["precap_speedup"] = row["precap"]["us"] / est
    # cann-bench scores a case only when it passes (delta_acc): a failed one scores 0
    row["hap"] = D.hap(base, est, row["t_hw_us"]) if est and row.get("accuracy", True) else None
    return row


def _shape(shapes) -> str:
    return " ".join("x".join(map(str, s)) for s in CB.shapes_of({"input_shape": shapes}))


def _f(v, fmt="{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def table(rows, error: float | None = None) -> str:
    """The rows as markdown; with the model's error (explain.model_error), a measured speedup inside it is
    marked "tie"."""
    head = ["task", "case", "shapes", "dtype", "attrs", "accuracy", "ours 910B est us", "binds", "HBM floor us",
            "baseline us", "baseline", "t_hw us", "speedup", "HAP", "model error on built-in",
            "% of roofline", "bwd 910B est us"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        attrs = ",".join(f"{k}={v}" for k, v in r["attrs"].items() if k != "group_list") or "-"
        if r["not_run"]:
            cells = ["not run: " + r["not_run"], "-", "-", "-"]
        else:
            acc = {True: "PASS", False: "FAIL", None: "not run"}[r.get("accuracy")]
            cells = [acc, _f(r["est_us"]), r["bound"], _f(r["hbm_floor_us"])]
        speed = _f(r.get("speedup"), "{:.2f}x")
        tie = error is not None and r.get("speedup") is not None and E.verdict(r["speedup"], error) == E.TIE_MARK
        speed += " tie" if tie and r["baseline_kind"] == "measured" else ""
        lines.append(
            "| "
            + " | ".join(
                [
                    r["task"],
                    str(r["case_id"]),
                    _shape(r["shapes"]),
                    r["dtype"],
                    attrs,
                    *cells,
                    _f(r["baseline_us"], "{:.2f}"),
                    _kind_cell(r),
                    _f(r["t_hw_us"], "{:.2f}"),
                    (speed if r["baseline_kind"] == "measured" else f"({speed})") + _precap_speed(r),
                    _f(r.get("hap"), "{:.2f}"),
                    _f(r.get("model_err"), "{:+.0%}"),
                    _roofline_cell(r.get("roofline")),
                    _backward_cell(r.get("backward")),
                ]  # fmt: skip
            )
            + " |"
        )
    return "\n".join(lines)


def _kind_cell(r: dict) -> str:
    """measured / cap / missing; a cap with the measurement it replaced, its value and the commit that capped it."""
    pre = r.get("precap")
    if not pre:
        return r["baseline_kind"]
    return f"cap; {pre['kind']}: {pre['us']:.2f} us ({pre['capped_by'][:7]})"


def _precap_speed(r: dict) -> str:
    return "" if r.get("precap_speedup") is None else f"; {r['precap_speedup']:.2f}x pre-cap"


def _roofline_cell(roof: dict | None) -> str:
    """% of the modelled cube peak (prefill attention, linear_cross_entropy) or of the HBM roofline (decode
    attention, the optimizer tasks)."""
    if not roof:
        return "-"
    what = "cube peak" if roof["of"] == "cube" else "HBM"
    return f"{_f(roof['pct'], '{:.0f}%')} of {what} ({roof['floor_us']:.1f} us)"


def _backward_cell(bwd: dict | None) -> str:
    """linear_cross_entropy's backward launch: modelled us, what binds, % of the cube peak (its least work)."""
    if not bwd:
        return "-"
    return f"{bwd['est_us']:.1f}, binds {bwd['bound']}, {_f(bwd['pct'], '{:.0f}%')} of cube peak"


def _default_rule(judged) -> str:
    """The cases this project's default rule (verify's auto: MERE/MARE, double benchmark) fails."""
    failed = [f"{r['task']} {r['case_id']}" for r in judged if not r.get("default_rule", True)]
    if not judged:
        return ""
    return f"; under this project's default rule {len(judged) - len(failed)}" + (
        f" (fails {', '.join(failed)})" if failed else ""
    )


def ours_line(plat) -> str:
    """Where our figures come from: the model, this commit, this machine."""
    return (
        f"ours: pipeline model estimate on {model_name(plat)}, not a measurement; commit {git_commit()}; "
        f"run on {cpu_model()}"
    )


def _verdicts(measured, error: float | None) -> str:
    """The measured speedups against the model's error: faster, ties, slower."""
    if error is None:
        return ""
    n = {v: sum(E.verdict(r["speedup"], error) == v for r in measured) for v in (E.FASTER, E.TIE_MARK, E.SLOWER)}
    return (
        f"; against the model's held-out error ({error:.1%}: a speedup within [1 / {1 + error:.3f}, {1 + error:.3f}] "
        f"is a tie): {n[E.FASTER]} faster, {n[E.TIE_MARK]} tie(s), {n[E.SLOWER]} slower"
    )


def summary(rows, facts: dict, ours: str, error: float | None = None) -> list[str]:
    """The counts (with `error`, explain.model_error: the ties), then `ours` (ours_line, or the provenance of
    joined runs) and the baseline's source."""
    run = [r for r in rows if not r["not_run"]]
    judged = [r for r in run if r.get("accuracy") is not None]
    measured = [r for r in run if r["baseline_kind"] == "measured" and r.get("speedup") is not None]
    s = facts["source"]
    unmodelled = {}
    for r in run:
        if r.get("not_modelled"):
            unmodelled.setdefault(r["not_modelled"], []).append(f"{r['task']} {r['case_id']}")
    return [
        *(f"no estimate for {len(v)} case(s) ({', '.join(v)}): {why}" for why, v in unmodelled.items()),
        f"cases: {len(rows)} selected, {len(run)} run by our ops, {len(rows) - len(run)} not run (reason in the row)",
        f"accuracy (twin vs float64 golden, cann-bench's rule): {sum(r['accuracy'] for r in judged)} / "
        f"{len(judged)} passed" + ("" if judged else " (skipped)") + _default_rule(judged),
        f"measured baselines: ours >= 1.0x on {sum(r['speedup'] >= 1.0 for r in measured)} / {len(measured)} "
        "(capped baselines are no measurement: their speedups are in parentheses and not counted)"
        + _verdicts(measured, error),
        _precap_line(run),
        ours,
        f"baseline, t_hw: {s['repository']} @ {s['commit']} ({s['commit_date']}), {s['times_file']} "
        f"(built-in kernels measured on Ascend {s['hardware']}); HAP as defined in {', '.join(s['hap_defined_in'])}",
    ]


def _precap_line(run: list) -> str:
    """The capped cases whose measurement before the cap is known, counted apart from the measured ones."""
    pre = [r for r in run if r.get("precap_speedup") is not None]
    commits = sorted({r["precap"]["capped_by"][:7] for r in pre})
    return (
        f"{PRECAP_KIND} (capped cases whose measurement the times file's history holds; capped by "
        f"{', '.join(commits) or '-'}): ours >= 1.0x on {sum(r['precap_speedup'] >= 1.0 for r in pre)} / {len(pre)}, "
        "counted apart from the measured baselines"
    )


def model_name(plat) -> str:
    how = "calibrated" if is_calibrated(plat) else "uncalibrated (prior values)"
    return (
        f"{plat.name} {how}: {plat.vector_cores} vector cores, {plat.hbm_bytes_per_s / 1e12:.3g} TB/s HBM, "
        f"launch {plat.launch_us(plat.vector_cores):.3g} us"
    )


def check_rows(facts: dict) -> list[dict]:
    return calibration.rows(facts, load_platform(PLATFORM), load_platform(PLATFORM, calibrated=True))


def print_model_check(facts: dict, calibrated: bool, out) -> list[dict]:
    """The model check: per measured built-in case the model's error, before and after calibration; the
    summary per bound and set; the data's commit, ours and the machine."""
    rows = check_rows(facts)
    s = facts["source"]
    cal = calibration.calibration_path(PLATFORM)
    print(
        f"\nmodel check: the {PLATFORM} model's estimate of each built-in kernel's least work (bytes read and "
        f"written once at HBM, a GEMM's FLOPs at the cube's peak, one kernel start) against its measured time; "
        f"calibrated = {cal.parent.name}/{cal.name} (fitted on the 'calibration' rows only)",
        file=out,
    )
    print(calibration.table(rows), file=out)
    print("", *calibration.summary_lines(rows), sep="\n", file=out)
    if cal.exists() and (below := json.loads(cal.read_text()).get("below_floor")):
        print("measured faster than the calibrated model's least work:", below, file=out)
    print(
        f"measured: {s['repository']} @ {s['commit']} ({s['commit_date']}), {s['times_file']} (Ascend "
        f"{s['hardware']}); model: {model_name(model_platform(PLATFORM, calibrated))}; commit {git_commit()}; "
        f"run on {cpu_model()}",
        file=out,
    )
    return rows


def make_rows(facts: dict, todo, plat, accuracy, check: list[dict], calibrated: bool, progress=None) -> list[dict]:
    """The bench rows of `todo` ((task, case) pairs); accuracy: True runs each case on the twin, False skips
    it, a dict {case name: verify records} takes verify's verdicts."""
    errors = {(r["task"], r["case_id"]): r["calibrated_err" if calibrated else "prior_err"] for r in check}
    rows = []
    for i, (task, c) in enumerate(todo):
        if progress:
            progress(i, len(todo), CB.case_name(task, c["case_id"]))
        rows.append(bench_row(task, c, facts, plat, accuracy) | {"model_err": errors.get((task, c["case_id"]))})
    if progress:
        progress(len(todo), len(todo), "done")
    return rows


def report(rows, facts: dict, plat, calibrated: bool, check: list[dict], out, failures=True) -> list[dict]:
    """The table, the failures, the summary, the explanation of each measured case below 1.0x and the model
    check; returns the explanations."""
    err_key = "calibrated_err" if calibrated else "prior_err"
    error = E.model_error(check, err_key)
    print(table(rows, error), file=out)
    for r in rows if failures else []:
        for f in r.get("failures", []):
            print(f"FAIL {CB.case_name(r['task'], r['case_id'])} {f}", file=out)
        for f in r.get("extra_failures", []):
            print(f"fail of an output beyond the task's (not its verdict) {CB.case_name(r['task'], r['case_id'])} {f}",
                  file=out)  # fmt: skip
    print("", *summary(rows, facts, ours_line(plat), error), sep="\n", file=out)
    expl = E.explanations(rows, check, facts, plat, err_key)
    print("", *E.lines(expl), sep="\n", file=out)
    print_model_check(facts, calibrated, out)
    return expl


def run_bench(
    facts: dict, only=None, quick=False, accuracy=True, json_path=None, out=None, progress=None, calibrated=True
) -> int:
    out = out or sys.stdout  # looked up at call time: a redirected stdout is honoured
    plat = model_platform(PLATFORM, calibrated)
    check = check_rows(facts)
    rows = make_rows(facts, CB.select(facts, only, quick), plat, accuracy, check, calibrated, progress)
    expl = report(rows, facts, plat, calibrated, check, out)
    if json_path:
        with open(json_path, "w") as f:
            doc = {"source": facts["source"], "model": model_name(plat), "commit": git_commit(), "machine": cpu_model(),
                   "torch": torch.__version__,
                   "rows": rows, "explanations": expl, "model_check": check}  # fmt: skip
            json.dump(D.encode(doc), f, indent=1, default=float)
        print(f"wrote {json_path}", file=out)
    return 1 if any(r.get("accuracy") is False for r in rows) else 0


def verify_report(facts: dict, cases, records: list[dict], calibrated: bool = True, out=None) -> None:
    """After `verify --preset cann-bench`: the bench table of the verified cases, their accuracy from
    verify's records, with our estimate, the baseline and HAP; then the summary and the model check."""
    out = out or sys.stdout
    plat = model_platform(PLATFORM, calibrated)
    names = {c.name for c in cases}
    todo = [(t, c) for t, c in CB.select(facts) if CB.case_name(t, c["case_id"]) in names]
    verdicts: dict = {}
    for r in records:
        verdicts.setdefault(r["case"], []).append(r)
    check = check_rows(facts)
    print("", file=out)
    rows = make_rows(facts, todo, plat, verdicts, check, calibrated)
    report(rows, facts, plat, calibrated, check, out, failures=False)  # verify has printed its failures
