"""The MoE family's harness knowledge: grouped_matmul, grouped_matmul_weight_grad, moe_token_unpermute and
its grad for `verify` (moe_token_permute moves rows and returns int32 indices: tests/test_moe_ops.py checks it
exactly), and grouped_matmul, moe_token_permute, moe_token_unpermute for `bench`.

`python -m ascendc_ops.harness.families.moe` times grouped_matmul against torch._grouped_mm and a per-expert
torch.mm loop at the issue's experts shapes (torch._grouped_mm has no meta kernel on CPU, so it cannot be a
torch.compile-d `bench` baseline)."""
from __future__ import annotations

import sys
import time

import numpy as np
import torch

import ascendc_ops

from types import SimpleNamespace

from ...ops import grouped_matmul_reference, moe_routing_reference
R = SimpleNamespace(**{**vars(grouped_matmul_reference), **vars(moe_routing_reference)})  # both families' goldens
from ..values import GenContext, signed_uniform
from .base import DTYPES, OpBench, OpSpec, Targets


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


def permutation(shape, attrs, ctx: GenContext | None = None):
    """sorted_indices: a random permutation of T * topK positions."""
    return ctx.rng.permutation(int(np.prod(shape))).astype(np.float64)


VALUES = {"group_list_for_x": group_list_for_x, "permutation": permutation, "signed_uniform": signed_uniform}
POSITIVE = [0.25, 1.25]


# ---------------------------------------------------------------- verify
def torch_gmm(x, w, group_list, glt, trans=False):
    """Per-expert torch.mm in x's dtype."""
    counts = (group_list if glt == 1 else torch.diff(group_list, prepend=group_list.new_zeros(1))).tolist()
    outs, s = [], 0
    for e, c in enumerate(counts):
        outs.append(x[s:s + c] @ (w[e].T if trans else w[e]))
        s += c
    y = torch.cat(outs)
    return torch.cat([y, y.new_zeros(x.shape[0] - s, y.shape[1])])


def torch_wgrad(x, dy, group_list, glt):
    counts = (group_list if glt == 1 else torch.diff(group_list, prepend=group_list.new_zeros(1))).tolist()
    ends = np.cumsum(counts)
    return torch.stack([x[e - c:e].T @ dy[e - c:e] for c, e in zip(counts, ends)])


def torch_unpermute(permuted, s, probs):
    t, k = probs.shape
    return (permuted[s.long()].view(t, k, -1) * probs.to(permuted.dtype)[..., None]).sum(1)


def torch_unpermute_grad(permuted, dout, s, probs):
    p, pr = permuted.detach().requires_grad_(), probs.detach().requires_grad_()
    return torch.autograd.grad(torch_unpermute(p, s, pr), (p, pr), dout)


def _glt(a) -> int:
    return int(a.get("group_list_type", 1))


def fuzz_gmm(weight_grad: bool):
    def fuzz(rng, attrs):
        m, k, n, e = (int(rng.integers(1, 200)), int(rng.integers(1, 300)), int(rng.integers(1, 300)),
                      int(rng.integers(1, 65)))
        if weight_grad:
            return {"x": (m, k), "dy": (m, n), "group_list": (e,)}
        w = (e, n, k) if attrs.get("transpose_weight") else (e, k, n)
        return {"x": (m, k), "weight": w, "group_list": (e,)}
    return fuzz


def fuzz_unpermute(grad: bool):
    def fuzz(rng, attrs):
        t, k, h = int(rng.integers(1, 200)), int(rng.integers(1, 9)), int(rng.integers(1, 6000))
        shapes = {"permuted_tokens": (t * k, h), "sorted_indices": (t * k,), "probs": (t, k)}
        if grad:
            shapes["unpermuted_tokens_grad"] = (t, h)
        return shapes
    return fuzz


def _tensor(name, shape, types, **kw):
    return {"name": name, "format": "ND", "type": types, "shape": shape, **kw}


def gmm_suite(weight_grad: bool):
    """grouped_matmul / its weight grad in fp16, bf16 and fp32: odd shapes (K 1/769, N 5/1025), E 1/3/64/512
    with empty groups and rows past the last group, both group_list types (and transpose_weight), plus the
    Qwen3-MoE experts shape (8192 routed rows, K 1024, N 1024, E 64). Data: uniform in [0.25, 1.25], so no
    dot product cancels and every golden is far from zero: the literal MERE/MARE standard then applies
    (tests/test_moe_ops.py covers signed data against fp32 evaluation bounds)."""
    op = "grouped_matmul_weight_grad" if weight_grad else "grouped_matmul"
    f, i64 = list(DTYPES), ["int64"] * 3

    def entry(name, m, k, n, e, trans=False, glt=(0, 1)):
        x = _tensor("x", [m, k], f, value_range=[POSITIVE])
        gl = _tensor("group_list", [e], i64, value="group_list_for_x")
        if weight_grad:
            ins = [x, _tensor("dy", [m, n], f, value_range=[POSITIVE]), gl]
            outs = [_tensor("dweight", [e, k, n], f)]
            attrs = [{"name": "group_list_type", "type": "int", "value": list(glt)}]
        else:
            ins = [x, _tensor("weight", [e, n, k] if trans else [e, k, n], f, value_range=[POSITIVE]), gl]
            outs = [_tensor("y", [m, n], f)]
            attrs = [{"name": "group_list_type", "type": "int", "value": list(glt)},
                     {"name": "transpose_weight", "type": "bool", "value": trans}]
        return {"case_name": f"{op}_{name}", "op": op, "input_desc": ins, "output_desc": outs, "attr": attrs}

    def cases(quick: bool) -> list[dict]:
        out = [entry("k1", 7, 1, 5, 3), entry("k769", 83, 769, 5, 3), entry("e64_trans", 256, 64, 48, 64, True)]
        if not quick:
            out += [entry("n1025", 7, 16, 1025, 1), entry("e512", 300, 8, 16, 512, glt=(1,)),
                    entry("qwen3_moe", 8192, 1024, 1024, 64, glt=(1,))]
        return out
    return cases


def unpermute_suite(grad: bool):
    """moe_token_unpermute / its grad in fp16, bf16 and fp32 (probs of the tokens' dtype): topK 1/2/8, hidden
    1, 769, 5125 (more than one 4096-element pass) and the Qwen3-MoE shape (1024 tokens, top-8, hidden 1024).
    Data: tokens uniform in [0.25, 1.25], grads of random sign with magnitudes in [0.25, 1.25], probs uniform
    in [0.05, 1], sorted_indices a random permutation: sums and products stay fp16 normals away from zero."""
    op = "moe_token_unpermute_grad" if grad else "moe_token_unpermute"
    f = list(DTYPES)

    def entry(name, t, k, h):
        ins = [_tensor("permuted_tokens", [t * k, h], f, value_range=[POSITIVE]),
               _tensor("sorted_indices", [t * k], ["int32"] * 3, value="permutation"),
               _tensor("probs", [t, k], f, value_range=[[0.05, 1]])]
        outs = [_tensor("unpermuted_tokens", [t, h], f)]
        if grad:
            ins.insert(1, _tensor("unpermuted_tokens_grad", [t, h], f, value="signed_uniform", value_range=[POSITIVE]))
            outs = [_tensor("permuted_tokens_grad", [t * k, h], f), _tensor("probs_grad", [t, k], f)]
        return {"case_name": f"{op}_{name}", "op": op, "input_desc": ins, "output_desc": outs,
                "attr": [{"name": "restore_shape", "type": "list_int", "value": []}]}

    def cases(quick: bool) -> list[dict]:
        out = [entry("h1_k1", 7, 1, 1), entry("h769_k2", 83, 2, 769)]
        if not quick:
            out += [entry("h5125_k8", 7, 8, 5125), entry("qwen3_moe", 1024, 8, 1024)]
        return out
    return cases


VERIFY: dict[str, OpSpec] = {
    "grouped_matmul": OpSpec(
        run=lambda t, a: (ascendc_ops.grouped_matmul(t["x"], t["weight"], t["group_list"], _glt(a),
                                                     bool(a.get("transpose_weight", False))),),
        second=lambda t, a: (torch_gmm(t["x"], t["weight"], t["group_list"], _glt(a),
                                       bool(a.get("transpose_weight", False))),),
        golden=lambda g, a: (R.grouped_matmul(g["x"], g["weight"], g["group_list"].astype(np.int64), _glt(a),
                                              bool(a.get("transpose_weight", False))),),
        fuzz=fuzz_gmm(False), default_cases=gmm_suite(False), values=VALUES),
    "grouped_matmul_weight_grad": OpSpec(
        run=lambda t, a: (torch.ops.custom.grouped_matmul_weight_grad(t["x"], t["dy"], t["group_list"], _glt(a)),),
        second=lambda t, a: (torch_wgrad(t["x"], t["dy"], t["group_list"], _glt(a)),),
        golden=lambda g, a: (R.grouped_matmul_weight_grad(g["x"], g["dy"], g["group_list"].astype(np.int64),
                                                          _glt(a)),),
        fuzz=fuzz_gmm(True), default_cases=gmm_suite(True), values=VALUES),
    "moe_token_unpermute": OpSpec(
        run=lambda t, a: (ascendc_ops.moe_token_unpermute(t["permuted_tokens"], t["sorted_indices"], t["probs"]),),
        second=lambda t, a: (torch_unpermute(t["permuted_tokens"], t["sorted_indices"], t["probs"]),),
        golden=lambda g, a: (R.moe_token_unpermute(g["permuted_tokens"], g["sorted_indices"].astype(np.int64),
                                                   g["probs"]),),
        fuzz=fuzz_unpermute(False), default_cases=unpermute_suite(False), values=VALUES),
    "moe_token_unpermute_grad": OpSpec(
        run=lambda t, a: torch.ops.custom.moe_token_unpermute_grad(
            t["permuted_tokens"], t["unpermuted_tokens_grad"], t["sorted_indices"], t["probs"]),
        second=lambda t, a: torch_unpermute_grad(t["permuted_tokens"], t["unpermuted_tokens_grad"],
                                                 t["sorted_indices"], t["probs"]),
        golden=lambda g, a: R.moe_token_unpermute_backward(g["permuted_tokens"], g["unpermuted_tokens_grad"],
                                                           g["sorted_indices"].astype(np.int64), g["probs"]),
        fuzz=fuzz_unpermute(True), default_cases=unpermute_suite(True), values=VALUES),
}


# ---------------------------------------------------------------- bench
_SPLITS: list[int] = []  # the current case's rows per expert: Python ints, constants to torch.compile


def experts_inputs(shape, dtype, gen):
    """x [M, K], weight [E, K, N] (std 1/sqrt(K)), group_list: M rows routed uniformly at random."""
    m, k, n, e = shape
    counts = torch.bincount(torch.randint(0, e, (m,), generator=gen), minlength=e)
    _SPLITS[:] = counts.tolist()
    return (torch.randn(m, k, generator=gen).to(dtype), (torch.randn(e, k, n, generator=gen) / k**0.5).to(dtype),
            counts)


def mm_loop(x, w, counts):
    """The per-expert loop an eager MoE block runs (HF's eager experts): one torch.mm per expert."""
    return torch.cat([xe @ w[e] for e, xe in enumerate(torch.split(x, _SPLITS))])


def gmm_bytes(inputs, out, pass_) -> int:
    x, w = inputs[0], inputs[1]
    y = x.shape[0] * w.shape[2] * x.element_size()
    fwd, bwd = x.nbytes + w.nbytes + y, y + w.nbytes + x.nbytes
    return {"fwd": fwd, "bwd": bwd, "full": fwd + bwd}[pass_]


def check_experts(shape) -> None:
    if len(shape) != 4 or min(shape) < 1:
        raise ValueError(f"needs 4 positive dims M,K,N,E, got {','.join(map(str, shape))}")


def routing_inputs(shape, dtype, gen):
    """tokens [T, H], top-K expert ids of E experts (shape T,H,K,E), and for unpermute probs [T, K]."""
    t, h, k, e = shape
    idx = torch.randint(0, e, (t, k), generator=gen)
    return torch.randn(t, h, generator=gen).to(dtype), idx, torch.rand(t, k, generator=gen).to(dtype)


def permute_torch(tokens, idx, probs):
    """MindSpeed's eager permute: a stable argsort of the flat ids, then index_select."""
    order = torch.argsort(idx.flatten(), stable=True)
    return tokens.index_select(0, order // idx.shape[1])


def unpermute_inputs(shape, dtype, gen):
    """permuted tokens [T*K, H] (the gradient goes to them), sorted_indices int32 [T*K] of a stable sort of
    random top-K ids (made by torch, so the row times only the unpermute), probs [T, K]."""
    tokens, idx, probs = routing_inputs(shape, dtype, gen)
    order = torch.argsort(idx.flatten(), stable=True)
    sorted_indices = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel())).to(torch.int32)
    return tokens.index_select(0, order // idx.shape[1]), sorted_indices, probs


def unpermute_ours(permuted, sorted_indices, probs):
    return ascendc_ops.moe_token_unpermute(permuted, sorted_indices, probs)


def unpermute_torch(permuted, sorted_indices, probs):
    t, k = probs.shape
    return (permuted[sorted_indices.long()].view(t, k, -1) * probs[..., None]).sum(1)


def routing_bytes(inputs, out, pass_) -> int:
    """permute: tokens read, T*K rows written; unpermute: T*K rows read, tokens written (bwd: the reverse)."""
    first, idx, probs = inputs
    moved = first.nbytes * (1 + idx.shape[1]) if idx.dim() == 2 else first.nbytes + first.nbytes // probs.shape[1]
    return {"fwd": moved, "bwd": moved, "full": 2 * moved}[pass_]


def check_routing(shape) -> None:
    if len(shape) != 4 or min(shape) < 1:
        raise ValueError(f"needs 4 positive dims T,H,K,E, got {','.join(map(str, shape))}")


GMM_TARGETS = {p: Targets(1.0, 1.0, None) for p in ("fwd", "bwd", "full")}
ROUTING_TARGETS = {p: Targets(1.0, None, None) for p in ("fwd", "bwd", "full")}
EXPERTS_SHAPES = ((8192, 1024, 1024, 64), (2048, 1024, 5632, 8))  # Qwen3-MoE gate_up; E=8 top-2 gate_up

BENCH: dict[str, OpBench] = {
    "grouped_matmul": OpBench(lambda x, w, c: ascendc_ops.grouped_matmul(x, w, c), mm_loop, experts_inputs,
                              check_experts, lambda m, seq: [], gmm_bytes, "M,K,N,E", ((2048, 512, 512, 64),),
                              GMM_TARGETS),
    "moe_token_permute": OpBench(lambda t, i, p: ascendc_ops.moe_token_permute(t, i)[0], permute_torch,
                                 routing_inputs, check_routing, lambda m, seq: [], routing_bytes, "T,H,K,E",
                                 ((1024, 1024, 8, 64),), ROUTING_TARGETS),
    "moe_token_unpermute": OpBench(unpermute_ours, unpermute_torch, unpermute_inputs, check_routing,
                                   lambda m, seq: [], routing_bytes, "T,H,K,E", ((1024, 1024, 8, 64),),
                                   ROUTING_TARGETS),
}


# ---------------------------------------------------------------- grouped_matmul vs torch._grouped_mm
def _median_ms(fns: dict, reps: int, budget_s: float = 10.0) -> dict:
    """Median ms per function after a warm-up; the functions take turns in every repetition, so a change
    in the machine's load (other jobs on the 2 cores) falls on all of them alike. A function stops
    repeating once its timed runs took budget_s (the bf16 mm loop: a minute a run)."""
    times = {k: [] for k in fns}
    for f in fns.values():
        f()
    for _ in range(reps):
        for k, f in fns.items():
            if sum(times[k]) > budget_s:
                continue
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: 1e3 * float(np.median(v)) for k, v in times.items()}


def compare_grouped_mm(shapes=EXPERTS_SHAPES, dtypes=("float32", "bfloat16"), reps: int = 5, out=sys.stdout):
    """Forward and forward+backward (dx, dw) times: ours, torch._grouped_mm, the per-expert mm loop.
    Returns (shape, dtype, pass, ours / torch._grouped_mm speed ratio) per row."""
    print("| M,K,N,E | dtype | pass | ours ms | torch._grouped_mm ms | mm loop ms | vs _grouped_mm | vs loop |",
          file=out)
    print("|---|---|---|---|---|---|---|---|", file=out)
    gen = torch.Generator().manual_seed(0)
    ratios = []
    for shape in shapes:
        for dt in dtypes:
            x, w, counts = experts_inputs(shape, getattr(torch, dt), gen)
            offs = torch.cumsum(counts, 0).to(torch.int32)
            dy = torch.randn(x.shape[0], w.shape[2], generator=gen).to(x.dtype)
            impls = {"ours": lambda x, w: ascendc_ops.grouped_matmul(x, w, counts),
                     "grouped_mm": lambda x, w: torch._grouped_mm(x, w, offs=offs),
                     "loop": lambda x, w: mm_loop(x, w, counts)}
            xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
            for pass_ in ("fwd", "fwd+bwd"):
                if pass_ == "fwd":
                    ms = _median_ms({k: lambda f=f: f(x, w) for k, f in impls.items()}, reps)
                else:
                    ms = _median_ms({k: lambda f=f: torch.autograd.grad(f(xg, wg), (xg, wg), dy)
                                     for k, f in impls.items()}, reps)
                print(f"| {','.join(map(str, shape))} | {dt} | {pass_} | {ms['ours']:.1f} | {ms['grouped_mm']:.1f} | "
                      f"{ms['loop']:.1f} | {ms['grouped_mm'] / ms['ours']:.2f}x | {ms['loop'] / ms['ours']:.2f}x |",
                      file=out, flush=True)
                ratios.append((shape, dt, pass_, ms["grouped_mm"] / ms["ours"]))
    return ratios


if __name__ == "__main__":
    compare_grouped_mm(dtypes=tuple(sys.argv[1:]) or ("float32", "bfloat16"))
