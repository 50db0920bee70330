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
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, case_tensor, per_pass


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


# ---- apply_rotary_pos_emb(_grad): query and key in place, in one launch
QK_LAYOUTS = {  # layout -> (query/key shape from (B, S, N, D), cos/sin shape from (B, S, R))
    "BSND": (lambda B, S, N, D: [B, S, N, D], lambda B, S, R: [1, S, 1, R]),
    "SBND": (lambda B, S, N, D: [S, B, N, D], lambda B, S, R: [S, B, 1, R]),
    "BNSD": (lambda B, S, N, D: [B, N, S, D], lambda B, S, R: [B, 1, S, R]),
    "TND": (lambda B, S, N, D: [B * S, N, D], lambda B, S, R: [B * S, 1, R]),
}
QK_HEADS = (4, 2)  # query heads, key heads (GQA)


def _layout(attrs):
    return attrs.get("layout", "BSND")


def qk_suite(op: str, names: tuple[str, str]) -> Callable:
    """Per layout: head dims 40 / 80 / 128 x rows 1 / 7 / 83 with 4 query and 2 key heads (RoPE tables),
    partial rotary (D 128 rotating 64, D 80 rotating 40), and the cancellation-prone random tables."""

    def entry(name, layout, dims, random_tables=False):
        qs, cs = QK_LAYOUTS[layout]
        shapes = [(qs(b, s, QK_HEADS[0], d), qs(b, s, QK_HEADS[1], d), cs(b, s, r)) for b, s, d, r in dims]
        table = {"value_range": [[-1, 1]], "data_distribute": "uniform"} if random_tables else {}
        x = {"value_range": [[-2, 2]], "data_distribute": "uniform"}
        types = list(DTYPES)
        return {
            "case_name": name,
            "op": op,
            "input_desc": [
                case_tensor(names[0], [q for q, _, _ in shapes], types, **x),
                case_tensor(names[1], [k for _, k, _ in shapes], types, **x),
                case_tensor("cos", [c for _, _, c in shapes], types, **(table or {"value": "rope_cos"})),
                case_tensor("sin", [c for _, _, c in shapes], types, **(table or {"value": "rope_sin"})),
            ],
            "output_desc": [
                case_tensor(names[0], [q for q, _, _ in shapes], types),
                case_tensor(names[1], [k for _, k, _ in shapes], types),
            ],
            "attr": [
                {"name": "layout", "type": "string", "value": layout},
                {"name": "rotary_mode", "type": "string", "value": ["half", "interleave"]},
            ],
        }

    def cases(quick: bool) -> list[dict]:
        ds, rows = (QUICK_D, QUICK_ROWS) if quick else (SUITE_D, SUITE_ROWS)
        tag = "_quick" if quick else ""
        out = []
        for layout in QK_LAYOUTS if not quick else ("BSND", "BNSD"):
            full = [(SUITE_B, r, d, d) for d in ds for r in rows]
            out.append(entry(f"{op}_{layout}{tag}", layout, full + [(SUITE_B, 7, 128, 64), (SUITE_B, 7, 80, 40)]))
        out.append(entry(f"{op}_cancel{tag}", "BSND", [(SUITE_B, 7, 40, 40), (SUITE_B, 83, 128, 128)], True))
        return out

    return cases


def fuzz_qk(names: tuple[str, str]) -> Callable:
    def fuzz(rng, attrs):
        qs, cs = QK_LAYOUTS[_layout(attrs)]
        B, nq, S, D = _fuzz_bnsd(rng)
        nk = int(rng.integers(1, nq + 1))
        R_ = 2 * int(rng.integers(1, D // 2 + 1))
        return {names[0]: qs(B, S, nq, D), names[1]: qs(B, S, nk, D), "cos": cs(B, S, R_), "sin": cs(B, S, R_)}

    return fuzz


def _qk_run(op: str):
    """The in-place op on copies, returning them (verify also runs this on meta tensors)."""

    def run(t, a, names):
        q, k = t[names[0]].clone(), t[names[1]].clone()
        getattr(torch.ops.custom, op)(q, k, t["cos"], t["sin"], _layout(a), _mode(a))
        return q, k

    return run


def _qk_second(backward: bool):
    """PyTorch in the tensors' dtype: the rotated part by the formula (its autograd backward), the rest kept."""

    def second(t, a, names):
        out = []
        for x in (t[names[0]], t[names[1]]):
            r, cos, sin = t["cos"].shape[-1], t["cos"], t["sin"]
            part = x[..., :r]
            f = lambda y, c, s: torch_rope(y, c, s, _mode(a))  # noqa: E731
            rot = torch_dx(f, part.contiguous(), cos, sin) if backward else f(part, cos, sin)
            out.append(torch.cat((rot, x[..., r:]), -1))
        return tuple(out)

    return second


def qk_spec(op: str, names: tuple[str, str], backward: bool) -> OpSpec:
    golden = R.apply_rotary_pos_emb_backward if backward else R.apply_rotary_pos_emb
    return OpSpec(
        run=lambda t, a: _qk_run(op)(t, a, names),
        second=lambda t, a: _qk_second(backward)(t, a, names),
        golden=lambda g, a: golden(g[names[0]], g[names[1]], g["cos"], g["sin"], _mode(a)),
        fuzz=fuzz_qk(names),
        default_cases=qk_suite(op, names),
        values=_rope_values(_mode),
    )


VERIFY: dict[str, OpSpec] = {
    "apply_rotary_pos_emb": qk_spec("apply_rotary_pos_emb", ("query", "key"), False),
    "apply_rotary_pos_emb_grad": qk_spec("apply_rotary_pos_emb_grad", ("dquery", "dkey"), True),
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
    one = Moved(x.nbytes + cos.nbytes + sin.nbytes, x.nbytes)
    return per_pass(one, one)[pass_]


def qk_step(q, k, cos, sin):
    """HF apply_rotary_pos_emb of query and key (BSND, cos/sin [1, S, 1, D])."""
    return rotary_mul_torch(q, cos, sin), rotary_mul_torch(k, cos, sin)


def qk_inputs(shape, dtype, gen):
    """query [B, S, N, D], key [B, S, N, D], HF's cat tables as [1, S, 1, D]."""
    q, k = (torch.randn(shape, generator=gen).to(dtype) for _ in range(2))
    cos, sin = (t.transpose(1, 2) for t in rope_tables(shape[1], shape[-1], dtype, "cat"))
    return q, k, cos, sin


def qk_bytes(inputs, out, pass_) -> int:
    """query and key read and written, cos and sin read, per pass (dquery/dkey alike)."""
    q, k, cos, sin = inputs
    one = Moved(q.nbytes + k.nbytes + cos.nbytes + sin.nbytes, q.nbytes + k.nbytes)
    return per_pass(one, one)[pass_]


def _rope_bench(ours, torch_fn, mode: str) -> OpBench:
    """A one-tensor RoPE op's bench: x [B, H, L, D] with its cos/sin tables laid out for `mode`."""
    shapes = dict(preset_shapes=rope_preset_shapes, shape_help="B,H,L,D", default_shapes=SHAPES)
    return OpBench(ours, torch_fn, rope_inputs(mode), check_bnsd, bytes_moved=rope_bytes, targets=TARGETS, **shapes)


BENCH: dict[str, OpBench] = {
    "apply_rotary_pos_emb": OpBench(
        lambda q, k, c, s: ascendc_ops.apply_rotary_pos_emb(q, k, c, s, "BSND", "half"),
        qk_step,
        qk_inputs,
        check_bnsd,
        lambda m, seq: [(1, seq, m.heads, m.head_dim)],
        qk_bytes,
        "B,S,N,D",
        ((1, 512, 32, 128), (1, 4096, 32, 128)),
        TARGETS,
    ),
    "rope_customer": _rope_bench(lambda x, c, s: ascendc_ops.rope_customer(x, c, s), rope_customer_torch, "pairs"),
    "rotary_mul": _rope_bench(lambda x, c, s: ascendc_ops.rotary_mul(x, c, s, "half"), rotary_mul_torch, "cat"),
}
