"""`ascendc-ops bench optimizer`: one AdamW step and one gradient clipping over the parameters of an LLM-shaped
model on this machine: ours (FusedAdamW: one foreach_adam_w launch; clip_grad_norm_: two launches, foreach_norm and
foreach_clip_by_total_norm) against torch.optim.AdamW with foreach=True and with fused=True, and torch's
clip_grad_norm_; then ours' clipping launch by launch, with the bytes each moves per element.

The parameters: L decoder layers of width H (q, k, v, o [H, H], gate, up [I, H], down [H, I], two norms [H]; I =
2.6875 H rounded to 64) and the embedding and LM head [32000, H]: 9 L + 2 tensors (default H 640, L 22: 200 tensors,
151M parameters). Each provider gets the same parameters, gradients and fp32 states (a first step made them), in
this process one after another; the median of the timed steps is reported, with the bytes an element must move (the
one-pass update: param, grad, m, v read, param, m, v written; clipping: the grad read for the norm, read and written
for the scaling) over that time as GB/s, and how far a sample of each provider's parameters is from the first's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .hf_model import environment_line

PROVIDERS = ("ours", "torch-foreach", "torch-fused")
DTYPES = ("float32", "bfloat16")
SHAPE = (640, 22)  # H, L
QUICK_SHAPE = (128, 4)
VOCAB = 32000


@dataclass
class Options:
    shape: tuple = SHAPE
    dtype: str = "float32"
    providers: tuple = PROVIDERS
    repeats: int = 3


def parameter_shapes(hidden: int, layers: int) -> list[tuple]:
    inter = -(-int(hidden * 2.6875) // 64) * 64
    layer = [(hidden, hidden)] * 4 + [(inter, hidden)] * 2 + [(hidden, inter), (hidden,), (hidden,)]
    return [(VOCAB, hidden)] + layer * layers + [(VOCAB, hidden)]


def make(shapes, dtype, seed=0):
    import torch

    gen = torch.Generator().manual_seed(seed)
    params = []
    for s in shapes:
        p = torch.nn.Parameter((torch.randn(s, generator=gen) * 0.02).to(dtype))
        p.grad = (torch.randn(s, generator=gen) * 1e-3).to(dtype)
        params.append(p)
    return params


def optimizer(provider: str, params):
    import torch

    import ascendc_ops

    if provider == "ours":
        return ascendc_ops.optim.FusedAdamW(params, lr=1e-4)
    return torch.optim.AdamW(params, lr=1e-4, foreach=provider == "torch-foreach", fused=provider == "torch-fused")


def timed(fn, repeats: int) -> float:
    fn()  # the first call: states made, caches warm
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def run(opts: Options) -> int:
    import torch

    import ascendc_ops

    hidden, layers = opts.shape
    shapes = parameter_shapes(hidden, layers)
    numel = sum(torch.Size(s).numel() for s in shapes)
    eb = torch.empty((), dtype=getattr(torch, opts.dtype)).element_size()
    step_bytes = numel * (3 * eb + 4 * 4)  # param and grad read, param written (eb each); m, v read and written (fp32)
    clip_bytes = numel * 3 * eb
    print(f"## AdamW step and gradient clipping, {len(shapes)} tensors, {numel / 1e6:.1f}M parameters, {opts.dtype}")
    print(environment_line())
    print(f"bytes an element must move: step {step_bytes // numel} (one pass), clipping {clip_bytes // numel}")
    print()
    print("| provider | step ms | step GB/s | clip ms | clip GB/s | max abs diff of the parameters from the first's |")
    print("|---|---|---|---|---|---|")
    first, parts = None, []
    for provider in opts.providers:
        params = make(shapes, getattr(torch, opts.dtype))
        try:
            opt = optimizer(provider, params)
        except (RuntimeError, ValueError) as e:  # fused=True needs a build of torch that has it for this dtype
            print(f"| {provider} | n/a: {e} | | | | |")
            continue
        step = timed(opt.step, opts.repeats)
        # every provider took the same 1 + repeats steps from the same start: a sample of the parameters agrees
        sample = torch.cat([p.detach().flatten()[::97].float() for p in params])
        first = sample if first is None else first
        diff = (sample - first).abs().max().item()
        clip = ascendc_ops.clip_grad_norm_ if provider == "ours" else torch.nn.utils.clip_grad_norm_
        clipped = timed(lambda c=clip, p=params: c(p, 1.0), opts.repeats)
        print(f"| {provider} | {step * 1e3:.1f} | {step_bytes / step / 1e9:.1f} | {clipped * 1e3:.1f} | "
              f"{clip_bytes / clipped / 1e9:.1f} | {diff:.2e} |")  # fmt: skip
        if provider == "ours":
            parts = clip_launches(params, opts.repeats)
        del opt, params
    print()
    if "ours" in opts.providers:
        print("ours' clipping, launch by launch (no host sync between them: the total is formed on the device)")
        print()
        print("| launch | ms | bytes an element moves | GB/s |")
        print("|---|---|---|---|")
        for name, seconds, per_elem in parts:
            print(f"| {name} | {seconds * 1e3:.1f} | {per_elem * eb} | {numel * per_elem * eb / seconds / 1e9:.1f} |")
        print()
    return 0


def clip_launches(params, repeats: int) -> list[tuple]:
    """(launch, median seconds, bytes per element in units of the gradient's element size) of clip_grad_norm_'s two
    launches: foreach_norm reads each gradient once; foreach_clip_by_total_norm reads and writes it (a coefficient of
    0.5, whatever the gradients are by then: the norms are those of the first call)."""
    from ...ops import optimizer as O

    grads = [p.grad for p in params]
    norms = O.foreach_norm(grads, 2.0)
    half = 0.5 * float(O.foreach_clip_by_total_norm_([], norms, 1.0))  # a coefficient below 1: every element scaled
    return [
        ("foreach_norm", timed(lambda: O.foreach_norm(grads, 2.0), repeats), 1),
        ("foreach_clip_by_total_norm", timed(lambda: O.foreach_clip_by_total_norm_(grads, norms, half), repeats), 2),
    ]
