"""The RoPE family's harness knowledge: rotary_mul, rope_customer and their grads (how to run each op, PyTorch's
own same-dtype computation, the float64 golden, the shape fuzzer, the default suite, the named table
generators) and the benchmark setup of rotary_mul and rope_customer."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

import ascendc_ops

from ...ops import rope_reference as R
from ...ops.rope import rotate as torch_rotate
from .base import DTYPES, OpBench, OpSpec, Targets


# ---------------------------------------------------------------- verify
def torch_rope(x, r1, r2, mode):
    """The PyTorch step-by-step formula in x's dtype (tables cast to it first, as the op does)."""
    return x * r1.to(x.dtype) + torch_rotate(x, mode) * r2.to(x.dtype)


def rope_customer_torch(x, cos, sin):
    """The seed tutorial's reference: x as (even, odd) pairs, rotate each pair by its even lane's cos/sin,
    stack, flatten."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    x0, x1 = pairs[..., 0], pairs[..., 1]
    c, s = cos[..., ::2].to(x.dtype), sin[..., ::2].to(x.dtype)
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)


def torch_dx(forward: Callable, dy, *tables):
    """PyTorch autograd of forward(x, *tables) in dy's dtype: dx."""
    x = torch.zeros_like(dy).requires_grad_()
    forward(x, *tables).backward(dy)
    return x.grad


def rope_table(kind: str, layout: Callable[[dict], str]):
    """cos or sin tables of any shape [..., D]: row r (flat over the leading dims) holds position r,
    in the tutorial's pair layout ('interleave') or HF's cat layout ('half')."""

    def make(shape, attrs, ctx=None):
        rows, d = math.prod(shape[:-1]), shape[-1]
        cos, sin = R.tutorial_cos_sin(rows, d)
        t = cos if kind == "cos" else sin
        if layout(attrs) == "half":
            t = np.concatenate((t[:, 0::2], t[:, 0::2]), axis=-1)
        return t.reshape(shape)

    return make


SUITE_D, SUITE_ROWS, MODEL_SHAPE = (40, 80, 128), (1, 7, 83), (1, 32, 512, 128)
QUICK_D, QUICK_ROWS = (40, 128), (1, 7)
SUITE_B, SUITE_N = 2, 3


def rope_suite(op: str, x: str, y: str, tables: tuple[str, str], table_shape: Callable, modes=None) -> Callable:
    """The default suite of a RoPE op: uniform x in [-2, 2], in fp16, bf16 and fp32. RoPE tables at
    positions 0..: head dims 40/80/128 x rows 1/7/83 ([2, 3, rows, D]) and the model shape
    [1, 32, 512, 128]. Cancellation-prone ("_cancel"): cos/sin uniform in [-1, 1], independent per lane
    (a pair's two lanes differ), so x*cos and rot(x)*sin cancel to outputs near zero; judged with the
    small-value domain (precision.py)."""

    def entry(name, types, shapes, random_tables=False):
        xs, ts = [s[0] for s in shapes], [s[1] for s in shapes]
        table = {"value_range": [[-1, 1]], "data_distribute": "uniform"} if random_tables else {}
        e = {
            "case_name": name,
            "op": op,
            "input_desc": [
                {
                    "name": x,
                    "format": "ND",
                    "type": types,
                    "shape": xs,
                    "value_range": [[-2, 2]],
                    "data_distribute": "uniform",
                },
                {"name": tables[0], "format": "ND", "type": types, "shape": ts, **(table or {"value": "rope_cos"})},
                {"name": tables[1], "format": "ND", "type": types, "shape": ts, **(table or {"value": "rope_sin"})},
            ],
            "output_desc": [{"name": y, "format": "ND", "type": types, "shape": xs}],
        }
        if modes:
            e["attr"] = [{"name": "rotary_mode", "type": "string", "value": list(modes)}]
        return e

    def cases(quick: bool) -> list[dict]:
        ds, rows = (QUICK_D, QUICK_ROWS) if quick else (SUITE_D, SUITE_ROWS)
        small = [([SUITE_B, SUITE_N, r, d], table_shape(r, d)) for d in ds for r in rows]
        tag = "_quick" if quick else ""
        out = [
            entry(f"{op}_default{tag}", list(DTYPES), small),
            entry(f"{op}_cancel{tag}", list(DTYPES), small[-2:], random_tables=True),
        ]
        if not quick:
            out.append(entry(f"{op}_model", list(DTYPES), [(list(MODEL_SHAPE), table_shape(*MODEL_SHAPE[2:]))]))
        return out

    return cases


FUZZ_LAYOUTS = {  # rotary_mul: x shape and table shape from (B, N, S, D)
    "BNSD-11SD": (lambda B, N, S, D: (B, N, S, D), lambda B, N, S, D: (1, 1, S, D)),
    "BNSD-B1SD": (lambda B, N, S, D: (B, N, S, D), lambda B, N, S, D: (B, 1, S, D)),
    "BSND-1S1D": (lambda B, N, S, D: (B, S, N, D), lambda B, N, S, D: (1, S, 1, D)),
    "SBND-S11D": (lambda B, N, S, D: (S, B, N, D), lambda B, N, S, D: (S, 1, 1, D)),
    "TND-T1D": (lambda B, N, S, D: (S, N, D), lambda B, N, S, D: (S, 1, D)),
    "BNSD-SD": (lambda B, N, S, D: (B, N, S, D), lambda B, N, S, D: (S, D)),
}


def _fuzz_bnsd(rng) -> tuple[int, int, int, int]:
    return (int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 100)), 2 * int(rng.integers(1, 129)))


def fuzz_rotary_mul(x: str, r1: str, r2: str) -> Callable:
    def fuzz(rng, attrs):
        dims = _fuzz_bnsd(rng)
        xs, ts = FUZZ_LAYOUTS[list(FUZZ_LAYOUTS)[int(rng.integers(len(FUZZ_LAYOUTS)))]]
        return {x: xs(*dims), r1: ts(*dims), r2: ts(*dims)}

    return fuzz


def fuzz_rope_customer(x: str, c: str, s: str) -> Callable:
    def fuzz(rng, attrs):
        B, N, S, D = _fuzz_bnsd(rng)
        return {x: (B, N, S, D), c: (S, D), s: (S, D)}

    return fuzz


def _mode(attrs):
    return attrs.get("rotary_mode", "half")


def _interleave(attrs):
    return "interleave"


def _rope_values(layout):
    return {"rope_cos": rope_table("cos", layout), "rope_sin": rope_table("sin", layout)}


VERIFY: dict[str, OpSpec] = {
    "rotary_mul": OpSpec(
        run=lambda t, a: (ascendc_ops.rotary_mul(t["x"], t["r1"], t["r2"], _mode(a)),),
        second=lambda t, a: (torch_rope(t["x"], t["r1"], t["r2"], _mode(a)),),
        golden=lambda g, a: (R.rotary_mul(g["x"], g["r1"], g["r2"], _mode(a)),),
        fuzz=fuzz_rotary_mul("x", "r1", "r2"),
        default_cases=rope_suite(
            "rotary_mul", "x", "y", ("r1", "r2"), lambda r, d: [1, 1, r, d], ("half", "interleave")
        ),
        values=_rope_values(_mode),
    ),
    "rotary_mul_grad": OpSpec(
        run=lambda t, a: (torch.ops.custom.rotary_mul_grad(t["dy"], t["r1"], t["r2"], _mode(a)),),
        second=lambda t, a: (torch_dx(lambda x, c, s: torch_rope(x, c, s, _mode(a)), t["dy"], t["r1"], t["r2"]),),
        golden=lambda g, a: (R.rotary_mul_backward(g["dy"], g["dy"], g["r1"], g["r2"], _mode(a))[0],),
        fuzz=fuzz_rotary_mul("dy", "r1", "r2"),
        default_cases=rope_suite(
            "rotary_mul_grad", "dy", "dx", ("r1", "r2"), lambda r, d: [1, 1, r, d], ("half", "interleave")
        ),
        values=_rope_values(_mode),
    ),
    "rope_customer": OpSpec(
        run=lambda t, a: (ascendc_ops.rope_customer(t["x"], t["cos"], t["sin"]),),
        second=lambda t, a: (rope_customer_torch(t["x"], t["cos"], t["sin"]),),
        golden=lambda g, a: (R.rope_tutorial(g["x"], g["cos"], g["sin"]),),
        fuzz=fuzz_rope_customer("x", "cos", "sin"),
        default_cases=rope_suite("rope_customer", "x", "y", ("cos", "sin"), lambda r, d: [r, d]),
        values=_rope_values(_interleave),
    ),
    "rope_customer_grad": OpSpec(
        run=lambda t, a: (torch.ops.custom.rope_customer_grad(t["dy"], t["cos"], t["sin"]),),
        second=lambda t, a: (torch_dx(rope_customer_torch, t["dy"], t["cos"], t["sin"]),),
        golden=lambda g, a: (R.rope_tutorial_backward(g["dy"], g["dy"], g["cos"], g["sin"])[0],),
        fuzz=fuzz_rope_customer("dy", "cos", "sin"),
        default_cases=rope_suite("rope_customer_grad", "dy", "dx", ("cos", "sin"), lambda r, d: [r, d]),
        values=_rope_values(_interleave),
    ),
}


# ---------------------------------------------------------------- bench
TARGETS = {p: Targets(3.0, 1.0, 50.0) for p in ("fwd", "bwd", "full")}
SHAPES = ((1, 32, 512, 128), (1, 32, 4096, 128))


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


def rope_preset_shapes(m, seq: int) -> list[tuple]:
    """q [1, heads, seq, head_dim] and k [1, kv_heads, seq, head_dim]."""
    return list(dict.fromkeys([(1, m.heads, seq, m.head_dim), (1, m.kv_heads, seq, m.head_dim)]))


def rope_bytes(inputs, out, pass_) -> int:
    """x (or dy) and cos, sin read; y (or dx) written; full = both passes."""
    x, cos, sin = inputs
    one = 2 * x.nbytes + cos.nbytes + sin.nbytes
    return 2 * one if pass_ == "full" else one


BENCH: dict[str, OpBench] = {
    "rope_customer": OpBench(
        lambda x, c, s: ascendc_ops.rope_customer(x, c, s),
        rope_customer_torch,
        rope_inputs("pairs"),
        check_bnsd,
        rope_preset_shapes,
        rope_bytes,
        "B,H,L,D",
        SHAPES,
        TARGETS,
    ),
    "rotary_mul": OpBench(
        lambda x, c, s: ascendc_ops.rotary_mul(x, c, s, "half"),
        rotary_mul_torch,
        rope_inputs("cat"),
        check_bnsd,
        rope_preset_shapes,
        rope_bytes,
        "B,H,L,D",
        SHAPES,
        TARGETS,
    ),
}
