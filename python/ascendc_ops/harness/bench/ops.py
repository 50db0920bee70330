"""`ascendc-ops bench` (--suite ops, the default): each fused op against the PyTorch step-by-step code it
replaces, torch.compile of
that same code, and a copy of the same number of bytes, all measured in the same run.
What each op is timed against (its inputs, shapes, bytes and targets) lives in its family module (families/).

Method: warmup, then adaptive repeats timed one call at a time
with time.perf_counter_ns; median with p20/p80; effective bandwidth = bytes that must move
(inputs read once + outputs written once) / median, also as a % of the same-size copy.
"""

from __future__ import annotations

import csv
import gc
import os
import resource
import sys
import time
from dataclasses import dataclass

import torch

from ...dtypes import FLOATS as DTYPES, torch_dtype  # noqa: F401  (DTYPES: the CLI's choices)
from .. import plot
from ..environment import contention, cpu_busy, environment, progress
from ..pipeline.estimate import model_columns
from ..runner import OPS, check_shape, first
from . import BENCH_DEFAULT as DEFAULT_DTYPES, explain

PASSES = ("fwd", "bwd", "full")
DEFAULT_PASSES = ("fwd", "bwd")
PROVIDERS = ("ours", "torch", "compile", "copy")
STATS = ("median", "p20", "p80", "reps", "faults")
TARGETS = (
    "per op and pass, in the target columns (speedup over step-by-step, over torch.compile, % of copy): "
    "the op's own target, raised to the twin's speed floor (>= 1.5x step, >= 1.0x compile; streaming ops >= 70% "
    "of copy in fp32, >= 50% in 16-bit)"
)


@dataclass(frozen=True)
class LayerShapes:
    """The shapes one decoder layer of a preset model (an HF architecture) gives the ops, batch 1."""

    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    seq: int = 4096


PRESETS = {
    "llama-7b": LayerShapes(heads=32, kv_heads=32, head_dim=128, hidden=4096, intermediate=11008),
    "llama2-13b": LayerShapes(heads=40, kv_heads=40, head_dim=128, hidden=5120, intermediate=13824),
    "llama3-8b": LayerShapes(heads=32, kv_heads=8, head_dim=128, hidden=4096, intermediate=14336),
    "mistral-7b": LayerShapes(heads=32, kv_heads=8, head_dim=128, hidden=4096, intermediate=14336),
    "qwen2.5-7b": LayerShapes(heads=28, kv_heads=4, head_dim=128, hidden=3584, intermediate=18944),
    "qwen2.5-0.5b": LayerShapes(heads=14, kv_heads=2, head_dim=64, hidden=896, intermediate=4864),
}


@dataclass
class Config:
    ops: tuple = tuple(OPS)
    shapes: tuple = ()  # explicit shapes for every op; none (and no presets): each op's defaults
    presets: tuple = ()
    seq: int = 0  # 0: each preset's sequence length
    dtypes: tuple = DEFAULT_DTYPES
    passes: tuple = DEFAULT_PASSES
    full: bool = True  # every default shape of each op; False: its first (the main job's few minutes)
    target_s: float = 0.5  # time spent per provider and case
    min_reps: int = 10
    warmup: int = 3
    threads: int = 0  # 0: all cores this process may run on
    tune_malloc: bool = True
    compile: bool = True
    csv: str | None = None
    plot: str | None = None
    progress: bool = True
    explain: bool = True  # profile each row that misses a target (harness/bench/explain.py)
    calibrated: bool = True  # the 910B model with the values fitted to measured times (--uncalibrated: priors)


def cases(cfg: Config) -> list[tuple]:
    """(op, shape, preset) in run order; raises ValueError for a shape an op cannot take."""
    out = []
    for name in cfg.ops:
        op = OPS[name]
        shapes = [(tuple(s), "") for s in cfg.shapes]
        for p in cfg.presets:
            m = PRESETS[p]
            shapes += [(s, p) for s in op.preset_shapes(m, cfg.seq or m.seq)]
        if not cfg.shapes and not cfg.presets:
            shapes = [(s, "") for s in op.default_shapes[: None if cfg.full else 1]]
        for shape, preset in dict.fromkeys(shapes):
            check_shape(name, shape)
            out.append((name, shape, preset))
    return out


# ---- measurement ----
def pct(sorted_vals, q):
    """Linear-interpolated percentile of an ascending list."""
    k = (len(sorted_vals) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def time_providers(calls: dict, cfg: Config, rounds: int = 5) -> dict:
    """Per-call times (ms) and minor page faults per call for each provider. Providers take turns
    in `rounds` slices, so a burst of load from elsewhere hits all of them alike. Each provider's
    last output stays alive until its next call returns."""
    last = {k: None for k in calls}
    for k, fn in calls.items():
        for _ in range(cfg.warmup):
            last[k] = fn()
    for _ in range(5):  # until the heap has grown to its high-water mark: a pass with no page faults
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for k, fn in calls.items():
            last[k] = fn()
        if resource.getrusage(resource.RUSAGE_SELF).ru_minflt == f0:
            break
    times = {k: [] for k in calls}
    faults = dict.fromkeys(calls, 0)
    per_slice = -(-cfg.min_reps // rounds)
    gc.disable()
    try:
        for _ in range(rounds):
            for k, fn in calls.items():
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                end = time.perf_counter_ns() + int(cfg.target_s / rounds * 1e9)
                n = 0
                while n < per_slice or (time.perf_counter_ns() < end and n < 2000):
                    t0 = time.perf_counter_ns()
                    last[k] = fn()
                    times[k].append((time.perf_counter_ns() - t0) / 1e6)
                    n += 1
                faults[k] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    finally:
        gc.enable()
    stats = {}
    for k, ts in times.items():
        ts.sort()
        stats[k] = {
            "median": pct(ts, 0.5),
            "p20": pct(ts, 0.2),
            "p80": pct(ts, 0.8),
            "reps": len(ts),
            "faults": faults[k] / len(ts),
        }
    return stats


class _Quiet:
    """Silences C-level writes to stderr (the profiler's start/stop lines)."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)


MEMORY_METHOD = (
    "peak of live bytes allocated through torch's CPU allocator during one call "
    "(torch.profiler memory events; kernel-internal malloc not seen)"
)


def peak_alloc_mb(fn):
    """Peak of (allocations - frees) through torch's allocator during one call, in MB, or None."""
    gc.collect()
    try:
        with (
            _Quiet(),
            torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof,
        ):
            out = fn()
        events = sorted(
            (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
        )
    except Exception:  # private profiler API moved: report n/a rather than guess
        return None
    del out
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak / 2**20


# ---- one case: one op, shape, dtype and pass, all providers side by side ----
def run_case(name, shape, dtype_name, pass_, cfg: Config, compiled, preset: str = ""):
    op, dtype = OPS[name], torch_dtype(dtype_name)
    gen = torch.Generator().manual_seed(0)
    inputs = op.make_inputs(shape, dtype, gen)
    x, rest = inputs[0], inputs[1:]
    fns = {"ours": op.ours, "torch": op.step}
    if compiled is not None:
        fns["compile"] = compiled
    if pass_ == "fwd":
        calls = {k: (lambda f=f: f(*inputs)) for k, f in fns.items()}
        whole = calls
    else:  # dx only; the other inputs do not require grad
        xg = x.clone().requires_grad_()
        dy = torch.randn(first(op.ours(*inputs)).shape, generator=gen).to(dtype)
        whole = {k: (lambda f=f: torch.autograd.grad(first(f(xg, *rest)), xg, dy)[0]) for k, f in fns.items()}
        if pass_ == "bwd":
            ys = {k: first(f(xg, *rest)) for k, f in fns.items()}  # compiles the backward graph too
            calls = {k: (lambda y=y: torch.autograd.grad(y, xg, dy, retain_graph=True)[0]) for k, y in ys.items()}
        else:  # full: forward with grad + backward, each call
            calls = dict(whole)
    moved = op.bytes_moved(inputs, None, pass_).total
    src = torch.randn(moved // 2 // x.element_size(), generator=gen).to(dtype)
    dst = torch.empty_like(src)
    calls["copy"] = lambda: dst.copy_(src)

    outs = {k: first(calls[k]()).float() for k in fns}  # also compiles, outside any timing
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    mismatch = [k for k in fns if k != "ours" and not torch.allclose(outs["ours"], outs[k], rtol=tol, atol=tol)]
    del outs

    row = {
        "op": name,
        "shape": "x".join(map(str, shape)),
        "dtype": dtype_name,
        "pass": pass_,
        "preset": preset,
        "bytes": moved + (moved % 2),
    }
    stats = time_providers(calls, cfg)
    for k in PROVIDERS:
        for stat in STATS:
            row[f"{k}_{stat}"] = stats[k][stat] if k in stats else None
    for k in PROVIDERS[:3]:
        row[f"{k}_peak_mb"] = peak_alloc_mb(whole[k]) if k in fns else None
    med = row["ours_median"]
    row["ours_gbs"] = moved / med / 1e6
    row["copy_gbs"] = moved / row["copy_median"] / 1e6
    row["pct_copy"] = 100 * row["copy_median"] / med
    row["vs_torch"] = row["torch_median"] / med
    row["vs_compile"] = row["compile_median"] / med if compiled is not None else None
    t = op.targets[pass_].with_twin_floor(name, pass_, dtype_name)
    row["t_step"] = verdict(row["vs_torch"], t.step, "x")
    row["t_compile"] = "n/a" if compiled is None else verdict(row["vs_compile"], t.compile, "x")
    row["t_copy"] = verdict(row["pct_copy"], t.copy_pct, "%")
    row["mismatch"] = ",".join(mismatch)
    row.update(model_columns(name, inputs, pass_, calibrated=cfg.calibrated))  # the 910B estimate, same call
    return row


def not_runnable(name: str, pass_: str) -> str:
    """Why op `name` cannot run `pass_` in this build ("": it can): a backward needs its op's autograd formula,
    which an op gains after its forward (fusion_attention's once its backward kernel is merged)."""
    need = OPS[name].autograd_op
    if pass_ != "fwd" and need and not torch._C._dispatch_has_kernel_for_dispatch_key(need, "Autograd"):
        return f"{need} has no autograd formula in this build"
    return ""


def verdict(value, target, unit) -> str:
    if target is None:
        return "-"
    return f"{'PASS' if value >= target else 'MISS'} (>={target:g}{unit})"


# ---- output ----
def fmt_ms(row, k):
    if row[k + "_median"] is None:
        return "n/a"
    return f"{row[k + '_median']:.3f} ({row[k + '_p20']:.3f}-{row[k + '_p80']:.3f})"


def fmt_mb(v):
    return "n/a" if v is None else f"{v:.0f}"


def fmt_est(v):
    return "n/a" if v is None else f"{v:.1f}"


def fmt_pct(v):
    return "n/a" if v is None else f"{v:.0f}%"


def fmt_x(v):
    return "n/a" if v is None else f"{v:.2f}x"


def markdown(rows) -> str:
    head = (
        "| op | shape | dtype | pass | ours ms (p20-p80) | step-by-step ms | torch.compile ms | copy ms "
        "| ours GB/s | % of copy | 910B est. us | % of roofline | vs step | vs compile | peak MB ours/step/compile "
        "| target step | target compile | target copy |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        shape = r["shape"] + (f" ({r['preset']})" if r.get("preset") else "")
        lines.append(
            f"| {r['op']} | {shape} | {r['dtype']} | {r['pass']} | {fmt_ms(r, 'ours')} | {fmt_ms(r, 'torch')} "
            f"| {fmt_ms(r, 'compile')} | {fmt_ms(r, 'copy')} | {r['ours_gbs']:.1f} | {r['pct_copy']:.0f}% "
            f"| {fmt_est(r['est_us_910b'])} | {fmt_pct(r['roofline_pct_910b'])} "
            f"| {fmt_x(r['vs_torch'])} | {fmt_x(r['vs_compile'])} "
            f"| {fmt_mb(r['ours_peak_mb'])}/{fmt_mb(r['torch_peak_mb'])}/{fmt_mb(r['compile_peak_mb'])} "
            f"| {r['t_step']} | {r['t_compile']} | {r['t_copy']} |"
        )
    return "\n".join(lines)


ENV_FIELDS = ("time", "cpu", "isa", "cores", "threads", "load", "allocator", "torch", "python", "package", "commit")
ROW_FIELDS = (
    ("op", "shape", "dtype", "pass", "preset", "bytes")
    + tuple(f"{k}_{s}" for k in PROVIDERS for s in STATS)
    + tuple(f"{k}_peak_mb" for k in PROVIDERS[:3])
    + (
        "ours_gbs",
        "copy_gbs",
        "pct_copy",
        "vs_torch",
        "vs_compile",
        "t_step",
        "t_compile",
        "t_copy",
        "mismatch",
        "est_us_910b",
        "roofline_pct_910b",
    )
    + explain.FIELDS
)
CSV_FIELDS = ENV_FIELDS + ROW_FIELDS


def check_csv(path: str) -> None:
    """An existing, non-empty CSV must have our columns (rows are appended under its header)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    with open(path, newline="") as f:
        header = next(csv.reader(f), [])
    if tuple(header) != CSV_FIELDS:
        raise ValueError(f"--csv {path}: the file has other columns than this version writes; use a new file")


def write_csv(path: str, env: dict, rows) -> None:
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({**{k: env[k] for k in ENV_FIELDS}, **{k: r[k] for k in ROW_FIELDS}})


def run(cfg: Config, out=None) -> list[dict]:
    out = out or sys.stdout  # the stdout of the call (a test's capture), not of import
    # an op runs the passes it has targets for, a backward only once its op has an autograd formula
    asked = [
        (n, s, p, d, ps) for n, s, p in cases(cfg) for d in cfg.dtypes for ps in cfg.passes if ps in OPS[n].targets
    ]
    todo = [c for c in asked if not not_runnable(c[0], c[4])]
    skipped = [
        f"- {n} {ps}: not run: {why}"
        for n, ps, why in dict.fromkeys((c[0], c[4], not_runnable(c[0], c[4])) for c in asked if c not in todo)
    ]
    if not todo:
        print("Nothing to time:", *skipped, sep="\n", file=out)
        return []
    if cfg.plot:
        plot.pyplot()  # no matplotlib: say so now, not after the run
    if cfg.csv:
        check_csv(cfg.csv)
    start, busy0 = time.perf_counter(), cpu_busy()
    env = environment(cfg)
    for key in ("recompile_limit", "cache_size_limit"):  # shapes x dtypes x grad/no-grad per op
        if hasattr(torch._dynamo.config, key):
            setattr(torch._dynamo.config, key, max(64, getattr(torch._dynamo.config, key)))
    rows = []
    compiled = {}
    for i, (name, shape, preset, dtype_name, pass_) in enumerate(todo):
        if cfg.compile and name not in compiled:
            compiled[name] = torch.compile(OPS[name].step, fullgraph=True, dynamic=False)
        if cfg.progress:
            progress(i, len(todo), f"{name} {'x'.join(map(str, shape))} {dtype_name} {pass_}")
        rows.append(run_case(name, shape, dtype_name, pass_, cfg, compiled.get(name), preset))
    if cfg.progress:
        progress(len(todo), len(todo), "done")
    elapsed = time.perf_counter() - start
    load = env["load"] = contention(busy0, cpu_busy(), elapsed)
    t0 = time.perf_counter()
    profiled = explain.explain(rows, cfg.explain, progress if cfg.progress else None)
    explain_s = time.perf_counter() - t0

    print(
        f"Environment: CPU {env['cpu']}, {env['cores']} cores, torch threads {env['threads']} "
        f"(the CPU twin uses the same count), torch {env['torch']}, allocator {env['allocator']}, "
        f"commit {env['commit']}",
        file=out,
    )
    compile_txt = (
        "torch.compile(fullgraph=True, dynamic=False) compiled before timing; "
        if cfg.compile
        else "torch.compile skipped (--no-compile); "
    )
    print(
        f"Method: per-call time.perf_counter_ns after {cfg.warmup} warmup calls, adaptive repeats "
        f"(~{cfg.target_s:g} s per provider, >= {cfg.min_reps}, providers interleaved in 5 slices), "
        "median (p20-p80); each provider's previous output stays alive across repeats; "
        + compile_txt
        + "bwd = torch.autograd.grad(y, x, dy) with a fixed dy (dx only); full = forward with grad + that "
        "backward in each call. GB/s = (inputs read once + outputs written once, both passes for full) / median; "
        "copy = dst.copy_(src) of half those bytes, same run. 910B est. us / % of roofline: the pipeline "
        "model's estimate for the same call with the 910B tiling (a model, not a measurement; README), "
        + ("calibrated; " if cfg.calibrated else "uncalibrated (prior values); ")
        + "the roofline is the least work under the model's L2 rule (its reads from HBM, its writes held by the "
        "L2 up to its capacity: docs/pipeline-model.md) or, for a cube op (grouped_matmul, fusion_attention), its "
        "FLOPs at the cube's peak when larger. "
        f"Peak MB: {MEMORY_METHOD}; bwd/full rows: forward with grad + backward. Targets: {TARGETS}.",
        file=out,
    )
    print("", file=out)
    print(markdown(rows), file=out)
    print("\nWhere the time goes in each row that misses a target (`--no-explain` skips it):\n", file=out)
    print(explain.markdown(rows), file=out)
    notes = [
        f"- {r['op']} {r['shape']} {r['dtype']} {r['pass']}: ours differs from {r['mismatch']}"
        for r in rows
        if r["mismatch"]
    ]
    notes += skipped
    provs = [k for k in PROVIDERS if rows[0][f"{k}_faults"] is not None]
    worst = max(rows, key=lambda r: max(r[f"{k}_faults"] for k in provs))
    wk = max(provs, key=lambda k: worst[f"{k}_faults"])
    notes.append(
        f"- minor page faults per timed call (after warming up until a pass has none): at most "
        f"{worst[wk + '_faults']:.0f} ({wk}, {worst['op']} {worst['shape']} {worst['dtype']} {worst['pass']})"
    )
    notes.append(
        f"- run took {elapsed:.0f} s; during it {load} (high values make the numbers unreliable); "
        f"explaining took {explain_s:.1f} s more ({profiled} rows profiled)"
    )
    print("\n" + "\n".join(notes), file=out)
    if cfg.csv:
        write_csv(cfg.csv, env, rows)
        print(f"- appended {len(rows)} rows to {cfg.csv}", file=out)
    if cfg.plot:
        plot.bench_chart(
            rows,
            cfg.plot,
            title=f"ascendc-ops bench, {env['cpu'].split(' (')[0]}, {env['threads']} threads, commit {env['commit']}",
        )
        print(f"- wrote the chart to {cfg.plot}", file=out)
    return rows
