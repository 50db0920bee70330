"""fusion_attention_grad for `verify`, as its own op beside the forward (families/attention.py): how to run it,
PyTorch's own backward in the same dtype, the float64 golden (ops/attention_reference.py), the fuzzer, the
default suite, and the value generators that make attention_in / softmax_max / softmax_sum the forward op's own
outputs for the case's query, key, value and mask (the backward recomputes P from them). Its outputs are judged
by the criterion of verify/attention_grad_standard.py (the fp32 evaluation bound on every element, the double
benchmark, the literal MERE where PyTorch meets it), which tests/ops/test_attention_grad.py applies too."""

from __future__ import annotations

import numpy as np
import torch

import ascendc_ops

from ...dtypes import torch_dtype
from ...ops import attention_reference as R
from ..values import GenContext
from ..verify.attention_grad_standard import check_cancelling, grad_bounds
from .attention import (
    COMPRESSED,
    VALUES as FORWARD_VALUES,
    fuzz_attention,
    layout_shape,
    merge_heads,
    op_attrs,
    split_heads,
)
from .base import DTYPES, OpSpec, case_tensor

NORMAL = {"value_range": [[0.0, 1.0]], "data_distribute": "normal"}  # N(0, 1): scores of both signs, std ~1
_LAST_FORWARD: list = [None, None]  # (the case's made-inputs dict, the forward's outputs): one forward a case


# ---------------------------------------------------------------- value generators: the forward's outputs
def _forward(attrs, ctx: GenContext | None):
    if ctx is None or not {"query", "key", "value"} <= set(ctx.made):
        raise ValueError("fusion_attention_grad: the forward's outputs need the inputs query, key and value first")
    if _LAST_FORWARD[0] is not ctx.made:  # made: the case's inputs so far, one dict a case
        dtype = torch_dtype(ctx.dtypes["query"])
        q, k, v = (torch.from_numpy(ctx.made[n]).to(dtype) for n in ("query", "key", "value"))  # exact: rounded
        mask = ctx.made.get("atten_mask")
        mask = None if mask is None else torch.from_numpy(mask != 0)
        outs = ascendc_ops.fusion_attention(
            q, k, v, int(attrs["head_num"]), str(attrs["input_layout"]), mask, **op_attrs(attrs)
        )
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
    **FORWARD_VALUES,
    "forward_attention_out": _forward_output(0, "attention_out"),
    "forward_softmax_max": _forward_output(1, "softmax_max"),
    "forward_softmax_sum": _forward_output(2, "softmax_sum"),
}


# ---------------------------------------------------------------- per sequence: PyTorch's backward, bounds
def sequences(t: dict, a: dict):
    """Per sequence: (q, k, v, dy, attention_in [N, s, D] in the dtype, softmax_max / sum [N, s1], keep
    [N or 1, s1, s2] (True = attend) or None) -- a batch of the fixed layouts or one packed TND sequence."""
    kw, n1, layout = op_attrs(a), int(a["head_num"]), str(a["input_layout"])
    q = t["query"]
    n2 = {"BSND": -2, "TND": -2, "BNSD": 1}.get(layout)
    n2 = t["key"].shape[n2] if n2 is not None else n1 * t["key"].shape[-1] // q.shape[-1]  # BSH / SBH: H_kv / D
    qs, dys, outs = (split_heads(t[n], layout, n1, kw["actual_seq_qlen"]) for n in ("query", "dy", "attention_in"))
    ks, vs = (split_heads(t[n], layout, n2, kw["actual_seq_kvlen"]) for n in ("key", "value"))
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
        masked = R.expand_mask(
            q_lens, kv_lens, n1, mask.numpy() != 0, kw["sparse_mode"], kw["pre_tockens"], kw["next_tockens"],
            layout == "TND",
        )  # fmt: skip
        keep = [
            torch.from_numpy(~masked[i, :, :s1, :s2]) for i, (s1, s2) in enumerate(zip(q_lens, kv_lens, strict=True))
        ]
    for i, parts in enumerate(zip(qs, ks, vs, dys, outs, *stats, strict=True)):
        yield (*parts, None if keep is None else keep[i])


def torch_grads(q, k, v, dy, keep, scale):
    """PyTorch's own backward: autograd of eager attention in the inputs' dtype ([N, s, D], GQA by repeat, a row
    with no key gives 0 and passes no gradient)."""
    if not q.shape[1] or not k.shape[1]:  # an empty sequence
        return tuple(torch.zeros_like(x) for x in (q, k, v))
    q, k, v = (x.detach().clone().requires_grad_() for x in (q, k, v))
    g = q.shape[0] // k.shape[0]
    s = (q @ k.repeat_interleave(g, 0).transpose(-1, -2)) * scale
    if keep is not None:
        live = keep.any(-1, keepdim=True)
        s = s.masked_fill(~keep, float("-inf")).masked_fill(~live, 0.0)
    p = torch.softmax(s, dim=-1)
    if keep is not None:
        p = p * live.to(p.dtype)
    return torch.autograd.grad(p @ v.repeat_interleave(g, 0), (q, k, v), dy)


def torch_fusion_attention_grad(t: dict, a: dict) -> tuple:
    """PyTorch's (dq, dk, dv) in the inputs' dtype and layout."""
    layout, scale = str(a["input_layout"]), op_attrs(a)["scale"]
    per = [torch_grads(q, k, v, dy, keep, scale) for q, k, v, dy, _, _, _, keep in sequences(t, a)]
    return tuple(merge_heads([p[i] for p in per], layout) for i in range(3))


def fusion_attention_grad_bounds(t: dict, a: dict) -> tuple:
    """The fp32 evaluation bounds of dq, dk, dv (attention_grad_standard.grad_bounds), float64 in the layout."""
    layout, scale, dtype = str(a["input_layout"]), op_attrs(a)["scale"], t["query"].dtype
    per = [grad_bounds(q, k, v, dy, o, m, s, keep, scale, dtype) for q, k, v, dy, o, m, s, keep in sequences(t, a)]
    return tuple(merge_heads([p[i] for p in per], layout).numpy() for i in range(3))


def check_fusion_attention_grad(t: dict, a: dict, ours, second, golden) -> tuple:
    """dq, dk, dv each by attention_grad_standard.check_cancelling: one precision.Check per output."""
    bounds = fusion_attention_grad_bounds(t, a)
    dtype = t["query"].dtype
    return tuple(
        check_cancelling(y.double().numpy(), g, s.double().numpy(), dtype, b)
        for y, s, g, b in zip(ours, second, golden, bounds, strict=True)
    )


# ---------------------------------------------------------------- verify
def run_fusion_attention_grad(t, a):
    return ascendc_ops.fusion_attention_grad(
        *(t[n] for n in ("query", "key", "value", "dy", "softmax_max", "softmax_sum", "attention_in")),
        int(a["head_num"]), str(a["input_layout"]), t.get("atten_mask"), **op_attrs(a),
    )  # fmt: skip


def golden_fusion_attention_grad(g, a):
    mask = g.get("atten_mask")
    return R.fusion_attention_grad_reference(
        *(g[n] for n in ("query", "key", "value", "dy")),
        int(a["head_num"]), str(a["input_layout"]), None if mask is None else mask != 0, **op_attrs(a),
    )  # fmt: skip


def _query_dims(layout: str, shape) -> tuple[int, int]:
    """(B, S1) of a fixed layout's query shape."""
    return {"BNSD": (shape[0], shape[2]), "BSND": shape[:2], "BSH": shape[:2], "SBH": (shape[1], shape[0])}[layout]


def fuzz_attention_grad(rng, attrs):
    """fusion_attention's fuzzer (fixed layouts), dy and attention_in of query's shape, the stats [B, N, S1, 8]."""
    shapes = fuzz_attention(rng, attrs)
    n1 = int(attrs["head_num"])
    b, s1 = _query_dims(str(attrs["input_layout"]), shapes["query"])
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

    causal = ("causal_mask", [COMPRESSED, COMPRESSED])

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
BENCH: dict = {}  # timed as fusion_attention's bwd and full rows (families/attention.py)
