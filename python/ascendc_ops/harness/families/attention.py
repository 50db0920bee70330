"""The attention family's harness knowledge: fusion_attention for `verify` (how to run it, PyTorch's same-dtype
attention, the float64 golden, the fuzzer, the default suite, the mask generators) and for `bench` against HF's
eager attention (matmul + softmax + matmul) and torch's scaled_dot_product_attention."""

from __future__ import annotations

import numpy as np
import torch

import ascendc_ops

from ...ops import attention_reference as R
from ..values import GenContext, signed_uniform
from .base import DTYPES, OpBench, OpSpec, Targets, case_tensor

TOCKENS_MAX = 2147483647
SIGNED, POSITIVE = [-1.0, 1.0], [0.25, 1.25]  # the default suite's query / key and value ranges
COMPRESSED = 2048  # sparse modes 2-4 take the compressed triu(ones(2048, 2048), 1) mask


def op_attrs(a) -> dict:
    """The op's keyword attributes of a case (op_proto defaults filled by the case loader)."""
    lists = {k: (None if a.get(k) is None else [int(x) for x in a[k]]) for k in ("actual_seq_qlen", "actual_seq_kvlen")}
    return {
        "scale": float(a.get("scale", 1.0)),
        "pre_tockens": int(a.get("pre_tockens", TOCKENS_MAX)),
        "next_tockens": int(a.get("next_tockens", TOCKENS_MAX)),
        "sparse_mode": int(a.get("sparse_mode", 0)),
        **lists,
    }


# ---------------------------------------------------------------- value generators
def causal_mask(shape, attrs, ctx: GenContext | None = None):
    """The compressed causal mask of sparse modes 2-4: triu(ones(2048, 2048), 1), 1 = masked."""
    if tuple(shape) != (COMPRESSED, COMPRESSED):
        raise ValueError(f"'causal_mask' is {COMPRESSED} x {COMPRESSED}, got shape {list(shape)}")
    return np.triu(np.ones(shape), 1)


def mask_with_masked_rows(shape, attrs, ctx: GenContext | None = None):
    """A random [.., S1, S2] mask (a quarter masked) whose row 0 and last row are masked whole: their output
    is 0 and their softmax_max / softmax_sum -FLT_MAX / FLT_MAX (docs/attention.md)."""
    rng = ctx.rng if ctx is not None else np.random.default_rng(0)
    m = (rng.random(shape) < 0.25).astype(np.float64)
    m[..., 0, :] = 1.0
    m[..., -1, :] = 1.0
    return m


VALUES = {"causal_mask": causal_mask, "mask_with_masked_rows": mask_with_masked_rows, "signed_uniform": signed_uniform}


# ---------------------------------------------------------------- verify
def _lens(cumulative) -> list[int]:
    return [int(x) for x in R.seq_lengths(cumulative)]


def split_heads(x: torch.Tensor, layout: str, n: int, cumulative=None) -> list[torch.Tensor]:
    """A layout's tensor as one [N, S, D] tensor per batch (TND: per sequence of the cumulative lengths)."""
    if layout == "BNSD":
        return list(x)
    if layout == "BSND":
        return list(x.transpose(1, 2))
    if layout == "BSH":
        return list(x.reshape(x.shape[0], x.shape[1], n, -1).transpose(1, 2))
    if layout == "SBH":
        return list(x.reshape(x.shape[0], x.shape[1], n, -1).permute(1, 2, 0, 3))
    ends = np.cumsum(_lens(cumulative))
    return [x[e - s : e].transpose(0, 1) for s, e in zip(_lens(cumulative), ends, strict=True)]


def merge_heads(outs: list[torch.Tensor], layout: str) -> torch.Tensor:
    """Inverse of split_heads."""
    if layout == "TND":
        return torch.cat([o.transpose(0, 1) for o in outs])
    o = torch.stack(outs)
    if layout == "BNSD":
        return o
    o = o.transpose(1, 2)
    if layout in ("BSH", "SBH"):
        o = o.reshape(o.shape[0], o.shape[1], -1)
    return o.transpose(0, 1).contiguous() if layout == "SBH" else o.contiguous()


def torch_fusion_attention(q, k, v, mask, head_num: int, layout: str, a: dict):
    """PyTorch's attention in the inputs' dtype (scores, masked_fill, softmax, P @ V; GQA by repeat) and the
    fp32 softmax_max / softmax_sum of the dtype-rounded inputs, in the op's output layouts; a fully masked row
    gives 0, -FLT_MAX and FLT_MAX as CANN writes them. The masked positions are the golden's (expand_mask)."""
    kw = op_attrs(a)
    qs = split_heads(q, layout, head_num, kw["actual_seq_qlen"])
    n2 = k.shape[-2] if layout in ("BSND", "TND") else k.shape[1] if layout == "BNSD" else None
    n2 = n2 or head_num * k.shape[-1] // q.shape[-1]  # BSH / SBH: H_kv / D
    ks = split_heads(k, layout, n2, kw["actual_seq_kvlen"])
    vs = split_heads(v, layout, n2, kw["actual_seq_kvlen"])
    varlen = layout == "TND"
    q_lens = [s.shape[1] for s in qs]
    kv_lens = [s.shape[1] for s in ks]
    dense = None
    if mask is not None:
        dense = R.expand_mask(
            q_lens,
            kv_lens,
            head_num,
            mask.numpy() != 0,
            kw["sparse_mode"],
            kw["pre_tockens"],
            kw["next_tockens"],
            varlen,
        )
    outs, maxes, sums = [], [], []
    for b, (qb, kb, vb) in enumerate(zip(qs, ks, vs, strict=True)):
        g = head_num // kb.shape[0]
        kb, vb = kb.repeat_interleave(g, 0), vb.repeat_interleave(g, 0)
        keep = None if dense is None else torch.from_numpy(~dense[b, :, : qb.shape[1], : kb.shape[1]])
        s = (qb @ kb.transpose(-1, -2)) * kw["scale"]
        s32 = (qb.float() @ kb.float().transpose(-1, -2)) * kw["scale"]
        if keep is not None:
            s, s32 = s.masked_fill(~keep, float("-inf")), s32.masked_fill(~keep, float("-inf"))
        outs.append(torch.softmax(s, dim=-1).nan_to_num(0.0) @ vb)
        m = s32.amax(-1, keepdim=True)
        kept = torch.isfinite(m)
        total = torch.exp(s32 - torch.where(kept, m, torch.zeros_like(m))).sum(-1)
        maxes.append(torch.where(kept.squeeze(-1), m.squeeze(-1), torch.tensor(-R.FLT_MAX)))
        sums.append(torch.where(kept.squeeze(-1), total, torch.tensor(R.FLT_MAX)))

    def stats(per_batch):
        if varlen:  # torch_npu's default TND stats: each sequence's [N, s] block in order, declared [T, N, 8]
            flat = torch.cat([x.reshape(-1) for x in per_batch]).reshape(-1, head_num)
        else:
            flat = torch.stack(per_batch)
        return flat[..., None].expand(*flat.shape, R.SOFTMAX_LANES).contiguous()

    return merge_heads(outs, layout), stats(maxes), stats(sums)


def run_fusion_attention(t, a):
    return ascendc_ops.fusion_attention(
        t["query"], t["key"], t["value"], int(a["head_num"]), str(a["input_layout"]), t.get("atten_mask"), **op_attrs(a)
    )


def golden_fusion_attention(g, a):
    mask = g.get("atten_mask")
    return R.fusion_attention_reference(
        g["query"],
        g["key"],
        g["value"],
        int(a["head_num"]),
        str(a["input_layout"]),
        None if mask is None else mask != 0,
        **op_attrs(a),
    )


def fuzz_attention(rng, attrs):
    """Shapes in the case's fixed layout (input_layout; TND has no fuzzer: its lengths are attributes):
    B 1-2, N2 1-2 kv heads with 1-4 query heads each, S1 / S2 1-200, D 16-128 in steps of 8."""
    layout = str(attrs.get("input_layout", "BNSD"))
    if layout == "TND":
        raise ValueError("fusion_attention's fuzzer draws fixed layouts; TND's lengths are the case's attributes")
    b, n2, g = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 5))
    s1, s2, d = int(rng.integers(1, 200)), int(rng.integers(1, 200)), 8 * int(rng.integers(2, 17))
    if int(attrs.get("head_num", n2 * g)) % n2:
        raise ValueError(f"fusion_attention fuzzer: head_num {attrs.get('head_num')} is no multiple of {n2}")
    n1 = int(attrs.get("head_num", n2 * g))
    kv = layout_shape(layout, b, n2, s2, d)
    return {"query": tuple(layout_shape(layout, b, n1, s1, d)), "key": tuple(kv), "value": tuple(kv)}


def layout_shape(layout: str, b: int, n: int, s: int, d: int) -> list[int]:
    """A fixed layout's shape of B batches, N heads, S tokens, D per head."""
    return {
        "BNSD": [b, n, s, d],
        "BSND": [b, s, n, d],
        "BSH": [b, s, n * d],
        "SBH": [s, b, n * d],
    }[layout]


def attention_suite(quick: bool) -> list[dict]:
    """fusion_attention in fp16, bf16 and fp32: every fixed layout (B 2, N 4 over 2 kv heads, S1 100 x S2 150,
    D 64), TND (three sequences of unequal query and key lengths, causal), GQA 8 query heads over 1, causal
    top-left (mode 2) and bottom-right (mode 3) with S1 != S2, a mask with fully masked rows, odd D 80. Query and
    key uniform in [-1, 1] (scores of both signs), value in [0.25, 1.25]: each output is a convex combination of
    values far from zero, so the literal MERE/MARE standard applies (tests/ops/test_attention.py covers signed
    values against fp32 evaluation bounds); scale 1 / sqrt(D)."""
    f = list(DTYPES)

    def entry(name, layout, b, n1, n2, s1, s2, d, mask=None, attrs=(), tnd=None):
        if tnd is not None:  # (cumulative q ends, cumulative kv ends)
            shapes = [[tnd[0][-1], n1, d], [tnd[1][-1], n2, d], [tnd[1][-1], n2, d]]
            out = [tnd[0][-1], n1, d]
            stat = [tnd[0][-1], n1, 8]
        else:
            shapes = [
                layout_shape(layout, b, n1, s1, d),
                layout_shape(layout, b, n2, s2, d),
                layout_shape(layout, b, n2, s2, d),
            ]
            out, stat = layout_shape(layout, b, n1, s1, d), [b, n1, s1, 8]
        ranges = (SIGNED, SIGNED, POSITIVE)
        ins = [
            case_tensor(nm, sh, f, value_range=[r])
            for nm, sh, r in zip(("query", "key", "value"), shapes, ranges, strict=True)
        ]
        if mask is not None:  # (generator, shape)
            ins.append(case_tensor("atten_mask", mask[1], "bool", value=mask[0]))
        outs = [case_tensor("attention_out", out, f)]
        outs += [case_tensor(n, stat, "float32") for n in ("softmax_max", "softmax_sum")]
        attr = [
            {"name": "head_num", "type": "int", "value": n1},
            {"name": "input_layout", "type": "string", "value": layout},
            {"name": "scale", "type": "float", "value": 1.0 / d**0.5},
            *attrs,
        ]
        return {
            "case_name": f"fusion_attention_{name}",
            "op": "fusion_attention",
            "input_desc": ins,
            "output_desc": outs,
            "attr": attr,
        }

    causal = ("causal_mask", [COMPRESSED, COMPRESSED])

    def mode(m):
        return {"name": "sparse_mode", "type": "int", "value": m}

    out = [entry(f"{lay.lower()}", lay, 2, 4, 2, 100, 150, 64) for lay in ("BNSD", "BSND", "BSH", "SBH")]
    out += [
        entry("gqa8", "BSND", 1, 8, 1, 40, 130, 64),
        entry("causal_top_left", "BNSD", 1, 2, 1, 120, 200, 64, causal, [mode(2)]),
        entry("causal_bottom_right", "BNSD", 1, 2, 1, 120, 200, 64, causal, [mode(3)]),
        entry("masked_rows", "BNSD", 1, 2, 2, 33, 70, 64, ("mask_with_masked_rows", [33, 70])),
        entry("d80", "BNSD", 1, 2, 1, 70, 90, 80),
        entry(
            "tnd_causal",
            "TND",
            1,
            4,
            2,
            0,
            0,
            64,
            causal,
            [
                mode(3),
                {"name": "actual_seq_qlen", "type": "list_int", "value": [17, 67, 150]},
                {"name": "actual_seq_kvlen", "type": "list_int", "value": [20, 80, 190]},
            ],
            tnd=([17, 67, 150], [20, 80, 190]),
        ),
    ]
    return out[:2] + out[4:] if quick else out


VERIFY: dict[str, OpSpec] = {
    "fusion_attention": OpSpec(
        run=run_fusion_attention,
        second=lambda t, a: torch_fusion_attention(
            t["query"], t["key"], t["value"], t.get("atten_mask"), int(a["head_num"]), str(a["input_layout"]), a
        ),
        golden=golden_fusion_attention,
        fuzz=fuzz_attention,
        default_cases=attention_suite,
        values=VALUES,
    ),
}


# ---------------------------------------------------------------- bench
# A causal GQA shape, BSND, against HF's eager attention (matmul, fp32 softmax, matmul; the S x S scores
# materialised) and, as the op "fusion_attention_sdpa", against torch's scaled_dot_product_attention;
# `--op fusion_attention fusion_attention_sdpa` times both in one run. The default shape is small (S 128, 8 query
# heads over 2, D 128): the twin runs the cube's and the vectors' instructions one core at a time (~50 ms a call
# here, seconds at S 1024), so `ascendc-ops bench` takes about as long per row as for the other families. A
# training shape runs when asked: `--shape 1,1024,32,8,128`, or `--preset llama3-8b --seq 1024` (TRAINING_SHAPE).
# The 910B column is the pipeline model's mix-launch estimate (pipeline/mix.py), as for cann-bench's MHA and GQA.
# bwd (dq) and full rows need custom::fusion_attention's autograd formula (AUTOGRAD_OP): without it the bench
# skips them and says so.
BENCH_TARGETS = {p: Targets(1.0, 1.0, None) for p in ("fwd", "bwd", "full")}
DEFAULT_SHAPE = (1, 128, 8, 2, 128)  # B, S, N, NKV, D
TRAINING_SHAPE = (1, 1024, 32, 8, 128)  # llama3-8b's heads at S 1024: --preset llama3-8b --seq 1024 gives it
AUTOGRAD_OP = "custom::fusion_attention"


def _bench_dims(shape):
    b, s, n, nkv, d = shape
    return b, s, n, nkv, d


def check_attention_shape(shape) -> None:
    if len(shape) != 5 or min(shape) < 1 or shape[2] % shape[3]:
        raise ValueError(f"needs B,S,N,NKV,D (5 positive dims, N a multiple of NKV), got {','.join(map(str, shape))}")


def attention_inputs(shape, dtype, gen):
    b, s, n, nkv, d = _bench_dims(shape)
    q = torch.randn(b, s, n, d, generator=gen).to(dtype)
    k, v = (torch.randn(b, s, nkv, d, generator=gen).to(dtype) for _ in range(2))
    return q, k, v, torch.triu(torch.ones(COMPRESSED, COMPRESSED, dtype=torch.bool), diagonal=1)


def attention_ours(q, k, v, mask):
    """fusion_attention, causal (sparse_mode 3 with the compressed mask), scale 1 / sqrt(D)."""
    return ascendc_ops.fusion_attention(q, k, v, q.shape[2], "BSND", mask, 1.0 / q.shape[-1] ** 0.5, sparse_mode=3)[0]


def attention_eager(q, k, v, mask):
    """HF's eager_attention_forward: repeat_kv, Q K^T * scaling + the additive causal mask, softmax in fp32 cast
    back, P V (the [B, N, S, S] scores and probabilities materialised)."""
    g = q.shape[2] // k.shape[2]
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2).repeat_interleave(g, 1), v.transpose(1, 2).repeat_interleave(g, 1)
    s = qt.shape[2]
    causal = torch.full((s, s), torch.finfo(q.dtype).min, dtype=q.dtype).triu(1)
    w = torch.matmul(qt, kt.transpose(2, 3)) * (1.0 / q.shape[-1] ** 0.5) + causal
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, vt).transpose(1, 2)


def attention_sdpa(q, k, v, mask):
    """torch's scaled_dot_product_attention, causal, GQA by enable_gqa (its CPU flash kernel: no S x S)."""
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
    )
    return out.transpose(1, 2)


def attention_bytes(inputs, out, pass_) -> int:
    """fwd: Q, K, V read and O written once; bwd: Q, K, V, O and dO read, dQ, dK, dV written once (the backward
    kernel writes all three whatever autograd asks for); full: both. The mask (4 MiB, read in part) and the
    fp32 softmax statistics (S x N x 8 x 4 bytes each) are not counted."""
    q, k, v, _ = inputs
    fwd = 2 * q.nbytes + k.nbytes + v.nbytes
    bwd = 4 * q.nbytes + 2 * (k.nbytes + v.nbytes)
    return {"fwd": fwd, "bwd": bwd, "full": fwd + bwd}[pass_]


def attention_flops(inputs, pass_) -> int:
    """Causal, so half of each S x S product: the forward's Q K^T and P V, 2 * 2 * B * N * S^2 * D / 2; the
    backward's five (S again, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q), 5 * 2 * B * N * S^2 * D / 2."""
    q = inputs[0]
    b, s, n, d = q.shape
    per_product = b * n * s * s * d  # 2 * B * N * S^2 * D FLOPs, halved by the causal mask
    return {"fwd": 2, "bwd": 5, "full": 7}[pass_] * per_product


def _bench(step) -> OpBench:
    return OpBench(
        attention_ours,
        step,
        attention_inputs,
        check_attention_shape,
        lambda m, seq: [(1, seq, m.heads, m.kv_heads, m.head_dim)],
        attention_bytes,
        "B,S,N,NKV,D",
        (DEFAULT_SHAPE,),
        BENCH_TARGETS,
        flops=attention_flops,
        autograd_op=AUTOGRAD_OP,
    )


BENCH: dict[str, OpBench] = {
    "fusion_attention": _bench(attention_eager),
    "fusion_attention_sdpa": _bench(attention_sdpa),
}
