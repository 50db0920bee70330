"""`ascendc-ops bench attention`: fused attention forward + backward at a training shape on this machine, against
HF's eager attention and torch's scaled_dot_product_attention, with each provider's peak memory.

B, S, N query heads over NKV kv heads, D (default llama3-8b's heads at S 4096), BSND, causal, one dtype. Each
provider runs in its own subprocess (`worker`), so its peak is its own: the inputs are made there from one seed,
then `repeats` times one forward with grad and one backward of ``out.float().sum()``, timed apart, the best of
each shown. Peak: VmHWM - VmRSS around the calls, after resetting the high-water mark (hf_model's method; Linux;
malloc left at its defaults: with glibc's mmap for every large block, eager's S x S temporaries fault in afresh and
its forward took 3.5x as long). What it shows is memory (ours and SDPA never hold S x S; eager holds
the [B, N, S, S] scores and probabilities) and the twin's CPU time, which says nothing about the NPU (the 910B
column of `bench ops` and cann-bench's cases do). Each worker saves its output and dq, and the table gives their
largest difference from SDPA's as a sanity check (the accuracy standard is judged by `verify` and the tests).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from .hf_model import environment_line, reset_peak, status_bytes
from .provider_process import provider_runs

PROVIDERS = ("ours", "eager", "sdpa", "gemms")
# The kernel's query block (tiling/attention_tiling.cpp picks at most 128 rows at D 128): the gemms row
# multiplies that many query rows at a time against every key up to their diagonal, as the kernel's blocks do.
GEMM_ROWS = 128
DTYPES = ("float16", "bfloat16", "float32")
SHAPE = (1, 4096, 32, 8, 128)  # B, S, N, NKV, D: llama3-8b's heads at S 4096
QUICK_SHAPE = (1, 512, 32, 8, 128)


@dataclass
class Options:
    shape: tuple = SHAPE
    dtype: str = "bfloat16"
    repeats: int = 1
    providers: tuple = PROVIDERS


def gemm_blocks(q, k, v, backward: bool) -> None:
    """The GEMMs the fused kernel does, in fp32 as the twin's cube computes, through torch: for each block of
    GEMM_ROWS query rows, S = Q K^T and O = P V against the keys up to the block's diagonal; the backward's
    five (S again, dP = dO V^T, dV += P^T dO, dQ = dS K, dK += dS^T Q). Nothing else: no softmax, no
    masking, no casts, so its time is what the same FLOPs take in torch's GEMM on this machine."""
    import torch

    g = q.shape[2] // k.shape[2]
    qf = q.transpose(1, 2).float()
    kf, vf = (t.transpose(1, 2).float().repeat_interleave(g, 1) for t in (k, v))
    dk, dv = torch.zeros_like(kf), torch.zeros_like(vf)
    s = qf.shape[2]
    for i0 in range(0, s, GEMM_ROWS):
        i1 = min(i0 + GEMM_ROWS, s)
        qi, ki, vi = qf[:, :, i0:i1], kf[:, :, :i1], vf[:, :, :i1]
        p = qi @ ki.transpose(-1, -2)
        if not backward:
            p @ vi
            continue
        do = qi  # any [rows, D] operand: the products' shapes and FLOPs are what count
        ds = do @ vi.transpose(-1, -2)  # dP, standing in for dS too
        dv[:, :, :i1] += p.transpose(-1, -2) @ do
        ds @ ki  # dQ of the block
        dk[:, :, :i1] += ds.transpose(-1, -2) @ qi


def _gemms_worker(q, k, v, repeats: int) -> dict:
    fwd, bwd = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gemm_blocks(q, k, v, backward=False)
        fwd.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        gemm_blocks(q, k, v, backward=True)
        bwd.append(time.perf_counter() - t0)
    return dict(fwd_s=min(fwd), bwd_s=min(bwd), peak_mib=None)


def worker(provider: str, shape: list, dtype: str, repeats: int, out: str) -> dict:
    """One provider's calls in this process: {fwd_s, bwd_s (best of `repeats`), peak_mib}; saves out and dq
    (gemms: times only)."""
    import gc

    import torch

    from ..families import attention as A

    gen = torch.Generator().manual_seed(0)
    q, k, v, mask = A.attention_inputs(tuple(shape), getattr(torch, dtype), gen)
    if provider == "gemms":
        return _gemms_worker(q, k, v, repeats)
    fn = {"ours": A.attention_ours, "eager": A.attention_eager, "sdpa": A.attention_sdpa}[provider]
    fwd, bwd = [], []
    gc.collect()
    ok = reset_peak()
    rss0 = status_bytes("VmRSS")
    for _ in range(repeats):
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        t0 = time.perf_counter()
        o = fn(qg, kg, vg, mask)
        fwd.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        o.float().sum().backward()
        bwd.append(time.perf_counter() - t0)
    peak = status_bytes("VmHWM") - rss0 if ok else None
    torch.save({"out": o.detach(), "dq": qg.grad}, out)
    return dict(fwd_s=min(fwd), bwd_s=min(bwd), peak_mib=None if peak is None else peak / 2**20)


def _max_diff(path: str, ref: str) -> tuple:
    import torch

    a, b = torch.load(path), torch.load(ref)
    return tuple(float((a[k].float() - b[k].float()).abs().max()) for k in ("out", "dq"))


def _secs(x: float) -> str:
    """At least four significant digits: a small shape's SDPA call takes tens of microseconds."""
    return f"{x:.{max(3, 3 - math.floor(math.log10(x)))}f}" if x > 0 else f"{x:.3f}"


def run(opts: Options) -> int:
    """Prints the table; returns 0."""
    b, s, n, nkv, d = opts.shape
    print(
        f"## fused attention fwd + bwd, B {b}, S {s}, {n} query heads over {nkv} kv heads, D {d}, {opts.dtype}, "
        "BSND, causal"
    )
    print(environment_line())
    print(
        f"{opts.repeats} call(s) per provider, each provider in its own process; S x S in fp32 would take "
        f"{b * n * s * s * 4 / 2**20:.0f} MiB"
    )
    print()
    print("| provider | fwd s | bwd s | peak MiB | max abs diff from sdpa: out / dq |")
    print("|---|---|---|---|---|")
    payload = dict(shape=list(opts.shape), dtype=opts.dtype, repeats=opts.repeats)
    with provider_runs(__name__, "attention", opts.providers, payload) as (rows, paths):
        for p, r in rows.items():
            diff = "-"
            if p not in ("sdpa", "gemms") and "sdpa" in rows:
                diff = "{:.3g} / {:.3g}".format(*_max_diff(paths[p], paths["sdpa"]))
            peak = "n/a" if r["peak_mib"] is None else f"{r['peak_mib']:.0f}"
            print(f"| {p} | {_secs(r['fwd_s'])} | {_secs(r['bwd_s'])} | {peak} | {diff} |")
    if "ours" in rows:
        for ref in ("sdpa", "gemms"):
            if ref in rows:
                f, b_ = (rows["ours"][k] / rows[ref][k] for k in ("fwd_s", "bwd_s"))
                print(f"| ours / {ref} | {f:.1f}x | {b_:.1f}x | | |")
    print()
    print(
        "ours: fusion_attention on the CPU twin (a simulation of the NPU kernel); eager: HF's eager_attention_forward; "
        "sdpa: torch's scaled_dot_product_attention (its CPU flash kernel); gemms: only the kernel's block GEMMs "
        f"({GEMM_ROWS} query rows against the keys up to their diagonal; bwd: five) in fp32 through torch, the "
        "twin's cube arithmetic at torch's speed, so ours / gemms is the twin's overhead over its work."
    )
    return 0
