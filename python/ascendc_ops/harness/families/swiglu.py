"""The SwiGLU family's harness knowledge: swiglu and swiglu_grad (how to run each op, PyTorch's own
same-dtype computation, the float64 golden, the shape fuzzer, the default suite) and swiglu's benchmark setup."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

import ascendc_ops

from ...ops import swiglu_reference as R
from ..values import signed_uniform
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, per_pass


# ---------------------------------------------------------------- verify
def torch_swiglu(x, dim):
    """PyTorch's silu(A) * B in x's dtype."""
    a, b = x.chunk(2, dim=dim)
    return torch.nn.functional.silu(a) * b


def torch_swiglu_dx(dy, x, dim):
    """PyTorch autograd of silu(A) * B in x's dtype: dx."""
    xg = x.detach().requires_grad_()
    (dx,) = torch.autograd.grad(torch_swiglu(xg, dim), xg, dy)
    return dx


def _dim(attrs) -> int:
    return int(attrs.get("dim", -1))


def fuzz_swiglu(grad: bool) -> Callable:
    """Rank 1..3 (at least enough for attr dim), the split dim even, at most ~200k elements."""

    def fuzz(rng, attrs):
        d = _dim(attrs)
        rank = max(int(rng.integers(1, 4)), d + 1 if d >= 0 else -d)
        shape = [int(rng.integers(1, 30)) for _ in range(rank)]
        limit = max(2, 200_000 // (2 * math.prod(shape) // shape[d]))
        shape[d] = 2 * int(rng.integers(1, min(limit, 6000)))
        half = list(shape)
        half[d] //= 2
        return {"dy": tuple(half), "x": tuple(shape)} if grad else {"x": tuple(shape)}

    return fuzz


SWIGLU_ROWS, SWIGLU_INNER, SWIGLU_MODEL = (1, 7, 83), (1, 8, 769, 5125, 11008), (256, 2 * 11008)
QUICK_SWIGLU_ROWS, QUICK_SWIGLU_INNER = (1, 7), (8, 769)
X_RANGE, GRAD_RANGE = [-2.0, 2.0], [-2.0, 2.0]
# cancellation-prone x: forward, A and B near 0 (every output a small value); grad, A around -1.278,
# the zero of silu'(A) = s(A) * (1 + A * (1 - s(A))), where 1 + A*(1 - s(A)) cancels
CANCEL_RANGE = {"swiglu": [-0.05, 0.05], "swiglu_grad": [-1.5, -1.0]}


def swiglu_suite(grad: bool) -> Callable:
    """The default suite of swiglu / swiglu_grad in fp16, bf16 and fp32: rows 1/7/83 x inner 1/8/769/5125/11008
    (x [rows, 2*inner], split along dim -1), one 3-D case split along dim 1, and the model shape
    [256, 2*11008] (LLaMA-7B's intermediate size), x (and dy) uniform in [-2, 2]; and a cancellation-prone
    case ("_cancel", CANCEL_RANGE). Outputs near zero are judged in the small-value domain (precision.py)."""
    op = "swiglu_grad" if grad else "swiglu"

    def entry(name, shapes, dim=-1, types=None, x_range=X_RANGE):
        types = list(DTYPES) if types is None else types

        def half(s):
            h = list(s)
            h[dim] //= 2
            return h

        xs = {
            "name": "x",
            "format": "ND",
            "type": types,
            "shape": [list(s) for s in shapes],
            "value_range": [x_range],
            "data_distribute": "uniform",
        }
        if grad:
            ins = [
                {
                    "name": "dy",
                    "format": "ND",
                    "type": types,
                    "shape": [half(s) for s in shapes],
                    "value_range": [GRAD_RANGE],
                    "data_distribute": "uniform",
                },
                xs,
            ]
            outs = [{"name": "dx", "format": "ND", "type": types, "shape": [list(s) for s in shapes]}]
        else:
            ins, outs = [xs], [{"name": "y", "format": "ND", "type": types, "shape": [half(s) for s in shapes]}]
        return {
            "case_name": name,
            "op": op,
            "input_desc": ins,
            "output_desc": outs,
            "attr": [{"name": "dim", "type": "int", "value": dim}],
        }

    def cases(quick: bool) -> list[dict]:
        rows, inner = (QUICK_SWIGLU_ROWS, QUICK_SWIGLU_INNER) if quick else (SWIGLU_ROWS, SWIGLU_INNER)
        tag = "_quick" if quick else ""
        out = [
            entry(f"{op}_default{tag}", [(r, 2 * i) for i in inner for r in rows]),
            entry(f"{op}_cancel{tag}", [(rows[-1], 2 * inner[-1])], x_range=CANCEL_RANGE[op]),
        ]
        if not quick:
            out.append(entry(f"{op}_3d_dim1", [(7, 2 * 83, 9)], dim=1))
            out.append(entry(f"{op}_model", [SWIGLU_MODEL]))
        return out

    return cases


VERIFY: dict[str, OpSpec] = {
    "swiglu": OpSpec(
        run=lambda t, a: (ascendc_ops.swiglu(t["x"], _dim(a)),),
        second=lambda t, a: (torch_swiglu(t["x"], _dim(a)),),
        golden=lambda g, a: (R.swiglu(g["x"], _dim(a)),),
        fuzz=fuzz_swiglu(False),
        default_cases=swiglu_suite(False),
        values={"signed_uniform": signed_uniform},
    ),
    "swiglu_grad": OpSpec(
        run=lambda t, a: (torch.ops.custom.swiglu_grad(t["dy"], t["x"], _dim(a)),),
        second=lambda t, a: (torch_swiglu_dx(t["dy"], t["x"], _dim(a)),),
        golden=lambda g, a: (R.swiglu_backward(g["dy"], g["x"], _dim(a)),),
        fuzz=fuzz_swiglu(True),
        default_cases=swiglu_suite(True),
        values={"signed_uniform": signed_uniform},
    ),
}


# ---------------------------------------------------------------- bench
TARGETS = {"fwd": Targets(1.5, 1.0, None), "bwd": Targets(2.0, 1.0, None), "full": Targets(1.5, 1.0, None)}


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
    return per_pass(Moved(x, x // 2), Moved(x // 2 + x, x))[pass_]


BENCH: dict[str, OpBench] = {
    "swiglu": OpBench(
        lambda x: ascendc_ops.swiglu(x, -1),
        swiglu_torch,
        swiglu_inputs,
        check_gate_up,
        lambda m, seq: [(seq, 2 * m.intermediate)],
        swiglu_bytes,
        "T,2I",
        ((4096, 2 * 11008),),
        TARGETS,
    ),
}
