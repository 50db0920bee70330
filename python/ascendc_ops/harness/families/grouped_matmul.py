"""The grouped_matmul family's harness knowledge: grouped_matmul and grouped_matmul_weight_grad for `verify`
(how to run each, PyTorch's per-expert torch.mm, the float64 golden, the fuzzer, the default suite, the
group_list generator) and grouped_matmul for `bench` against the per-expert mm loop (torch._grouped_mm has no
meta kernel on CPU, so it cannot be a torch.compile-d baseline: `bench --suite moe` compares against it)."""

from __future__ import annotations

import numpy as np
import torch

import ascendc_ops

from ...ops import grouped_matmul_reference as R
from ..values import GenContext, signed_uniform
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, case_tensor, per_pass


# ---------------------------------------------------------------- value generators
def group_list_for_x(shape, attrs, ctx: GenContext | None = None):
    """Random group sizes covering x's rows (the input made before it), some groups empty, as counts
    (group_list_type 1) or cumulative ends (0)."""
    if ctx is None or "x" not in ctx.made:
        raise ValueError("'group_list_for_x' needs the input x before it")
    m, e = ctx.made["x"].shape[0], shape[0]
    picks = ctx.rng.integers(0, max(1, e - 1) if e > 2 else e, m)  # the last group of 3+ stays empty
    counts = np.bincount(picks, minlength=e).astype(np.float64)
    return counts if int(attrs.get("group_list_type", 1)) == 1 else np.cumsum(counts)


VALUES = {"group_list_for_x": group_list_for_x, "signed_uniform": signed_uniform}
BIAS_DTYPE = {
    "float16": "float16",
    "bfloat16": "float32",
    "float32": "float32",
}  # op_proto/grouped_matmul/grouped_matmul.json
POSITIVE = [0.25, 1.25]  # data range of the default suite: no dot product cancels


# ---------------------------------------------------------------- verify
def torch_gmm(x, w, group_list, glt, trans=False, bias=None):
    """Per-expert torch.mm (torch.addmm with a bias, cast to x's dtype) in x's dtype."""
    counts = (group_list if glt == 1 else torch.diff(group_list, prepend=group_list.new_zeros(1))).tolist()
    outs, s = [], 0
    for e, c in enumerate(counts):
        we = w[e].T if trans else w[e]
        outs.append(x[s : s + c] @ we if bias is None else torch.addmm(bias[e].to(x.dtype), x[s : s + c], we))
        s += c
    y = torch.cat(outs)
    return torch.cat([y, y.new_zeros(x.shape[0] - s, y.shape[1])])


def torch_wgrad(x, dy, group_list, glt):
    counts = (group_list if glt == 1 else torch.diff(group_list, prepend=group_list.new_zeros(1))).tolist()
    ends = np.cumsum(counts)
    return torch.stack([x[e - c : e].T @ dy[e - c : e] for c, e in zip(counts, ends, strict=True)])


def _glt(a) -> int:
    return int(a.get("group_list_type", 1))


def fuzz_gmm(weight_grad: bool):
    def fuzz(rng, attrs):
        m, k, n, e = (
            int(rng.integers(1, 200)),
            int(rng.integers(1, 300)),
            int(rng.integers(1, 300)),
            int(rng.integers(1, 65)),
        )
        if weight_grad:
            return {"x": (m, k), "dy": (m, n), "group_list": (e,)}
        w = (e, n, k) if attrs.get("transpose_weight") else (e, k, n)
        return {"x": (m, k), "weight": w, "group_list": (e,)}

    return fuzz


def gmm_suite(weight_grad: bool):
    """grouped_matmul / its weight grad in fp16, bf16 and fp32: odd shapes (K 1/769, N 5/1025), E 1/3/64/512
    with empty groups and rows past the last group, both group_list types (and transpose_weight), plus the
    Qwen3-MoE experts shape (8192 routed rows, K 1024, N 1024, E 64). Data: uniform in [0.25, 1.25], so no
    dot product cancels and every golden is far from zero: the literal MERE/MARE standard then applies
    (tests/ops/test_grouped_matmul.py covers signed data against fp32 evaluation bounds)."""
    op = "grouped_matmul_weight_grad" if weight_grad else "grouped_matmul"
    f, i64 = list(DTYPES), ["int64"] * 3

    def entry(name, m, k, n, e, trans=False, glt=(0, 1), bias=False):
        x = case_tensor("x", [m, k], f, value_range=[POSITIVE])
        gl = case_tensor("group_list", [e], i64, value="group_list_for_x")
        if weight_grad:
            ins = [x, case_tensor("dy", [m, n], f, value_range=[POSITIVE]), gl]
            outs = [case_tensor("dweight", [e, k, n], f)]
            attrs = [{"name": "group_list_type", "type": "int", "value": list(glt)}]
        else:
            ins = [x, case_tensor("weight", [e, n, k] if trans else [e, k, n], f, value_range=[POSITIVE]), gl]
            if bias:  # the kernel's bias dtype per x dtype (op_proto: float32 for bfloat16)
                ins.append(case_tensor("bias", [e, n], [BIAS_DTYPE[d] for d in f], value_range=[POSITIVE]))
            outs = [case_tensor("y", [m, n], f)]
            attrs = [
                {"name": "group_list_type", "type": "int", "value": list(glt)},
                {"name": "transpose_weight", "type": "bool", "value": trans},
            ]
        return {"case_name": f"{op}_{name}", "op": op, "input_desc": ins, "output_desc": outs, "attr": attrs}

    def cases(quick: bool) -> list[dict]:
        out = [entry("k1", 7, 1, 5, 3), entry("k769", 83, 769, 5, 3), entry("e64_trans", 256, 64, 48, 64, True)]
        if not weight_grad:  # with a bias: odd shapes, empty groups, both layouts
            out += [entry("bias_k1", 7, 1, 5, 3, bias=True), entry("bias_k83_trans", 83, 83, 1025, 5, True, bias=True)]
        if not quick:
            out += [
                entry("n1025", 7, 16, 1025, 1),
                entry("e512", 300, 8, 16, 512, glt=(1,)),
                entry("qwen3_moe", 8192, 1024, 1024, 64, glt=(1,)),
            ]
        return out

    return cases


VERIFY: dict[str, OpSpec] = {
    "grouped_matmul": OpSpec(
        run=lambda t, a: (
            ascendc_ops.grouped_matmul(
                t["x"], t["weight"], t["group_list"], _glt(a), bool(a.get("transpose_weight", False)), t.get("bias")
            ),
        ),
        second=lambda t, a: (
            torch_gmm(
                t["x"], t["weight"], t["group_list"], _glt(a), bool(a.get("transpose_weight", False)), t.get("bias")
            ),
        ),
        golden=lambda g, a: (
            R.grouped_matmul(
                g["x"],
                g["weight"],
                g["group_list"].astype(np.int64),
                _glt(a),
                bool(a.get("transpose_weight", False)),
                g.get("bias"),
            ),
        ),
        fuzz=fuzz_gmm(False),
        default_cases=gmm_suite(False),
        values=VALUES,
    ),
    "grouped_matmul_weight_grad": OpSpec(
        run=lambda t, a: (torch.ops.custom.grouped_matmul_weight_grad(t["x"], t["dy"], t["group_list"], _glt(a)),),
        second=lambda t, a: (torch_wgrad(t["x"], t["dy"], t["group_list"], _glt(a)),),
        golden=lambda g, a: (R.grouped_matmul_weight_grad(g["x"], g["dy"], g["group_list"].astype(np.int64), _glt(a)),),
        fuzz=fuzz_gmm(True),
        default_cases=gmm_suite(True),
        values=VALUES,
    ),
}


# ---------------------------------------------------------------- bench
_SPLITS: list[int] = []  # the current case's rows per expert: Python ints, constants to torch.compile


def experts_inputs(shape, dtype, gen):
    """x [M, K], weight [E, K, N] (std 1/sqrt(K)), group_list: M rows routed uniformly at random."""
    m, k, n, e = shape
    counts = torch.bincount(torch.randint(0, e, (m,), generator=gen), minlength=e)
    _SPLITS[:] = counts.tolist()
    return (
        torch.randn(m, k, generator=gen).to(dtype),
        (torch.randn(e, k, n, generator=gen) / k**0.5).to(dtype),
        counts,
    )


def mm_loop(x, w, counts):
    """The per-expert loop an eager MoE block runs (HF's eager experts): one torch.mm per expert."""
    return torch.cat([xe @ w[e] for e, xe in enumerate(torch.split(x, _SPLITS))])


def gmm_bytes(inputs, out, pass_) -> int:
    x, w = inputs[0], inputs[1]
    y = x.shape[0] * w.shape[2] * x.element_size()
    return per_pass(Moved(x.nbytes + w.nbytes, y), Moved(y + w.nbytes, x.nbytes))[pass_]


def gmm_flops(inputs, pass_) -> int:
    """2 FLOPs per multiply-add of the routed rows: fwd x @ w, bwd dx = dy @ w^T (the bench's bwd), same count."""
    x, w, counts = inputs
    one = 2 * int(counts.sum()) * x.shape[1] * w.shape[2]
    return {"fwd": one, "bwd": one, "full": 2 * one}[pass_]


def check_experts(shape) -> None:
    if len(shape) != 4 or min(shape) < 1:
        raise ValueError(f"needs 4 positive dims M,K,N,E, got {','.join(map(str, shape))}")


GMM_TARGETS = {p: Targets(1.0, 1.0, None) for p in ("fwd", "bwd", "full")}
EXPERTS_SHAPES = ((8192, 1024, 1024, 64), (2048, 1024, 5632, 8))  # Qwen3-MoE gate_up; E=8 top-2 gate_up

BENCH: dict[str, OpBench] = {
    "grouped_matmul": OpBench(
        lambda x, w, c: ascendc_ops.grouped_matmul(x, w, c),
        mm_loop,
        experts_inputs,
        check_experts,
        lambda m, seq: [],
        gmm_bytes,
        "M,K,N,E",
        ((2048, 512, 512, 64),),
        GMM_TARGETS,
        flops=gmm_flops,
    ),
}
