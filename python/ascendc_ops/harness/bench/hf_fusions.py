"""The Qwen3 and Qwen3-MoE training steps of `ascendc-ops bench --suite model`, at three fusion levels:

- unpatched: HF eager (the MoE experts on HF's own default implementation);
- previous: ``PREVIOUS``, the fusions before fused_add_rmsnorm (rope, rmsnorm, swiglu, moe);
- all: ``apply_default_kernels(model)``, whatever the registry applies to the model now (fused_add_rmsnorm and
  any kernel registered later appear here without a change to this file).

Per family and level: the dispatched ops of one training step (forward + backward, counted by a dispatch mode:
every aten and custom op that reached a kernel, and the launches among them = the ops that are not views),
the step time (best of ``STEPS``) and the step's peak memory (hf_model's VmHWM method). Each (family, level)
runs in its own subprocess, ``ROUNDS`` interleaved rounds, best time shown; the counts are deterministic.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time

PREVIOUS = ("fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_moe")
LEVELS = ("unpatched", "previous", "all")
# Tiny but shaped like the real ones (Qwen3-0.6B's head_dim 128 and GQA; Qwen3-30B-A3B's 128 experts top-8
# scaled to 16 top-4), small enough for a 2-core CPU.
FAMILIES = {
    "qwen3": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        dict(hidden_size=512, intermediate_size=1536, num_attention_heads=8, num_key_value_heads=4, head_dim=64),
    ),
    "qwen3_moe": (
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        dict(
            hidden_size=512,
            intermediate_size=1536,
            moe_intermediate_size=256,
            num_experts=16,
            num_experts_per_tok=4,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=64,
        ),
    ),
}
COMMON = dict(num_hidden_layers=4, vocab_size=4096, max_position_embeddings=2048, tie_word_embeddings=False)
PLANS = {"default": dict(batch=2, seq=256, steps=3), "quick": dict(batch=1, seq=64, steps=2)}
ROUNDS = 2
WORKER = (
    "import json, sys; from ascendc_ops.harness.bench.hf_fusions import worker; "
    "w = json.loads(sys.argv[1]); print(json.dumps(worker(w['family'], w['level'], w['plan'])))"
)


def build(family: str):
    import torch
    import transformers

    cfg_name, model_name, kw = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, cfg_name)(**COMMON, **kw)
    return getattr(transformers, model_name)(config).float().train()


def count_ops(step) -> dict:
    """{"ops": dispatched ops, "launches": those that are not views, "by_op": top launches} of one step()."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops, self.views = collections.Counter(), 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[func.name()] += 1
            self.views += bool(func.is_view)
            return func(*args, **(kwargs or {}))

    with Count() as c:
        step()
    total = sum(c.ops.values())
    return dict(ops=total, launches=total - c.views, by_op=dict(c.ops.most_common(40)))


def worker(family: str, level: str, plan: dict) -> dict:
    import gc

    import torch

    import ascendc_ops.patching as K

    from .hf_model import reset_peak, status_bytes

    model = build(family)
    report = None
    if level == "previous":  # auto minus the newer kernels: a kind of part the model lacks is no warning
        report = K.apply_default_kernels(model, disable_kernels=[k for k in K.KERNELS if k not in PREVIOUS])
    elif level == "all":
        report = K.apply_default_kernels(model)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (plan["batch"], plan["seq"]), generator=torch.Generator().manual_seed(1))

    def step():  # gradients stay allocated (zeroed in place): the peak is activations + temporaries
        model.zero_grad(set_to_none=False)
        loss = model(ids, labels=ids).loss
        loss.backward()
        return loss

    loss = step().item()  # warm-up
    counts = count_ops(step)
    gc.collect()
    ok = reset_peak()
    rss0 = status_bytes("VmRSS")
    times = []
    for i in range(plan["steps"]):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        if i == 0:
            peak = status_bytes("VmHWM") - rss0 if ok else None
    return dict(
        family=family,
        level=level,
        applied=report.applied if report else [],
        loss=loss,
        step_s=min(times),
        peak_mib=None if peak is None else peak / 2**20,
        **counts,
    )


def _run(family, level, plan) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    cmd = [sys.executable, "-c", WORKER, json.dumps(dict(family=family, level=level, plan=plan))]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"benchmark worker failed ({family}, {level}):\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(quick: bool = False, rounds: int = ROUNDS, families=tuple(FAMILIES)) -> dict:
    """{(family, level): the worker's result, step_s the best over the rounds}."""
    plan = PLANS["quick" if quick else "default"]
    results: dict = {}
    for r in range(max(1, rounds)):
        for family in families:
            for level in LEVELS if r % 2 == 0 else LEVELS[::-1]:
                res = _run(family, level, plan)
                best = results.setdefault((family, level), res)
                best["step_s"] = min(best["step_s"], res["step_s"])
    return results


def _ratio(a, b, spec=".2f") -> str:
    return "n/a" if not a or not b else format(a / b, spec)


def table(results: dict, plan: dict) -> str:
    lines = [
        f"Training step (forward + backward), fp32, batch {plan['batch']} x {plan['seq']} tokens, "
        f"{COMMON['num_hidden_layers']} layers, vocab {COMMON['vocab_size']}.\n",
        "| model | fusions | kernels applied | ops / launches per step | launches saved vs unpatched "
        "| vs previous | step ms | speedup vs unpatched | vs previous | step peak MiB | peak vs unpatched |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    families = list(dict.fromkeys(f for f, _ in results))
    for family in families:
        base, prev = results[family, "unpatched"], results[family, "previous"]
        for level in LEVELS:
            r = results[family, level]
            lines.append(
                f"| {family} | {level} | {', '.join(k.removeprefix('fused_') for k in r['applied']) or '-'} "
                f"| {r['ops']} / {r['launches']} | {base['launches'] - r['launches']} "
                f"| {prev['launches'] - r['launches'] if level == 'all' else '-'} | {r['step_s'] * 1e3:.0f} "
                f"| {_ratio(base['step_s'], r['step_s'])}x "
                f"| {_ratio(prev['step_s'], r['step_s']) + 'x' if level == 'all' else '-'} "
                f"| {'n/a' if r['peak_mib'] is None else format(r['peak_mib'], '.0f')} "
                f"| {_ratio(r['peak_mib'], base['peak_mib'])} |"
            )
    return "\n".join(lines)


def run(quick: bool = False, rounds: int = ROUNDS) -> int:
    plan = PLANS["quick" if quick else "default"]
    t0 = time.perf_counter()
    results = measure(quick, rounds)
    print(f"\n## Qwen3 and Qwen3-MoE training steps by fusion level ({time.perf_counter() - t0:.0f} s)\n")
    print(table(results, plan))
    print(
        f"\nops = every op dispatched in one step (dispatch mode), launches = the non-view ones; time = best of "
        f"{plan['steps']} steps, best of {max(1, rounds)} interleaved subprocess rounds; "
        f"previous = {', '.join(PREVIOUS)}; all = apply_default_kernels' choice."
    )
    return 0
