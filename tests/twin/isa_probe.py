"""A fixed set of op calls, forward and backward, saved to a file: tests/twin/test_isa_paths.py runs it
once per ISA path (ASCENDC_OPS_ISA) in a subprocess and compares the files bit for bit.

Usage: python tests/twin/isa_probe.py OUT.pt   (writes {"isa": path, "library": file, "outputs": {name: tensor}})
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import ascendc_ops  # noqa: E402

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Outputs whose arithmetic is torch's GEMM (at::mm through the twin's GEMM provider), not the
# twin's: the same on every path only as far as torch's own kernels are; judged separately.
GEMM = ("grouped_matmul",)


def inputs(shape, dtype, gen):
    """Normal values, the first half of one row scaled by 1e-38: in fp32 and bf16 products of it
    with the rest are subnormal (the AVX-512 BF16 conversion flushes those; the twin must not)."""
    x = torch.randn(shape, generator=gen)
    x.view(-1, shape[-1])[0, : shape[-1] // 2] *= 1e-38
    return x.to(dtype)


def grads(fn, *tensors, gen):
    """fn's outputs and the gradients of every input for a random upstream gradient."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in tensors]
    out = fn(*leaves)
    outs = out if isinstance(out, tuple) else (out,)
    diff = [o for o in outs if o.requires_grad]
    torch.autograd.backward(diff, [torch.randn(o.shape, generator=gen).to(o.dtype) for o in diff])
    return list(outs) + [t.grad for t in leaves if t.requires_grad]


def calls(dtype, gen):
    """name -> function of nothing: every op family, odd shapes."""
    x = inputs((2, 3, 7, 40), dtype, gen)
    cos, sin = torch.randn(1, 1, 7, 40, generator=gen).to(dtype), torch.randn(1, 1, 7, 40, generator=gen).to(dtype)
    rows = inputs((7, 769), dtype, gen)
    gamma = torch.randn(769, generator=gen).to(dtype)
    glu = inputs((5, 2 * 333), dtype, gen)
    tokens = inputs((9, 72), dtype, gen)
    probs = torch.rand(9, 2, generator=gen).to(dtype)
    gx, counts = inputs((18, 72), dtype, gen), torch.tensor([3, 0, 8, 7])  # an empty group
    w = torch.randn(4, 72, 40, generator=gen).to(dtype)
    return {
        "rotary_mul_half": lambda: grads(lambda a, c, s: ascendc_ops.rotary_mul(a, c, s, "half"), x, cos, sin, gen=gen),
        "rotary_mul_interleave": lambda: grads(
            lambda a, c, s: ascendc_ops.rotary_mul(a, c, s, "interleave"), x, cos, sin, gen=gen
        ),
        "rope_customer": lambda: grads(ascendc_ops.rope_customer, x, cos[0, 0], sin[0, 0], gen=gen),  # [L, D] tables
        "rms_norm": lambda: grads(lambda a, g: ascendc_ops.rms_norm(a, g, 1e-6), rows, gamma, gen=gen),
        "add_rms_norm": lambda: grads(
            lambda a, b, g: ascendc_ops.add_rms_norm(a, b, g, 1e-6), rows, rows.flip(0), gamma, gen=gen
        ),
        "swiglu": lambda: grads(ascendc_ops.swiglu, glu, gen=gen),
        "moe_permute_unpermute": lambda: grads(
            lambda t, p: ascendc_ops.moe_token_unpermute(*permuted(t), p), tokens, probs, gen=gen
        ),
        "grouped_matmul": lambda: grads(lambda a, b: ascendc_ops.grouped_matmul(a, b, counts), gx, w, gen=gen),
    }


def permuted(tokens):
    """top-2 routing of 9 tokens over 4 experts, fixed"""
    indices = torch.tensor([[0, 3], [2, 2], [1, 0], [3, 1], [2, 0], [0, 0], [3, 3], [1, 2], [2, 1]])
    return ascendc_ops.moe_token_permute(tokens, indices)


def run() -> dict:
    torch.set_num_threads(2)  # the twin's tiling follows the thread count: the same on every path
    gen = torch.Generator().manual_seed(20)
    outputs = {}
    for dtype in DTYPES:
        for name, call in calls(dtype, gen).items():
            for i, t in enumerate(call()):
                outputs[f"{name}/{str(dtype)[6:]}/{i}"] = t.detach()
    return {"isa": ascendc_ops.isa(), "library": Path(ascendc_ops.library_path).name, "outputs": outputs}


if __name__ == "__main__":
    torch.save(run(), sys.argv[1])
