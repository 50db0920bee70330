"""The attention family's harness knowledge. fusion_attention for `verify` (how to run it, PyTorch's same-dtype
attention, the float64 golden, the fuzzer, the default suite, the mask generators) and for `bench` against HF's
eager attention (matmul + softmax + matmul) and torch's scaled_dot_product_attention. fusion_attention_grad for
`verify`, as its own op: PyTorch's own backward in the same dtype, the golden (ops/attention_reference.py), the
fuzzer, the default suite, and the value generators that make attention_in / softmax_max / softmax_sum the
forward op's own outputs for the case's query, key, value and mask (the backward recomputes P from them); its
outputs are judged by verify/attention_grad_standard.py (the fp32 evaluation bound on every element, the double
benchmark, the literal MERE where PyTorch meets it), which tests/ops/test_attention_grad.py applies too. The
arguments, layouts, lengths and the compressed mask are ops/attention_args.py's."""

from __future__ import annotations

import numpy as np
import torch

import ascendc_ops

from ...dtypes import torch_dtype
from ...ops import attention_reference as R
from ...ops.attention_args import (
    COMPRESSED_MASK_SIZE,
    AttentionAttrs,
    batch_and_seq,
    compressed_mask,
    layout_shape,
    merge_heads,
    merge_sequences,
    seq_lengths,
    split_heads,
    split_sequences,
)
from ..values import GenContext, signed_uniform
from ..verify.attention_grad_standard import check_cancelling, grad_bounds
from .base import DTYPES, Moved, OpBench, OpSpec, Targets, case_tensor, per_pass

SIGNED, POSITIVE = [-1.0, 1.0], [0.25, 1.25]  # the default suite's query / key and value ranges
NORMAL = {"value_range": [[0.0, 1.0]], "data_distribute": "normal"}  # N(0, 1): scores of both signs, std ~1
_LAST_FORWARD: list = [None, None]  # (the case's made-inputs dict, the forward's outputs): one forward a case


def case_attrs(a: dict, atten_mask=None) -> AttentionAttrs:
    """The op's arguments after its tensors for a case's attributes (op_proto defaults filled by the case
    loader) and mask."""
    d = AttentionAttrs._field_defaults
    lists = [None if a.get(k) is None else [int(x) for x in a[k]] for k in ("actual_seq_qlen", "actual_seq_kvlen")]
    return AttentionAttrs(
        int(a["head_num"]), str(a["input_layout"]), atten_mask, float(a.get("scale", d["scale"])),
        int(a.get("pre_tockens", d["pre_tockens"])), int(a.get("next_tockens", d["next_tockens"])), *lists,
        int(a.get("sparse_mode", d["sparse_mode"])), float(a.get("softcap", d["softcap"])), sink=a.get("sink"),
    )  # fmt: skip


# ---------------------------------------------------------------- value generators
def causal_mask(shape, attrs, ctx: GenContext | None = None):
    """The compressed causal mask of sparse modes 2-4, 1 = masked."""
    if tuple(shape) != (COMPRESSED_MASK_SIZE, COMPRESSED_MASK_SIZE):
        raise ValueError(f"'causal_mask' is {COMPRESSED_MASK_SIZE} x {COMPRESSED_MASK_SIZE}, got shape {list(shape)}")
    return compressed_mask().astype(np.float64)


def mask_with_masked_rows(shape, attrs, ctx: GenContext | None = None):
    """A random [.., S1, S2] mask (a quarter masked) whose row 0 and last row are masked whole: their output
    is 0 and their softmax_max / softmax_sum -FLT_MAX / FLT_MAX (docs/attention.md)."""
    rng = ctx.rng if ctx is not None else np.random.default_rng(0)
    m = (rng.random(shape) < 0.25).astype(np.float64)
    m[..., 0, :] = 1.0
    m[..., -1, :] = 1.0
    return m


def _forward(attrs, ctx: GenContext | None):
    if ctx is None or not {"query", "key", "value"} <= set(ctx.made):
        raise ValueError("fusion_attention_grad: the forward's outputs need the inputs query, key and value first")
    if _LAST_FORWARD[0] is not ctx.made:  # made: the case's inputs so far, one dict a case
        dtype = torch_dtype(ctx.dtypes["query"])
        q, k, v = (torch.from_numpy(ctx.made[n]).to(dtype) for n in ("query", "key", "value"))  # exact: rounded
        mask = ctx.made.get("atten_mask")
        mask = None if mask is None else torch.from_numpy(mask != 0)
        outs = ascendc_ops.fusion_attention(q, k, v, *case_attrs(attrs, mask))
        _LAST_FORWARD[:] = [ctx.made, tuple(o.double().numpy() for o in outs)]
    return _LAST_FORWARD[1]


def _forward_output(index: int, name: str):
    def make(shape, attrs, ctx: GenContext | None = None):
        out = _forward(attrs, ctx)[index]
        if tuple(out.shape) != tuple(shape):
            raise ValueError(
                f"fusion_attention_grad: {name} has shape {list(shape)}, the forward's is {list(out.shape)}"
            )
        return out

    make.__doc__ = f"fusion_attention's {name} for the inputs made before it (their dtype, mask and attrs)."
    return make


VALUES = {
    "causal_mask": causal_mask,
    "mask_with_masked_rows": mask_with_masked_rows,
    "signed_uniform": signed_uniform,
    "forward_attention_out": _forward_output(0, "attention_out"),
    "forward_softmax_max": _forward_output(1, "softmax_max"),
    "forward_softmax_sum": _forward_output(2, "softmax_sum"),
}


# ---------------------------------------------------------------- verify: fusion_attention
def per_sequence(x: torch.Tensor, layout: str, n: int, cumulative=None) -> list[torch.Tensor]:
    """A layout's tensor as one [N, S, D] tensor per batch (TND: per sequence of the cumulative lengths)."""
    if layout == "TND":
        return split_sequences(x, [int(s) for s in seq_lengths(cumulative)])
    return list(split_heads(x, layout, n))


def from_sequences(outs: list[torch.Tensor], layout: str) -> torch.Tensor:
    """Inverse of per_sequence."""
    if layout == "TND":
        return merge_sequences(outs, torch.cat)
    return merge_heads(torch.stack(outs), layout).contiguous()


def torch_fusion_attention(q, k, v, mask, head_num: int, layout: str, a: dict):
    """PyTorch's attention in the inputs' dtype (scores, masked_fill, softmax, P @ V; GQA by repeat) and the
    fp32 softmax_max / softmax_sum of the dtype-rounded inputs, in the op's output layouts; a fully masked row
    gives 0, -FLT_MAX and FLT_MAX as CANN writes them. The masked positions are the golden's (expand_mask)."""
    kw = case_attrs(a)
    qs = per_sequence(q, layout, head_num, kw.actual_seq_qlen)
    n2 = k.shape[-2] if layout in ("BSND", "TND") else k.shape[1] if layout == "BNSD" else None
    n2 = n2 or head_num * k.shape[-1] // q.shape[-1]  # BSH / SBH: H_kv / D
    ks = per_sequence(k, layout, n2, kw.actual_seq_kvlen)
    vs = per_sequence(v, layout, n2, kw.actual_seq_kvlen)
    varlen = layout == "TND"
    q_lens = [s.shape[1] for s in qs]
    kv_lens = [s.shape[1] for s in ks]
    dense = None
    if mask is not None:
        dense = R.expand_mask(q_lens, kv_lens, head_num, mask.numpy() != 0, *kw.band(), varlen)
    outs, maxes, sums = [], [], []
    for b, (qb, kb, vb) in enumerate(zip(qs, ks, vs, strict=True)):
        g = head_num // kb.shape[0]
        kb, vb = kb.repeat_interleave(g, 0), vb.repeat_interleave(g, 0)
        keep = None if dense is None else torch.from_numpy(~dense[b, :, : qb.shape[1], : kb.shape[1]])
        s = softcapped((qb @ kb.transpose(-1, -2)) * kw.scale, kw.softcap)
        s32 = softcapped((qb.float() @ kb.float().transpose(-1, -2)) * kw.scale, kw.softcap)
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

    return from_sequences(outs, layout), stats(maxes), stats(sums)


def run_fusion_attention(t, a):
    return ascendc_ops.fusion_attention(t["query"], t["key"], t["value"], *case_attrs(a, t.get("atten_mask")))


def golden_fusion_attention(g, a):
    mask = g.get("atten_mask")
    return R.fusion_attention_reference(
        g["query"], g["key"], g["value"], *case_attrs(a, None if mask is None else mask != 0)
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

    causal = ("causal_mask", [COMPRESSED_MASK_SIZE, COMPRESSED_MASK_SIZE])

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


# ---------------------------------------------------------------- verify: fusion_attention_grad
def sequences(t: dict, a: dict):
    """Per sequence: (q, k, v, dy, attention_in [N, s, D] in the dtype, softmax_max / sum [N, s1], keep
    [N or 1, s1, s2] (True = attend) or None) -- a batch of the fixed layouts or one packed TND sequence."""
    kw = case_attrs(a)
    n1, layout = kw.head_num, kw.input_layout
    q = t["query"]
    n2 = {"BSND": -2, "TND": -2, "BNSD": 1}.get(layout)
    n2 = t["key"].shape[n2] if n2 is not None else n1 * t["key"].shape[-1] // q.shape[-1]  # BSH / SBH: H_kv / D
    qs, dys, outs = (per_sequence(t[n], layout, n1, kw.actual_seq_qlen) for n in ("query", "dy", "attention_in"))
    ks, vs = (per_sequence(t[n], layout, n2, kw.actual_seq_kvlen) for n in ("key", "value"))
    if layout == "TND":  # each sequence's softmax_max / sum hold an [N, s, 8] block (torch_npu's default layout)
        ends = np.cumsum([x.shape[1] for x in qs])
        stats = [
            [t[n].reshape(-1)[(e - x.shape[1]) * n1 * 8 : e * n1 * 8].reshape(n1, x.shape[1], 8)[..., 0]
             for e, x in zip(ends, qs, strict=True)]
            for n in ("softmax_max", "softmax_sum")
        ]  # fmt: skip
    else:
        stats = [t[n][..., 0] for n in ("softmax_max", "softmax_sum")]
    keep = None
    mask = t.get("atten_mask")
    if mask is not None:
        q_lens, kv_lens = [x.shape[1] for x in qs], [x.shape[1] for x in ks]
        masked = R.expand_mask(q_lens, kv_lens, n1, mask.numpy() != 0, *kw.band(), layout == "TND")
        keep = [
            torch.from_numpy(~masked[i, :, :s1, :s2]) for i, (s1, s2) in enumerate(zip(q_lens, kv_lens, strict=True))
        ]
    for i, parts in enumerate(zip(qs, ks, vs, dys, outs, *stats, strict=True)):
        yield (*parts, None if keep is None else keep[i])


def softcapped(s: torch.Tensor, softcap: float) -> torch.Tensor:
    """Scores as Gemma 2/3 cap them (softcap * tanh(s / softcap)), or as they are for softcap 0."""
    return softcap * torch.tanh(s / softcap) if softcap else s


def torch_grads(q, k, v, dy, keep, scale, softcap=0.0, sink=None):
    """PyTorch's own backward: autograd of eager attention in the inputs' dtype ([N, s, D], GQA by repeat, a row
    with no key gives 0 and passes no gradient); with sink ([N], a logit per head with no value, gpt-oss's eager
    attention) also d_sink."""
    leaves = (q, k, v) if sink is None else (q, k, v, sink)
    if not q.shape[1] or not k.shape[1]:  # an empty sequence
        return tuple(torch.zeros_like(x) for x in leaves)
    q, k, v, *sink = (x.detach().clone().requires_grad_() for x in leaves)
    g = q.shape[0] // k.shape[0]
    s = softcapped((q @ k.repeat_interleave(g, 0).transpose(-1, -2)) * scale, softcap)
    if sink:  # with a sink no row is empty: a row with no key puts all of its weight on the sink
        s = s if keep is None else s.masked_fill(~keep, float("-inf"))
        col = sink[0].to(s.dtype)[:, None, None].expand(*s.shape[:-1], 1)
        p = torch.softmax(torch.cat([s, col], -1), dim=-1)[..., :-1]
    else:
        if keep is not None:
            live = keep.any(-1, keepdim=True)
            s = s.masked_fill(~keep, float("-inf")).masked_fill(~live, 0.0)
        p = torch.softmax(s, dim=-1)
        if keep is not None:
            p = p * live.to(p.dtype)
    return torch.autograd.grad(p @ v.repeat_interleave(g, 0), (q, k, v, *sink), dy)


def torch_fusion_attention_grad(t: dict, a: dict) -> tuple:
    """PyTorch's (dq, dk, dv) in the inputs' dtype and layout; with a sink in the attrs also d_sink (fp32 [N1])."""
    layout, kw = str(a["input_layout"]), case_attrs(a)
    per = [
        torch_grads(q, k, v, dy, keep, kw.scale, kw.softcap, kw.sink) for q, k, v, dy, _, _, _, keep in sequences(t, a)
    ]
    grads = tuple(from_sequences([p[i] for p in per], layout) for i in range(3))
    return grads if kw.sink is None else (*grads, sum(p[3] for p in per))


def fusion_attention_grad_bounds(t: dict, a: dict) -> tuple:
    """The fp32 evaluation bounds of dq, dk, dv (attention_grad_standard.grad_bounds), float64 in the layout; with a
    sink in the attrs also d_sink's."""
    layout, kw, dtype = str(a["input_layout"]), case_attrs(a), t["query"].dtype
    sink = None if kw.sink is None else kw.sink.double()
    per = [
        grad_bounds(q, k, v, dy, o, m, s, keep, kw.scale, dtype, kw.softcap, sink)
        for q, k, v, dy, o, m, s, keep in sequences(t, a)
    ]
    bounds = tuple(from_sequences([p[i] for p in per], layout).numpy() for i in range(3))
    return bounds if sink is None else (*bounds, sum(p[3] for p in per).numpy())


def check_fusion_attention_grad(t: dict, a: dict, ours, second, golden) -> tuple:
    """dq, dk, dv each by attention_grad_standard.check_cancelling: one precision.Check per output."""
    bounds = fusion_attention_grad_bounds(t, a)
    dtype = t["query"].dtype
    return tuple(
        check_cancelling(y.double().numpy(), g, s.double().numpy(), dtype, b)
        for y, s, g, b in zip(ours, second, golden, bounds, strict=True)
    )


def run_fusion_attention_grad(t, a):
    """(dq, dk, dv), with a sink in the attrs also d_sink: the op's outputs but an empty dsink."""
    names = ("query", "key", "value", "dy", "softmax_max", "softmax_sum", "attention_in")
    attrs = case_attrs(a, t.get("atten_mask"))
    grads = ascendc_ops.fusion_attention_grad(*(t[n] for n in names), *attrs)
    return grads if attrs.sink is not None else grads[:3]


def golden_fusion_attention_grad(g, a):
    mask = g.get("atten_mask")
    attrs = case_attrs(a, None if mask is None else mask != 0)
    return R.fusion_attention_grad_reference(
        *(g[n] for n in ("query", "key", "value", "dy")), *attrs, with_sink=attrs.sink is not None
    )


def fuzz_attention_grad(rng, attrs):
    """fusion_attention's fuzzer (fixed layouts), dy and attention_in of query's shape, the stats [B, N, S1, 8]."""
    shapes = fuzz_attention(rng, attrs)
    n1 = int(attrs["head_num"])
    b, s1 = batch_and_seq(str(attrs["input_layout"]), shapes["query"])
    stats = (b, n1, s1, R.SOFTMAX_LANES)
    return {
        **shapes,
        "dy": shapes["query"],
        "attention_in": shapes["query"],
        "softmax_max": stats,
        "softmax_sum": stats,
    }


def attention_grad_suite(quick: bool) -> list[dict]:
    """fusion_attention_grad in fp16, bf16 and fp32, q, k, v and dy N(0, 1), scale 1 / sqrt(D), the forward's
    outputs as attention_in / softmax_max / softmax_sum: every fixed layout (B 2, N 4 over 2 kv heads, S1 64 x
    S2 96, D 64); GQA 8 query heads over 1; D 128 and odd D 80; sparse mode 0 (a mask and a band), 1 (a mask
    with fully masked rows: dq 0 there), 2 (causal top-left, S1 < S2), 3 (causal bottom-right, S1 > S2: the
    first rows keep no key), 4 (a band); TND, three packed sequences of unequal query and key lengths, causal.
    Small, so the backward's cases take about as long as the forward's."""
    f = list(DTYPES)

    def entry(name, layout, b, n1, n2, s1, s2, d, mask=None, attrs=(), tnd=None):
        if tnd is not None:  # (cumulative q ends, cumulative kv ends)
            q, kv, stat = [tnd[0][-1], n1, d], [tnd[1][-1], n2, d], [tnd[0][-1], n1, R.SOFTMAX_LANES]
        else:
            q, kv, stat = (
                layout_shape(layout, b, n1, s1, d),
                layout_shape(layout, b, n2, s2, d),
                [b, n1, s1, R.SOFTMAX_LANES],
            )
        ins = [case_tensor(nm, sh, f, **NORMAL) for nm, sh in (("query", q), ("key", kv), ("value", kv), ("dy", q))]
        if mask is not None:  # (generator, shape)
            ins.append(case_tensor("atten_mask", mask[1], "bool", value=mask[0]))
        ins += [case_tensor(n, stat, "float32", value=f"forward_{n}") for n in ("softmax_max", "softmax_sum")]
        ins.append(case_tensor("attention_in", q, f, value="forward_attention_out"))
        attr = [
            {"name": "head_num", "type": "int", "value": n1},
            {"name": "input_layout", "type": "string", "value": layout},
            {"name": "scale", "type": "float", "value": 1.0 / d**0.5},
            *attrs,
        ]
        outs = [case_tensor(n, sh, f) for n, sh in (("dq", q), ("dk", kv), ("dv", kv))]
        return {"case_name": f"fusion_attention_grad_{name}", "op": "fusion_attention_grad",
                "input_desc": ins, "output_desc": outs, "attr": attr}  # fmt: skip

    causal = ("causal_mask", [COMPRESSED_MASK_SIZE, COMPRESSED_MASK_SIZE])

    def mode(m, pre=None, nxt=None):
        band = [{"name": n, "type": "int", "value": x} for n, x in (("pre_tockens", pre), ("next_tockens", nxt))]
        return [{"name": "sparse_mode", "type": "int", "value": m}, *(x for x in band if x["value"] is not None)]

    out = [entry(lay.lower(), lay, 2, 4, 2, 64, 96, 64) for lay in ("BNSD", "BSND", "BSH", "SBH")]
    out += [
        entry("gqa8", "BSND", 1, 8, 1, 40, 100, 64),
        entry("masked_rows_mode1", "BNSD", 1, 2, 2, 33, 70, 64, ("mask_with_masked_rows", [33, 70]), mode(1)),
        entry("causal_bottom_right", "BNSD", 1, 2, 1, 90, 60, 64, causal, mode(3)),
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
                *mode(3),
                {"name": "actual_seq_qlen", "type": "list_int", "value": [17, 67, 100]},
                {"name": "actual_seq_kvlen", "type": "list_int", "value": [20, 80, 130]},
            ],
            tnd=([17, 67, 100], [20, 80, 130]),
        ),  # fmt: skip
    ]
    if quick:
        return [out[i] for i in (0, 3, 4, 5, 6, 7)]
    return out + [
        entry("d128", "BNSD", 1, 2, 1, 48, 80, 128),
        entry("d80", "BNSD", 1, 2, 1, 50, 70, 80),
        entry("band_mode0_mask", "BNSD", 1, 2, 1, 64, 64, 64, ("mask_with_masked_rows", [64, 64]), mode(0, 20, 5)),
        entry("causal_top_left", "BNSD", 1, 2, 1, 60, 100, 64, causal, mode(2)),
        entry("band_mode4", "BNSD", 1, 2, 1, 80, 70, 64, causal, mode(4, 16, 0)),
    ]


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
    "fusion_attention_grad": OpSpec(
        run=run_fusion_attention_grad,
        second=torch_fusion_attention_grad,
        golden=golden_fusion_attention_grad,
        fuzz=fuzz_attention_grad,
        default_cases=attention_grad_suite,
        values=VALUES,
        check=check_fusion_attention_grad,
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
# skips them and says so. fusion_attention_grad is timed as those rows.
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
    return q, k, v, torch.from_numpy(compressed_mask())


def attention_ours(q, k, v, mask):
    """fusion_attention, causal (sparse_mode 3 with the compressed mask), scale 1 / sqrt(D)."""
    return ascendc_ops.fusion_attention(q, k, v, q.shape[2], "BSND", mask, 1.0 / q.shape[-1] ** 0.5, sparse_mode=3)[0]


def eager_scores(q, k, v):
    """HF's eager_attention_forward up to the softmax: repeat_kv, Q K^T * scaling + the additive causal mask
    ([B, N, S, S] scores, BNSD values)."""
    g = q.shape[2] // k.shape[2]
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2).repeat_interleave(g, 1), v.transpose(1, 2).repeat_interleave(g, 1)
    s = qt.shape[2]
    causal = torch.full((s, s), torch.finfo(q.dtype).min, dtype=q.dtype).triu(1)
    return torch.matmul(qt, kt.transpose(2, 3)) * (1.0 / q.shape[-1] ** 0.5) + causal, vt


def attention_eager(q, k, v, mask):
    """HF's eager_attention_forward: eager_scores, softmax in fp32 cast back, P V (the [B, N, S, S] scores and
    probabilities materialised)."""
    w, vt = eager_scores(q, k, v)
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
    qkv = q.nbytes + k.nbytes + v.nbytes
    return per_pass(Moved(qkv, q.nbytes), Moved(qkv + 2 * q.nbytes, qkv))[pass_]


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
