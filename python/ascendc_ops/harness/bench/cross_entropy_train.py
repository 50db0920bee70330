"""`ascendc-ops bench cross-entropy`: the LM head and its loss, forward + backward at a training shape on this
machine, ours (the fused linear cross-entropy on the twin) against Hugging Face's path and a chunked PyTorch
implementation, with each provider's peak memory.

T tokens, H hidden, V vocabulary (default T 4096 and Qwen2's V 152,064, H 128 so the twin runs it in minutes), one
dtype, mean over the tokens. Each provider runs in its own subprocess (as `bench attention`), its inputs made there
from one seed, then one forward with grad and one backward, timed apart. Peak: VmHWM - VmRSS around the calls (the
inputs excluded): HF's path holds the logits [T, V] in the dtype, their fp32 copy and its gradient; the chunked one a
chunk's; ours nothing of T x V. Every provider's loss is printed beside its difference from HF's loss and gradient.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .hf_model import environment_line, reset_peak, status_bytes
from .provider_process import provider_runs

PROVIDERS = ("ours", "hf", "chunked")
DTYPES = ("float16", "bfloat16", "float32")
SHAPE = (4096, 128, 152064)  # T, H, V
QUICK_SHAPE = (512, 64, 32000)
CHUNK = 1024  # tokens per chunk of the chunked provider (MindSpeed's ChunkLoss and Liger's are of this order)


@dataclass
class Options:
    shape: tuple = SHAPE
    dtype: str = "bfloat16"
    providers: tuple = PROVIDERS


def inputs(shape, dtype):
    import torch

    t, h, v = shape
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(t, h, generator=gen).to(dtype)
    weight = (torch.randn(v, h, generator=gen) / h**0.5).to(dtype)
    target = torch.randint(0, v, (t,), generator=gen)
    target[::17] = -100  # some ignored tokens, as a packed batch has
    return hidden, weight, target


def hf_loss(hidden, weight, target):
    """Hugging Face's causal-LM path: lm_head, then ForCausalLMLoss's upcast and cross-entropy."""
    import torch.nn.functional as F

    logits = hidden @ weight.T
    return F.cross_entropy(logits.float(), target, ignore_index=-100, reduction="mean")


def chunked_loss(hidden, weight, target):
    """The loss and both gradients a chunk of CHUNK tokens at a time in the forward (the gradients kept for the
    backward), in fp32 logits: what MindSpeed's ChunkLoss and Liger's PyTorch fallback do."""
    import torch

    class Chunked(torch.autograd.Function):
        @staticmethod
        def forward(ctx, h, w, t):
            count = (t != -100).sum().clamp(min=1)
            loss, gh, gw = (
                h.new_zeros((), dtype=torch.float32),
                torch.empty_like(h),
                torch.zeros_like(w, dtype=torch.float32),
            )
            for i in range(0, h.shape[0], CHUNK):
                hc, tc = h[i : i + CHUNK], t[i : i + CHUNK]
                x = (hc @ w.T).float()
                lse = torch.logsumexp(x, -1)
                keep = tc != -100
                picked = x.gather(1, tc.clamp(min=0)[:, None])[:, 0]
                loss += ((lse - picked) * keep).sum()
                g = torch.softmax(x, -1)
                g[keep.nonzero()[:, 0], tc[keep]] -= 1
                g = (g * (keep[:, None] / count)).to(h.dtype)
                gh[i : i + CHUNK] = g @ w
                gw += (g.T @ hc).float()
            ctx.save_for_backward(gh, gw.to(w.dtype))
            return loss / count

        @staticmethod
        def backward(ctx, grad):
            gh, gw = ctx.saved_tensors
            return gh * grad, gw * grad, None

    return Chunked.apply(hidden, weight, target)


def ours_loss(hidden, weight, target):
    import ascendc_ops

    return ascendc_ops.linear_cross_entropy(hidden, weight, target)


def worker(provider: str, shape: list, dtype: str, out: str) -> dict:
    """One provider's forward and backward in this process: {fwd_s, bwd_s, peak_mib, loss}; saves the gradients."""
    import gc

    import torch

    h, w, t = inputs(tuple(shape), getattr(torch, dtype))
    fn = {"ours": ours_loss, "hf": hf_loss, "chunked": chunked_loss}[provider]
    hg, wg = h.requires_grad_(), w.requires_grad_()
    gc.collect()
    ok = reset_peak()
    rss0 = status_bytes("VmRSS")
    t0 = time.perf_counter()
    loss = fn(hg, wg, t)
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    peak = status_bytes("VmHWM") - rss0 if ok else None
    torch.save({"dh": hg.grad, "dw": wg.grad, "loss": loss.detach()}, out)
    return dict(fwd_s=t1 - t0, bwd_s=t2 - t1, peak_mib=None if peak is None else peak / 2**20, loss=float(loss))


def _max_diff(path: str, ref: str) -> str:
    import torch

    a, b = torch.load(path), torch.load(ref)
    return " / ".join(f"{float((a[k].float() - b[k].float()).abs().max()):.3g}" for k in ("loss", "dh", "dw"))


def run(opts: Options) -> int:
    """Prints the table; returns 0."""
    t, h, v = opts.shape
    print(f"## LM head + cross-entropy fwd + bwd, T {t}, H {h}, V {v}, {opts.dtype}, mean over the tokens")
    print(environment_line())
    print(f"logits [T, V] would take {t * v * 2 / 2**20:.0f} MiB in bf16, {t * v * 4 / 2**20:.0f} MiB in fp32")
    print()
    print("| provider | fwd s | bwd s | peak MiB | loss | max abs diff from hf: loss / dh / dw |")
    print("|---|---|---|---|---|---|")
    payload = dict(shape=list(opts.shape), dtype=opts.dtype)
    with provider_runs(__name__, "cross-entropy", opts.providers, payload) as (rows, paths):
        for p, r in rows.items():
            diff = _max_diff(paths[p], paths["hf"]) if p != "hf" and "hf" in rows else "-"
            peak = "n/a" if r["peak_mib"] is None else f"{r['peak_mib']:.0f}"
            print(f"| {p} | {r['fwd_s']:.3f} | {r['bwd_s']:.3f} | {peak} | {r['loss']:.6f} | {diff} |")
    ours = rows.get("ours", {}).get("peak_mib")
    for ref in ("hf", "chunked"):
        theirs = rows.get(ref, {}).get("peak_mib")
        if ours and theirs:
            print(f"| {ref} peak / ours | | | {theirs / ours:.1f}x | | |")
    print()
    print(
        "ours: ascendc_ops.linear_cross_entropy on the CPU twin (a simulation of the NPU kernel: its time says nothing "
        f"of the NPU); hf: lm_head then ForCausalLMLoss's fp32 cross-entropy; chunked: {CHUNK} tokens at a time, "
        "gradients made in the forward."
    )
    return 0
