"""`ascendc-ops bench --suite model`: a small Llama-shaped HF model with and without the ascendc_ops kernels.

    ascendc-ops bench --suite model            # ~3 min on 2 cores
    ascendc-ops bench --suite model --quick    # < 1 min, smaller shapes
    ascendc-ops bench --suite model --steps-only   # only the Qwen3 / Qwen3-MoE steps by fusion level (hf_fusions)

For fp32 and bf16, with and without ``apply_default_kernels`` (fused_rope, fused_rmsnorm, fused_swiglu):
training step (forward + backward) tokens/s, the step's peak memory, and greedy-generation tokens/s.
Prints a Markdown table with a machine/environment line, and (when the 1.3x training target is missed)
the per-op profile of one fp32 training step with and without the kernels.

Each variant runs in its own subprocess (sequentially) so that peak memory is that variant's alone, in
``--rounds`` rounds ordered A B B A ... (load drift on a shared machine hits both alike); the table shows
each variant's best round, and generation is the best of ``GEN_RUNS`` greedy runs within a round. Peak:
peak = VmHWM - VmRSS around one step, after resetting the high-water mark (/proc/self/clear_refs), with
``MALLOC_MMAP_THRESHOLD_`` fixed so large tensors are returned to the OS when freed. Linux only for memory.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time

from ...dtypes import torch_dtype

MODEL = dict(
    hidden_size=1024,
    num_hidden_layers=4,
    num_attention_heads=16,
    num_key_value_heads=16,
    intermediate_size=2816,
    vocab_size=4096,
    max_position_embeddings=2048,
    hidden_act="silu",
)
# (seq for training, batch, timed train steps, prompt len, new tokens); bf16 uses a shorter sequence:
# this CPU has no native bf16 matmul, and bf16 matmul backward is ~30x slower than fp32 here.
PLANS = {
    "default": {
        "float32": dict(seq=512, batch=1, steps=2, prompt=32, new=32),
        "bfloat16": dict(seq=64, batch=1, steps=1, prompt=16, new=16),
    },
    "quick": {
        "float32": dict(seq=128, batch=1, steps=1, prompt=16, new=8),
        "bfloat16": dict(seq=16, batch=1, steps=1, prompt=8, new=4),
    },
}
KERNELS = "fused_rope,fused_rmsnorm,fused_swiglu"
GEN_RUNS = 3
ROUNDS = 2  # subprocess runs per variant, interleaved (the best is shown)
# Each variant runs in a fresh process: its peak memory is its own.
WORKER = (
    "import json, sys; from ascendc_ops.harness.bench.hf_model import worker; "
    "w = json.loads(sys.argv[1]); print(json.dumps(worker(w['dtype'], w['kernels'], w['plan'], w['profile'])))"
)


def status_bytes(key: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"{key}:\s+(\d+)", f.read()).group(1)) * 1024


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(dtype_name: str, kernels: bool, plan: dict, profile: bool) -> dict:
    import gc

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import ascendc_ops.patching as K

    dtype = torch_dtype(dtype_name)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**MODEL)).to(dtype)
    report = K.apply_default_kernels(model, KERNELS if kernels else None)
    ids = torch.randint(0, MODEL["vocab_size"], (plan["batch"], plan["seq"]))

    def step():  # gradients stay allocated (zeroed in place): the peak is activations + temporaries
        model.zero_grad(set_to_none=False)
        model(ids, labels=ids).loss.backward()

    model.train()
    step()  # warm-up
    gc.collect()
    ok = reset_peak()
    rss0 = status_bytes("VmRSS")
    t0 = time.perf_counter()
    step()
    times = [time.perf_counter() - t0]
    peak = status_bytes("VmHWM") - rss0 if ok else None
    for _ in range(plan["steps"] - 1):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    train_s = min(times)

    prof_rows = None
    if profile:
        from torch.profiler import ProfilerActivity, profile as tprofile

        with tprofile(activities=[ProfilerActivity.CPU]) as prof:
            step()
        prof_rows = [
            (e.key, e.self_cpu_time_total / 1e3, e.count)
            for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:14]
        ]

    model.zero_grad(set_to_none=True)
    model.eval()
    prompt = ids[:, : plan["prompt"]]
    kw = dict(attention_mask=torch.ones_like(prompt), do_sample=False, pad_token_id=0)
    gen_times = []
    with torch.no_grad():
        model.generate(prompt, max_new_tokens=2, min_new_tokens=2, **kw)  # warm-up
        for _ in range(GEN_RUNS):
            t0 = time.perf_counter()
            out = model.generate(prompt, max_new_tokens=plan["new"], min_new_tokens=plan["new"], **kw)
            gen_times.append(time.perf_counter() - t0)
    gen_s = min(gen_times)
    new = (out.shape[1] - prompt.shape[1]) * out.shape[0]
    return dict(
        dtype=dtype_name,
        kernels=kernels,
        applied=report.applied,
        train_tok_s=ids.numel() / train_s,
        train_step_s=train_s,
        peak_mib=None if peak is None else peak / 2**20,
        gen_tok_s=new / gen_s,
        seq=plan["seq"],
        batch=plan["batch"],
        profile=prof_rows,
    )


def _run_variant(dtype_name, kernels, plan, profile) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    cmd = [
        sys.executable,
        "-c",
        WORKER,
        json.dumps(dict(dtype=dtype_name, kernels=kernels, plan=plan, profile=profile)),
    ]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"benchmark worker failed ({dtype_name}, kernels={kernels}):\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def environment_line() -> str:
    """The machine, library versions and load: the line a bench table is headed with."""
    import torch
    import transformers

    import ascendc_ops

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1).strip()
    except (OSError, AttributeError):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"Machine: {cpu}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"transformers {transformers.__version__}, ascendc_ops {ascendc_ops.__version__} "
        f"[{', '.join(ascendc_ops.backends())}], Python {platform.python_version()}; load average at start "
        f"{load:.2f}"
    )


def _fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def run(quick: bool = False, rounds: int = ROUNDS, profile_ops: bool = True) -> int:
    """The table (and with profile_ops the fp32 per-op profile), printed; `rounds` >= 1."""
    plans = PLANS["quick" if quick else "default"]
    env_line = environment_line()
    t_start = time.perf_counter()
    results = {}
    for dtype_name, plan in plans.items():
        for r in range(max(1, rounds)):
            for kernels in (False, True) if r % 2 == 0 else (True, False):
                profile = dtype_name == "float32" and profile_ops and r == 0
                res = _run_variant(dtype_name, kernels, plan, profile)
                best = results.setdefault((dtype_name, kernels), res)
                if res is not best:  # best round per figure; peak and profile stay from round 0
                    best["train_tok_s"] = max(best["train_tok_s"], res["train_tok_s"])
                    best["gen_tok_s"] = max(best["gen_tok_s"], res["gen_tok_s"])
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    m = MODEL
    print(
        f"## Llama-shaped model: hidden {m['hidden_size']}, {m['num_hidden_layers']} layers, "
        f"{m['num_attention_heads']} heads, intermediate {m['intermediate_size']}, vocab {m['vocab_size']}\n"
    )
    print(env_line + f", at end {load_end:.2f}\n")
    print(
        "| dtype | batch x seq | kernels | train tok/s | train speedup | step peak MiB | peak ratio "
        "| gen tok/s | gen speedup |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for dtype_name in plans:
        base = results[dtype_name, False]
        for kernels in (False, True):
            r = results[dtype_name, kernels]
            peak_ratio = (r["peak_mib"] / base["peak_mib"]) if r["peak_mib"] and base["peak_mib"] else None
            print(
                f"| {dtype_name} | {r['batch']} x {r['seq']} | {'all 3' if kernels else 'none (HF eager)'} "
                f"| {r['train_tok_s']:.1f} | {r['train_tok_s'] / base['train_tok_s']:.2f}x "
                f"| {_fmt(r['peak_mib'], '.0f')} | {_fmt(peak_ratio, '.2f')} "
                f"| {r['gen_tok_s']:.1f} | {r['gen_tok_s'] / base['gen_tok_s']:.2f}x |"
            )
    print(
        f"\nTraining step = forward + backward (loss on the same ids), best of the timed steps; step peak = "
        f"peak RSS above the pre-step RSS (parameters and their gradients already allocated, so this is "
        f"activations + temporaries); generation = greedy, batch 1, "
        f"{plans['float32']['prompt']}-token prompt, {plans['float32']['new']} new tokens (fp32), best of {GEN_RUNS}; "
        f"each figure the best of {max(1, rounds)} interleaved subprocess rounds. "
        f"Total {time.perf_counter() - t_start:.0f} s."
    )
    base, fused = results["float32", False], results["float32", True]
    speedup = fused["train_tok_s"] / base["train_tok_s"]
    if base["profile"] and fused["profile"]:
        verdict = "met" if speedup >= 1.3 else "missed"
        print(
            f"\n### fp32 training: {speedup:.2f}x (target 1.3x {verdict}); per-op profile of one step "
            "(self CPU ms, top ops)\n"
        )
        print("| op (HF eager) | ms | calls | op (all kernels) | ms | calls |")
        print("|---|---:|---:|---|---:|---:|")
        for a, b in zip(base["profile"], fused["profile"], strict=False):  # the top rows of each, side by side
            print(f"| {a[0]} | {a[1]:.1f} | {a[2]} | {b[0]} | {b[1]:.1f} | {b[2]} |")
        tot = lambda rows, keys: sum(r[1] for r in rows if any(k in r[0] for k in keys))  # noqa: E731
        mm = ("aten::mm", "aten::addmm", "aten::bmm", "aten::linear", "aten::matmul")
        print(
            f"\nMatmuls (mm/addmm/bmm) take {tot(base['profile'], mm):.0f} ms of the HF step and "
            f"{tot(fused['profile'], mm):.0f} ms of the patched one; the kernels only replace the "
            "element-wise parts (RoPE, RMSNorm, SiLU*mul), so the step speedup is bounded by their share."
        )
    return 0
