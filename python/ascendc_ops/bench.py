"""Benchmarks: each fused op against the PyTorch step-by-step code it replaces, torch.compile of
that same code, and a copy of the same number of bytes, all measured in the same run.

Method (docs/precision-and-benchmarks.md): warmup, then adaptive repeats timed one call at a time
with time.perf_counter_ns; median with p20/p80; effective bandwidth = bytes that must move
(inputs read once + outputs written once) / median, also as a % of the same-size copy.
"""
from __future__ import annotations

import csv
import ctypes
import gc
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

import ascendc_ops

SHAPES = ((1, 32, 512, 128), (1, 32, 4096, 128))
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEFAULT_DTYPES = ("float32", "bfloat16")
PASSES = ("fwd", "bwd", "full")
DEFAULT_PASSES = ("fwd", "bwd")
PROVIDERS = ("ours", "torch", "compile", "copy")
STATS = ("median", "p20", "p80", "reps", "faults")
TARGETS = "per op and pass, in the target columns (speedup over step-by-step, over torch.compile, % of copy)"


@dataclass(frozen=True)
class Targets:
    """What an op must reach (None: no target), from its issue."""

    step: float | None  # x the PyTorch step-by-step code
    compile: float | None  # x torch.compile of it
    copy_pct: float | None  # % of same-size copy bandwidth


ROPE_TARGETS = {p: Targets(3.0, 1.0, 50.0) for p in ("fwd", "bwd", "full")}
SWIGLU_TARGETS = {"fwd": Targets(1.5, 1.0, None), "bwd": Targets(2.0, 1.0, None), "full": Targets(1.5, 1.0, None)}
# RMSNorm issue: forward >= 5x HF eager, >= 1.0x torch.compile, >= 60% of copy; every backward >= 2x eager
# autograd (no compile or bandwidth target given; full = forward + backward is held to the backward's 2x)
NORM_TARGETS = {"fwd": Targets(5.0, 1.0, 60.0), "bwd": Targets(2.0, None, None), "full": Targets(2.0, None, None)}


@dataclass(frozen=True)
class Model:
    """The shapes of a model that the ops see (one layer, batch 1)."""

    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    seq: int = 4096


PRESETS = {
    "llama-7b": Model(heads=32, kv_heads=32, head_dim=128, hidden=4096, intermediate=11008),
    "llama2-13b": Model(heads=40, kv_heads=40, head_dim=128, hidden=5120, intermediate=13824),
    "llama3-8b": Model(heads=32, kv_heads=8, head_dim=128, hidden=4096, intermediate=14336),
    "mistral-7b": Model(heads=32, kv_heads=8, head_dim=128, hidden=4096, intermediate=14336),
    "qwen2.5-7b": Model(heads=28, kv_heads=4, head_dim=128, hidden=3584, intermediate=18944),
    "qwen2.5-0.5b": Model(heads=14, kv_heads=2, head_dim=64, hidden=896, intermediate=4864),
}


# ---- the PyTorch step-by-step code each op replaces ----
def rope_customer_torch(x, cos, sin):
    """The seed tutorial's reference: x as (even, odd) pairs, rotate each pair, stack, flatten."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    x0, x1 = pairs[..., 0], pairs[..., 1]
    c, s = cos[..., ::2], sin[..., ::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)


def rotate_half(q):
    q1, q2 = q.chunk(2, dim=-1)
    return torch.cat((-q2, q1), dim=-1)


def rotary_mul_torch(q, cos, sin):
    """HF apply_rotary_pos_emb for one tensor, cos/sin [1, 1, S, D]."""
    return q * cos + rotate_half(q) * sin


def rope_tables(seq: int, dim: int, dtype: torch.dtype, layout: str):
    """cos/sin as the host builds them: [L, D] pair-repeated (tutorial) or [1, 1, S, D] cat (HF)."""
    freqs = 1.0 / 10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    ang = torch.outer(torch.arange(seq, dtype=torch.float64), freqs)
    ang = ang.repeat_interleave(2, dim=1) if layout == "pairs" else torch.cat((ang, ang), -1)[None, None]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rope_inputs(tables: str):
    def make(shape, dtype, gen):
        x = torch.randn(shape, generator=gen).to(dtype)
        cos, sin = rope_tables(shape[-2], shape[-1], dtype, tables)
        return x, cos, sin
    return make


def check_bnsd(shape) -> None:
    if len(shape) != 4 or min(shape) < 1:
        raise ValueError(f"needs 4 positive dims B,H,L,D, got {','.join(map(str, shape))}")
    if shape[-1] % 2:
        raise ValueError(f"the last dim (head_dim) must be even, got {','.join(map(str, shape))}")


def rope_preset_shapes(m: Model, seq: int) -> list[tuple]:
    """q [1, heads, seq, head_dim] and k [1, kv_heads, seq, head_dim]."""
    return list(dict.fromkeys([(1, m.heads, seq, m.head_dim), (1, m.kv_heads, seq, m.head_dim)]))


def rope_bytes(inputs, out, pass_) -> int:
    """x (or dy) and cos, sin read; y (or dx) written; full = both passes."""
    x, cos, sin = inputs
    one = 2 * x.nbytes + cos.nbytes + sin.nbytes
    return 2 * one if pass_ == "full" else one


def swiglu_torch(x):
    """HF LlamaMLP's act_fn(gate) * up on the fused gate/up projection output."""
    gate, up = x.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def swiglu_inputs(shape, dtype, gen):
    return (torch.randn(shape, generator=gen).to(dtype),)


def check_gate_up(shape) -> None:
    if len(shape) != 2 or min(shape) < 1 or shape[-1] % 2:
        raise ValueError(f"needs 2 positive dims T,2I with an even last dim, got {','.join(map(str, shape))}")


def swiglu_bytes(inputs, out, pass_) -> int:
    """fwd: x read, y (half of x) written; bwd: dy and x read, dx written; full: both."""
    x = inputs[0].nbytes
    fwd, bwd = x + x // 2, x // 2 + 2 * x
    return {"fwd": fwd, "bwd": bwd, "full": fwd + bwd}[pass_]


EPS = 1e-6


def hf_rms_norm(x, weight, eps=EPS):
    """transformers' LlamaRMSNorm.forward written out (Qwen2/3, Mistral the same): fp32 statistics, cast to
    the input dtype before the weight multiply."""
    input_dtype = x.dtype
    h = x.float()
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return weight * h.to(input_dtype)


def hf_add_rms_norm(x1, x2, weight, eps=EPS):
    """The decoder layer's residual add followed by its RMSNorm: (normed, residual); the residual is an
    output (the next layer adds to it), so every provider writes it."""
    h = x1 + x2
    return hf_rms_norm(h, weight, eps), h


def norm_inputs(n_x: int):
    def make(shape, dtype, gen):
        xs = tuple(torch.randn(shape, generator=gen).to(dtype) for _ in range(n_x))
        gamma = (1 + 0.1 * torch.randn(shape[-1], generator=gen)).to(dtype)  # gamma in x's dtype
        return (*xs, gamma)
    return make


def check_rows_hidden(shape) -> None:
    if len(shape) < 2 or min(shape) < 1:
        raise ValueError(f"needs at least 2 positive dims (rows..., hidden), got {','.join(map(str, shape))}")


def norm_bytes(n_x: int) -> Callable:
    """fwd: x (add: x1, x2) and gamma read, y and rstd (fp32, one per row) written (add: also x);
    bwd (dx only): dy, x, rstd and gamma read, dx written; full: both."""
    def count(inputs, out, pass_) -> int:
        x, gamma = inputs[0], inputs[-1]
        rstd = x.numel() // x.shape[-1] * 4
        fwd = n_x * x.nbytes + gamma.nbytes + x.nbytes + rstd + (x.nbytes if n_x == 2 else 0)
        bwd = 2 * x.nbytes + rstd + gamma.nbytes + x.nbytes
        return {"fwd": fwd, "bwd": bwd, "full": fwd + bwd}[pass_]
    return count


def first(out):
    """The output that is compared and differentiated: an op returning several gives its first."""
    return out[0] if isinstance(out, (tuple, list)) else out


@dataclass(frozen=True)
class OpBench:
    """One benchmarked op. Adding an op is one entry in OPS."""

    ours: Callable  # (*inputs) -> output, or a tuple of outputs whose first is compared and differentiated
    step: Callable  # the PyTorch step-by-step code it replaces (the same outputs)
    make_inputs: Callable  # (shape, dtype, generator) -> inputs; inputs[0] gets the gradient in bwd/full
    check_shape: Callable  # (shape) -> None, or ValueError saying what is wrong
    preset_shapes: Callable  # (Model, seq) -> shapes
    bytes_moved: Callable  # (inputs, output, pass) -> bytes that must move
    shape_help: str = "B,H,L,D"
    default_shapes: tuple = SHAPES
    targets: dict = field(default_factory=lambda: ROPE_TARGETS)  # pass -> Targets


OPS = {
    "rope_customer": OpBench(lambda x, c, s: ascendc_ops.rope_customer(x, c, s), rope_customer_torch,
                             rope_inputs("pairs"), check_bnsd, rope_preset_shapes, rope_bytes),
    "rotary_mul": OpBench(lambda x, c, s: ascendc_ops.rotary_mul(x, c, s, "half"), rotary_mul_torch,
                          rope_inputs("cat"), check_bnsd, rope_preset_shapes, rope_bytes),
    "swiglu": OpBench(lambda x: ascendc_ops.swiglu(x, -1), swiglu_torch, swiglu_inputs, check_gate_up,
                      lambda m, seq: [(seq, 2 * m.intermediate)], swiglu_bytes, "T,2I",
                      ((4096, 2 * 11008),), SWIGLU_TARGETS),
    "rms_norm": OpBench(lambda x, g: ascendc_ops.rms_norm(x, g, EPS)[0], hf_rms_norm, norm_inputs(1),
                        check_rows_hidden, lambda m, seq: [(seq, m.hidden)], norm_bytes(1), "T,H",
                        ((8192, 4096), (2048, 8192)), NORM_TARGETS),
    "add_rms_norm": OpBench(lambda x1, x2, g: ascendc_ops.add_rms_norm(x1, x2, g, EPS)[::2], hf_add_rms_norm,
                            norm_inputs(2), check_rows_hidden, lambda m, seq: [(seq, m.hidden)], norm_bytes(2),
                            "T,H", ((8192, 4096), (2048, 8192)), NORM_TARGETS),
}


@dataclass
class Config:
    ops: tuple = tuple(OPS)
    shapes: tuple = ()  # explicit shapes for every op; none (and no presets): each op's defaults
    presets: tuple = ()
    seq: int = 0  # 0: each preset's sequence length
    dtypes: tuple = DEFAULT_DTYPES
    passes: tuple = DEFAULT_PASSES
    target_s: float = 0.5  # time spent per provider and case
    min_reps: int = 10
    warmup: int = 3
    threads: int = 0  # 0: all cores this process may run on
    tune_malloc: bool = True
    compile: bool = True
    csv: str | None = None
    plot: str | None = None
    progress: bool = True


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
            shapes = [(s, "") for s in op.default_shapes]
        for shape, preset in dict.fromkeys(shapes):
            try:
                op.check_shape(shape)
            except ValueError as e:
                raise ValueError(f"{name}: shape {','.join(map(str, shape))}: {e} ({op.shape_help})") from None
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
        stats[k] = {"median": pct(ts, 0.5), "p20": pct(ts, 0.2), "p80": pct(ts, 0.8), "reps": len(ts),
                    "faults": faults[k] / len(ts)}
    return stats


def cpu_busy():
    """(busy jiffies of the whole machine, steal jiffies, this process's CPU seconds)."""
    try:
        f = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    own = sum(getattr(resource.getrusage(w), a) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for a in ("ru_utime", "ru_stime"))
    return f[0] + f[1] + f[2] + f[5] + f[6], f[7] if len(f) > 7 else 0, own


def contention(before, after, elapsed) -> str:
    if not (before and after):
        return "unknown (no /proc/stat)"
    hz, cpus = os.sysconf("SC_CLK_TCK"), os.cpu_count()
    other = ((after[0] - before[0]) / hz - (after[2] - before[2])) / (elapsed * cpus)
    steal = (after[1] - before[1]) / hz / (elapsed * cpus)
    return f"other processes used {max(other, 0) * 100:.0f}% and steal {steal * 100:.0f}% of the machine's CPU time"


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


MEMORY_METHOD = ("peak of live bytes allocated through torch's CPU allocator during one call "
                 "(torch.profiler memory events; kernel-internal malloc not seen)")


def peak_alloc_mb(fn):
    """Peak of (allocations - frees) through torch's allocator during one call, in MB, or None."""
    gc.collect()
    try:
        with _Quiet(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                              profile_memory=True) as prof:
            out = fn()
        events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                        if e.name() == "[memory]")
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
    op, dtype = OPS[name], DTYPES[dtype_name]
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
    moved = op.bytes_moved(inputs, None, pass_)
    src = torch.randn(moved // 2 // x.element_size(), generator=gen).to(dtype)
    dst = torch.empty_like(src)
    calls["copy"] = lambda: dst.copy_(src)

    outs = {k: first(calls[k]()).float() for k in fns}  # also compiles, outside any timing
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    mismatch = [k for k in fns if k != "ours" and not torch.allclose(outs["ours"], outs[k], rtol=tol, atol=tol)]
    del outs

    row = {"op": name, "shape": "x".join(map(str, shape)), "dtype": dtype_name, "pass": pass_, "preset": preset,
           "bytes": moved + (moved % 2)}
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
    t = op.targets[pass_]
    row["t_step"] = verdict(row["vs_torch"], t.step, "x")
    row["t_compile"] = "n/a" if compiled is None else verdict(row["vs_compile"], t.compile, "x")
    row["t_copy"] = verdict(row["pct_copy"], t.copy_pct, "%")
    row["mismatch"] = ",".join(mismatch)
    return row


def verdict(value, target, unit) -> str:
    if target is None:
        return "-"
    return f"{'PASS' if value >= target else 'MISS'} (>={target:g}{unit})"


# ---- environment ----
def tune_glibc_malloc() -> str:
    """Avoid the page-fault trap: glibc mmaps every block over its threshold (<= 32 MB) and unmaps
    it on free, so each fresh large output is faulted in again. Keep all blocks on the heap and
    never trim it, so freed buffers are reused like a caching allocator would."""
    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_max = -1, -4
    if libc.mallopt(m_mmap_max, 0) and libc.mallopt(m_trim_threshold, 2**31 - 1):
        return "tuned: mallopt(M_MMAP_MAX=0, M_TRIM_THRESHOLD=2GiB), freed buffers reused without faults"
    return "tuning failed (mallopt returned 0): fresh large outputs may be page-faulted"


def allocator(tune: bool) -> str:
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    for lib in ("jemalloc", "tcmalloc", "mimalloc"):
        if lib in maps:
            return f"{lib} (preloaded; left as is)"
    name = "glibc malloc " + "-".join(platform.libc_ver())
    return f"{name}, {tune_glibc_malloc() if tune else 'defaults (large outputs are mmapped and faulted in)'}"


def git_commit() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("-dirty" if dirty else "")) if sha else "unknown"


def cpu_model() -> str:
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def environment(cfg: Config) -> dict:
    model = cpu_model()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(cfg.threads or cores)
    return {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cpu": f"{model} ({torch.backends.cpu.get_cpu_capability()})", "cores": cores,
            "threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version(), "package": ascendc_ops.__version__,
            "allocator": allocator(cfg.tune_malloc), "commit": git_commit()}


# ---- output ----
def fmt_ms(row, k):
    if row[k + "_median"] is None:
        return "n/a"
    return f"{row[k + '_median']:.3f} ({row[k + '_p20']:.3f}-{row[k + '_p80']:.3f})"


def fmt_mb(v):
    return "n/a" if v is None else f"{v:.0f}"


def fmt_x(v):
    return "n/a" if v is None else f"{v:.2f}x"


def markdown(rows) -> str:
    head = ("| op | shape | dtype | pass | ours ms (p20-p80) | step-by-step ms | torch.compile ms | copy ms "
            "| ours GB/s | % of copy | vs step | vs compile | peak MB ours/step/compile "
            "| target step | target compile | target copy |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        shape = r["shape"] + (f" ({r['preset']})" if r.get("preset") else "")
        lines.append(
            f"| {r['op']} | {shape} | {r['dtype']} | {r['pass']} | {fmt_ms(r, 'ours')} | {fmt_ms(r, 'torch')} "
            f"| {fmt_ms(r, 'compile')} | {fmt_ms(r, 'copy')} | {r['ours_gbs']:.1f} | {r['pct_copy']:.0f}% "
            f"| {fmt_x(r['vs_torch'])} | {fmt_x(r['vs_compile'])} "
            f"| {fmt_mb(r['ours_peak_mb'])}/{fmt_mb(r['torch_peak_mb'])}/{fmt_mb(r['compile_peak_mb'])} "
            f"| {r['t_step']} | {r['t_compile']} | {r['t_copy']} |")
    return "\n".join(lines)


ENV_FIELDS = ("time", "cpu", "cores", "threads", "allocator", "torch", "python", "package", "commit")
ROW_FIELDS = (("op", "shape", "dtype", "pass", "preset", "bytes")
              + tuple(f"{k}_{s}" for k in PROVIDERS for s in STATS)
              + tuple(f"{k}_peak_mb" for k in PROVIDERS[:3])
              + ("ours_gbs", "copy_gbs", "pct_copy", "vs_torch", "vs_compile", "t_step", "t_compile", "t_copy",
                 "mismatch"))
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


def progress(done: int, total: int, label: str, stream=None) -> None:
    """A one-line progress bar on stderr (redrawn in place on a terminal, one line per step otherwise)."""
    stream = stream or sys.stderr
    width = 24
    fill = width * done // max(total, 1)
    bar = f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {label}"
    if stream.isatty():
        stream.write("\r\033[K" + bar + ("\n" if done >= total else ""))
    else:
        stream.write(bar + "\n")
    stream.flush()


def run(cfg: Config, out=sys.stdout) -> list[dict]:
    todo = [(n, s, p, d, ps) for n, s, p in cases(cfg) for d in cfg.dtypes for ps in cfg.passes]
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
    load = contention(busy0, cpu_busy(), elapsed)

    print(f"Environment: CPU {env['cpu']}, {env['cores']} cores, torch threads {env['threads']} "
          f"(the CPU twin uses the same count), torch {env['torch']}, allocator {env['allocator']}, "
          f"commit {env['commit']}", file=out)
    compile_txt = ("torch.compile(fullgraph=True, dynamic=False) compiled before timing; " if cfg.compile
                   else "torch.compile skipped (--no-compile); ")
    print(f"Method: per-call time.perf_counter_ns after {cfg.warmup} warmup calls, adaptive repeats "
          f"(~{cfg.target_s:g} s per provider, >= {cfg.min_reps}, providers interleaved in 5 slices), "
          "median (p20-p80); each provider's previous output stays alive across repeats; " + compile_txt +
          "bwd = torch.autograd.grad(y, x, dy) with a fixed dy (dx only); full = forward with grad + that "
          "backward in each call. GB/s = (inputs read once + outputs written once, both passes for full) / median; "
          "copy = dst.copy_(src) of half those bytes, same run. "
          f"Peak MB: {MEMORY_METHOD}; bwd/full rows: forward with grad + backward. Targets: {TARGETS}.",
          file=out)
    print("", file=out)
    print(markdown(rows), file=out)
    notes = [f"- {r['op']} {r['shape']} {r['dtype']} {r['pass']}: ours differs from {r['mismatch']}"
             for r in rows if r["mismatch"]]
    provs = [k for k in PROVIDERS if rows[0][f"{k}_faults"] is not None]
    worst = max(rows, key=lambda r: max(r[f"{k}_faults"] for k in provs))
    wk = max(provs, key=lambda k: worst[f"{k}_faults"])
    notes.append(f"- minor page faults per timed call (after warming up until a pass has none): at most "
                 f"{worst[wk + '_faults']:.0f} ({wk}, {worst['op']} {worst['shape']} {worst['dtype']} {worst['pass']})")
    notes.append(f"- run took {elapsed:.0f} s; during it {load} (high values make the numbers unreliable)")
    print("\n" + "\n".join(notes), file=out)
    if cfg.csv:
        write_csv(cfg.csv, env, rows)
        print(f"- appended {len(rows)} rows to {cfg.csv}", file=out)
    if cfg.plot:
        from .plot import bench_chart
        bench_chart(rows, cfg.plot, title=f"ascendc-ops bench, {env['cpu'].split(' (')[0]}, "
                                          f"{env['threads']} threads, commit {env['commit']}")
        print(f"- wrote the chart to {cfg.plot}", file=out)
    return rows
