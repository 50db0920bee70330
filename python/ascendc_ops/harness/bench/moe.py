"""`ascendc-ops bench --suite moe`: the experts block (ours vs HF transformers' eager loop and its grouped_mm)
and a tiny Qwen3-MoE training step with and without the kernels.

    ascendc-ops bench --suite moe              # all of it (~25 min on 2 cores, most of it HF eager
                                               # and HF grouped_mm in bf16)
    ascendc-ops bench --suite moe --quick      # 256 tokens per block case, shorter model sequence
    ascendc-ops bench --suite moe --no-eager --no-memory --no-model   # the fast part

Three tables: grouped_matmul vs torch._grouped_mm and a per-expert mm loop, the experts block, and the
model step; then the targets missed, with a per-op profile of ours.

The experts block is a real HF ``Qwen3MoeExperts`` module with the case's sizes; the three implementations
are HF's own dispatch (``config._experts_implementation`` = eager / grouped_mm / ascendc_fused_moe), so all
three see the same inputs and weights. Times: median of the timed repetitions after a warm-up; fwd = no
grad, fwd+bwd = forward with grad and backward of ``sum(out * dy)`` into hidden, routing weights and both
weights. Peak memory: in a subprocess per case and dtype with large blocks mmapped (MALLOC_MMAP_THRESHOLD_),
peak RSS above the RSS before one fwd+bwd (incl. the weight gradients, the same size for all three). When a
target is missed, a per-op profile of ours follows.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

import ascendc_ops

from ...dtypes import torch_dtype
from ..environment import contention, cpu_busy, cpu_model, tune_glibc_malloc
from ..families.grouped_matmul import EXPERTS_SHAPES, experts_inputs, mm_loop
from . import BENCH_DEFAULT

IMPLS = ("eager", "grouped_mm", "ascendc_fused_moe")
CASES = {"E64": dict(E=64, K=8, H=1024, I=512, T=1024), "E8": dict(E=8, K=2, H=1024, I=2816, T=1024)}
MODEL = dict(
    vocab_size=4096,
    hidden_size=512,
    num_hidden_layers=2,
    num_attention_heads=8,
    num_key_value_heads=4,
    head_dim=64,
    intermediate_size=1024,
    moe_intermediate_size=256,
    num_experts=16,
    num_experts_per_tok=4,
    norm_topk_prob=True,
    max_position_embeddings=1024,
    hidden_act="silu",
)
TARGETS = {"grouped_mm": 1.2, "eager": 10.0}  # experts block fwd+bwd at E=64; model step: 1.5x eager
GMM_TARGET, MODEL_TARGET = 0.9, 1.5  # grouped_matmul vs torch._grouped_mm; model step vs HF eager
DTYPES = BENCH_DEFAULT  # the HF modules run in these
# The memory worker runs in a fresh process (its own peak RSS, its own malloc settings).
MEMORY_WORKER = (
    "import json, sys; from ascendc_ops.harness.bench.moe import memory_worker; "
    "print(json.dumps(memory_worker(*json.loads(sys.argv[1]))))"
)


@dataclass(frozen=True)
class Options:
    """What `bench --suite moe` runs (its command-line options)."""

    quick: bool = False  # 256 tokens per block case, a shorter model sequence
    cases: tuple = ()  # experts block cases (CASES keys); empty: all
    dtypes: tuple = ()  # empty: DTYPES
    eager: bool = True  # HF eager, the slowest (~9 s per E=64 step)
    memory: bool = True
    model: bool = True
    gmm: bool = True  # grouped_matmul vs torch._grouped_mm


def experts_module(case: dict, dtype: torch.dtype, seed: int = 0):
    """HF's Qwen3MoeExperts with the case's sizes and random weights, and routed inputs (fixed seed)."""
    from transformers import Qwen3MoeConfig
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeExperts

    import ascendc_ops.patching  # noqa: F401  (registers ascendc_fused_moe)

    cfg = Qwen3MoeConfig(
        hidden_size=case["H"],
        moe_intermediate_size=case["I"],
        num_experts=case["E"],
        num_experts_per_tok=case["K"],
        hidden_act="silu",
    )
    g = torch.Generator().manual_seed(seed)
    m = Qwen3MoeExperts(cfg)
    with torch.no_grad():
        m.gate_up_proj.copy_(torch.randn(m.gate_up_proj.shape, generator=g) * case["H"] ** -0.5)
        m.down_proj.copy_(torch.randn(m.down_proj.shape, generator=g) * case["I"] ** -0.5)
    m = m.to(dtype)
    hidden = torch.randn(case["T"], case["H"], generator=g).to(dtype)
    logits = torch.randn(case["T"], case["E"], generator=g)
    w, idx = torch.topk(logits.softmax(-1), case["K"], dim=-1)
    return m, hidden, idx, (w / w.sum(-1, keepdim=True)).to(dtype)


def run_block(m, hidden, idx, w, impl: str, backward: bool):
    m.config._experts_implementation_internal = impl
    if not backward:
        with torch.no_grad():
            return m(hidden, idx, w)
    h, p = hidden.detach().requires_grad_(), w.detach().requires_grad_()
    m.zero_grad(set_to_none=True)
    out = m(h, idx, p)
    out.backward(torch.ones_like(out))
    return out


def timed(fn, budget_s: float, max_reps: int = 7, warm_up: bool = True) -> list:
    if warm_up:
        fn()
    times = []
    while len(times) < max_reps and (not times or sum(times) < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _status(key: str) -> int:
    return int(re.search(rf"{key}:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024


def memory_worker(case_name: str, dtype_name: str, impls: list) -> dict:
    import gc

    m, hidden, idx, w = experts_module(CASES[case_name], torch_dtype(dtype_name))
    peaks = {}
    for impl in impls:  # no warm-up (HF eager takes minutes in bf16): the first call's one-off costs count
        m.zero_grad(set_to_none=True)  # every measurement allocates the weight gradients afresh
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        rss0 = _status("VmRSS")
        run_block(m, hidden, idx, w, impl, True)
        peaks[impl] = (_status("VmHWM") - rss0) / 2**20
    return peaks


def peak_memory(case_name: str, dtype_name: str, impls: list) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    cmd = [sys.executable, "-c", MEMORY_WORKER, json.dumps([case_name, dtype_name, impls])]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        return {i: None for i in impls} | {"error": res.stderr[-400:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def model_step(dtype: torch.dtype, kernels: str | None, impl: str, batch: int, seq: int, budget_s: float):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    import ascendc_ops.patching as P

    torch.manual_seed(0)
    model = Qwen3MoeForCausalLM(Qwen3MoeConfig(**MODEL)).to(dtype)
    with torch.no_grad():  # HF zero-initialises the router: random routing, as in a trained model
        for layer in model.model.layers:
            layer.mlp.gate.weight.normal_(0, 0.1)
    model.set_experts_implementation(impl)
    applied = P.apply_default_kernels(model, kernels).applied if kernels else []
    ids = torch.randint(0, MODEL["vocab_size"], (batch, seq))

    def step():
        model.zero_grad(set_to_none=False)
        model(ids, labels=ids).loss.backward()

    return timed(step, budget_s, 5), applied


def profile_ours(case: dict, dtype: torch.dtype, rows: int = 12) -> list:
    from torch.profiler import ProfilerActivity, profile

    m, hidden, idx, w = experts_module(case, dtype)
    run_block(m, hidden, idx, w, "ascendc_fused_moe", True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run_block(m, hidden, idx, w, "ascendc_fused_moe", True)
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:rows]
    return [(e.key, e.self_cpu_time_total / 1e3, e.count) for e in events]


# ---------------------------------------------------------------- grouped_matmul vs torch._grouped_mm
def grad_of(f, x, w, dy):
    """(dx, dw) of f(x, w) for the output gradient dy."""
    return torch.autograd.grad(f(x, w), (x, w), dy)


def median_ms(fns: dict, reps: int, budget_s: float = 10.0) -> dict:
    """Median ms per function after a warm-up; the functions take turns in every repetition, so a change
    in the machine's load (other jobs on the 2 cores) falls on all of them alike. A function stops
    repeating once its timed runs took budget_s (the bf16 mm loop: a minute a run)."""
    times = {k: [] for k in fns}
    for f in fns.values():
        f()
    for _ in range(reps):
        for k, f in fns.items():
            if sum(times[k]) > budget_s:
                continue
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: 1e3 * float(np.median(v)) for k, v in times.items()}


def compare_grouped_mm(shapes=EXPERTS_SHAPES, dtypes=DTYPES, reps: int = 5, out=None):
    """Forward and forward+backward (dx, dw) times: ours, torch._grouped_mm, the per-expert mm loop.
    Returns (shape, dtype, pass, ours / torch._grouped_mm speed ratio) per row."""
    out = out or sys.stdout  # the stdout of the call (a test's capture), not of import
    print(
        "| M,K,N,E | dtype | pass | ours ms | torch._grouped_mm ms | mm loop ms | vs _grouped_mm | vs loop |", file=out
    )
    print("|---|---|---|---|---|---|---|---|", file=out)
    gen = torch.Generator().manual_seed(0)
    ratios = []
    for shape in shapes:
        for dt in dtypes:
            x, w, counts = experts_inputs(shape, torch_dtype(dt), gen)
            offs = torch.cumsum(counts, 0).to(torch.int32)
            dy = torch.randn(x.shape[0], w.shape[2], generator=gen).to(x.dtype)
            impls = {
                "ours": lambda x, w, counts=counts: ascendc_ops.grouped_matmul(x, w, counts),
                "grouped_mm": lambda x, w, offs=offs: torch._grouped_mm(x, w, offs=offs),
                "loop": lambda x, w, counts=counts: mm_loop(x, w, counts),
            }
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
            for pass_ in ("fwd", "fwd+bwd"):
                if pass_ == "fwd":
                    ms = median_ms({k: partial(f, x, w) for k, f in impls.items()}, reps)
                else:
                    ms = median_ms({k: partial(grad_of, f, xg, wg, dy) for k, f in impls.items()}, reps)
                print(
                    f"| {','.join(map(str, shape))} | {dt} | {pass_} | {ms['ours']:.1f} | {ms['grouped_mm']:.1f} | "
                    f"{ms['loop']:.1f} | {ms['grouped_mm'] / ms['ours']:.2f}x | {ms['loop'] / ms['ours']:.2f}x |",
                    file=out,
                    flush=True,
                )
                ratios.append((shape, dt, pass_, ms["grouped_mm"] / ms["ours"]))
    return ratios


def _med(ts):
    return sorted(ts)[len(ts) // 2] if ts else None


def run(opts: Options) -> int:
    malloc = tune_glibc_malloc()
    busy0, t_start = cpu_busy(), time.perf_counter()
    cases = list(opts.cases or CASES)
    dtypes = list(opts.dtypes or DTYPES)
    impls = [i for i in IMPLS if opts.eager or i != "eager"]
    budget = 2.0 if opts.quick else 4.0
    print(
        f"Machine: {cpu_model()} ({torch.backends.cpu.get_cpu_capability()}), {os.cpu_count()} cores, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads); malloc {malloc}; cube GEMM as stored: "
        f"{', '.join(torch.ops.ascendc_ops.cube_gemm_native())} (other dtypes widened to fp32; "
        "ASCENDC_OPS_CUBE_GEMM=native for bf16 dot products)\n"
    )
    misses = []
    if opts.gmm:
        print("grouped_matmul alone (the experts' gate_up GEMM), median of up to 5 interleaved runs:\n")
        for shape, dt, pass_, r in compare_grouped_mm(EXPERTS_SHAPES, tuple(dtypes)):
            if r < GMM_TARGET:
                misses.append((f"grouped_matmul {','.join(map(str, shape))} {pass_}", dt, "torch._grouped_mm", r))
        print()
    print(
        "| case | dtype | pass | HF eager ms | HF grouped_mm ms | ours ms | vs grouped_mm | vs eager "
        "| peak MiB eager / grouped_mm / ours |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for cname in cases:
        case = dict(CASES[cname], T=256 if opts.quick else CASES[cname]["T"])
        label = f"E={case['E']} top{case['K']} H={case['H']} I={case['I']} T={case['T']}"
        for dname in dtypes:
            dtype = torch_dtype(dname)
            m, hidden, idx, w = experts_module(case, dtype)
            peaks = {} if not opts.memory else peak_memory(cname, dname, impls)
            for backward in (False, True):
                ms = {}
                for impl in impls:
                    eager = impl == "eager"  # one untimed-warm-up-free run: ~9 s (fp32) to minutes (bf16) each
                    ts = timed(
                        partial(run_block, m, hidden, idx, w, impl, backward),
                        budget,
                        1 if eager else 7,
                        warm_up=not eager,
                    )
                    ms[impl] = _med(ts) * 1e3
                ours = ms["ascendc_fused_moe"]
                vs = {i: ms[i] / ours for i in ms if i != "ascendc_fused_moe"}
                pk = " / ".join("n/a" if peaks.get(i) is None else f"{peaks[i]:.0f}" for i in IMPLS) if backward else ""
                eager_ms, vs_eager = (f"{ms['eager']:.1f}", f"{vs['eager']:.2f}x") if "eager" in ms else ("-", "-")
                print(
                    f"| {label} | {dname} | {'fwd+bwd' if backward else 'fwd'} | {eager_ms} "
                    f"| {ms['grouped_mm']:.1f} | {ours:.1f} | {vs['grouped_mm']:.2f}x | {vs_eager} | {pk} |",
                    flush=True,
                )
                if backward and case["E"] == 64:
                    misses += [(label, dname, i, vs[i]) for i in vs if vs[i] < TARGETS[i]]

    if opts.model:
        batch, seq = (1, 128) if opts.quick else (2, 256)
        m = MODEL
        print(
            f"\nTiny Qwen3-MoE training step (hidden {m['hidden_size']}, {m['num_hidden_layers']} layers, "
            f"{m['num_experts']} experts top-{m['num_experts_per_tok']}, moe_intermediate "
            f"{m['moe_intermediate_size']}, batch {batch} x seq {seq}), forward + backward:\n"
        )
        print("| dtype | variant | step ms | vs HF eager |\n|---|---|---:|---:|")
        for dname in dtypes:
            dtype = torch_dtype(dname)
            runs = [
                ("HF eager experts, no kernels", None, "eager"),
                ("HF grouped_mm experts, no kernels", None, "grouped_mm"),
                ("apply_default_kernels", "auto", "eager"),
            ]
            base = None
            for name, kernels, impl in runs:
                ts, applied = model_step(dtype, kernels, impl, batch, seq, budget)
                t = _med(ts) * 1e3
                base = base or t
                extra = f" ({', '.join(applied)})" if applied else ""
                print(f"| {dname} | {name}{extra} | {t:.1f} | {base / t:.2f}x |", flush=True)
                if kernels and base / t < MODEL_TARGET:
                    misses.append(("model step", dname, "eager", base / t))

    print(
        f"\nTotal {time.perf_counter() - t_start:.0f} s; during the run "
        f"{contention(busy0, cpu_busy(), time.perf_counter() - t_start)}."
    )
    if misses:

        def target(c, i):
            return MODEL_TARGET if c == "model step" else GMM_TARGET if c.startswith("grouped_matmul") else TARGETS[i]

        print(
            "\nMissed targets: "
            + "; ".join(f"{c} {d} vs {i} {v:.2f}x (target {target(c, i)}x)" for c, d, i, v in misses)
        )
        case = dict(CASES["E64"], T=256 if opts.quick else 1024)
        print(
            "\nWhere ours spends one E=64 fp32 fwd+bwd (self CPU ms, top ops):\n\n| op | ms | calls |\n|---|---:|---:|"
        )
        for key, ms, n in profile_ours(case, torch.float32):
            print(f"| {key} | {ms:.1f} | {n} |")
    return 0
