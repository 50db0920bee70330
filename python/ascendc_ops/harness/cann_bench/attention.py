"""cann-bench's level4 attention tasks (tasks/level4/mha, tasks/level4/gqa) and its TileLang lab's flash_attention
(bench_lab/tilelang_ascend_bench/flash_attention: the same fields, its golden in float32; LAB_TASKS) on our
fusion_attention: the mapping of a case (query [B, S, Nq, D], key/value [B, Skv, Nkv, D], scaleValue, is_causal)
to our op, the verify spec the preset runs it by, and cann-bench's golden semantics as its same-dtype control.

The semantics, from each task's desc.md and golden.py (written here from them): y = softmax(scale * Q K^T) V
per head, q head h reading kv head h // (Nq / Nkv); scale = scaleValue, or 1/sqrt(D) when scaleValue <= 0;
is_causal masks j > i + (Skv - S) (bottom-right aligned: our sparse_mode 3 with the compressed causal mask);
a row whose every key is masked is 0. Our op also writes softmax_max and softmax_sum (fp32), judged too, as
RMSNorm's rstd is."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...ops.attention_args import COMPRESSED_MASK_SIZE, AttentionAttrs, compressed_mask
from ...ops.attention_reference import fusion_attention_reference
from ..families.base import OpSpec
from ..pipeline.calibration import Work, tensor_bytes
from ..verify.case_fields import TensorSpec

OP = "fusion_attention"
TASKS = ("mha", "gqa")
LAB_TASKS = ("flash_attention",)  # outside the model check (data.PRESET_TASKS); golden in float32
LAYOUT = "BSND"
CAUSAL_MODE = 3  # torch_npu's bottom-right causal: j > i + Skv - Sq, cann-bench's is_causal
SEMANTICS = (
    "y = softmax(scale * Q K^T) V per head as cann-bench's golden, BSND, q head h reading kv head h // (Nq/Nkv); "
    "scale = scaleValue, 1/sqrt(D) when scaleValue <= 0; is_causal (bottom-right) -> sparse_mode 3 with the "
    f"compressed {COMPRESSED_MASK_SIZE}x{COMPRESSED_MASK_SIZE} triu(1) mask; rows with no key 0 (none occur: "
    "S <= Skv when causal); ours also writes softmax_max / softmax_sum (fp32), judged too"
)
LAB_SEMANTICS = SEMANTICS + (
    "; TileLang's golden widens q, k, v to float32 and rounds y once, so the control is that (no witness)"
)


def scale_of(case: dict) -> float:
    """cann-bench's scale: scaleValue, or 1/sqrt(D) when it is <= 0 (golden.py)."""
    s = float((case.get("attrs") or {}).get("scaleValue", -1.0))
    return s if s > 0 else 1.0 / math.sqrt(case["input_shape"][0][-1])


def is_causal(case: dict) -> bool:
    return bool((case.get("attrs") or {}).get("is_causal", False))


def is_decode(case: dict) -> bool:
    """cann-bench's decode and MTP cases: a handful of query rows (S 1..4) against a long KV."""
    return case["input_shape"][0][1] <= 4


class CompressedMask:
    """torch_npu's compressed causal mask of sparse_modes 2-4, 1 (masked) above the diagonal (float64 unless asked
    otherwise). An array-like made when asked, so a case holds no data."""

    shape = (COMPRESSED_MASK_SIZE, COMPRESSED_MASK_SIZE)

    def __array__(self, dtype=None, copy=None):
        return compressed_mask().astype(np.float64 if dtype is None else dtype)


def specs(case: dict, tensor, dtype_of) -> tuple[list, list, dict]:
    """(input TensorSpecs, declared output TensorSpecs, attrs) of our op for one mha/gqa case; `tensor` makes an
    input spec as the preset draws cann-bench's data: (name, shape, dtype, [lo, hi], seed offset)."""
    q, k, v = (tuple(s) for s in case["input_shape"][:3])
    dtypes = [dtype_of(d) for d in case["dtype"]]
    ins = [tensor(n, s, dtypes[i], i) for i, (n, s) in enumerate((("query", q), ("key", k), ("value", v)))]
    attrs = {"head_num": q[2], "input_layout": LAYOUT, "scale": scale_of(case)}
    if is_causal(case):
        ins.append(TensorSpec("atten_mask", "uint8", CompressedMask.shape, value=CompressedMask()))
        attrs["sparse_mode"] = CAUSAL_MODE
    return ins, [TensorSpec("attention_out", dtypes[0], q)], attrs


# ---------------------------------------------------------------- the verify spec
def _attrs(a: dict, atten_mask) -> AttentionAttrs:
    """The op's arguments after its tensors for the case's attrs (specs) and mask."""
    return AttentionAttrs(a["head_num"], a["input_layout"], atten_mask, a["scale"], sparse_mode=a.get("sparse_mode", 0))


def _call(t: dict, a: dict):
    return torch.ops.custom.fusion_attention(t["query"], t["key"], t["value"], *_attrs(a, t.get("atten_mask")))


def cann_bench_golden(t: dict, a: dict) -> tuple:
    """cann-bench's golden.py computed in the inputs' dtype (its control, and PyTorch's own computation here):
    scores = Q K^T * scale by torch.matmul in the dtype, masked to -inf, torch's softmax in the dtype, rows with
    no key 0, then P V; softmax_max / softmax_sum (fp32; float64 for float64 inputs) from the same scores.
    One batch at a time."""
    q, k, v = t["query"], t["key"], t["value"]
    b, s, nq, d = q.shape
    skv, nkv = k.shape[1], k.shape[2]
    g = nq // nkv
    masked = None
    if "atten_mask" in t:
        i, j = torch.arange(s).unsqueeze(-1), torch.arange(skv).unsqueeze(0)
        masked = j > i + (skv - s)
    outs, maxes, sums = [], [], []
    for bi in range(b):
        qb = q[bi].permute(1, 0, 2)  # [Nq, S, D]
        kb = k[bi].permute(1, 0, 2).repeat_interleave(g, 0)
        vb = v[bi].permute(1, 0, 2).repeat_interleave(g, 0)
        scores = torch.matmul(qb, kb.transpose(-2, -1)) * a["scale"]
        if masked is not None:
            scores = scores.masked_fill(masked, float("-inf"))
        row_max = scores.max(dim=-1, keepdim=True).values
        empty = torch.isinf(row_max) & (row_max < 0)
        p = torch.where(empty, torch.zeros_like(scores), torch.softmax(scores, dim=-1))
        outs.append(torch.matmul(p, vb).permute(1, 0, 2))
        wide = scores.float() if scores.dtype != torch.float64 else scores  # fp32 statistics, or float64
        m32 = wide.max(dim=-1, keepdim=True).values
        maxes.append(m32.expand(-1, -1, 8))
        sums.append(torch.exp(wide - m32).sum(dim=-1, keepdim=True).expand(-1, -1, 8))
    return torch.stack(outs).contiguous(), torch.stack(maxes).contiguous(), torch.stack(sums).contiguous()


def golden(arrays: dict, a: dict) -> tuple:
    """Our float64 reference (ops/attention_reference.py) with the case's mapping (verify hands it float64
    arrays: the mask back to bool)."""
    mask = arrays.get("atten_mask")
    q, k, v = arrays["query"], arrays["key"], arrays["value"]
    return fusion_attention_reference(q, k, v, *_attrs(a, None if mask is None else mask != 0))


def _no_fuzz(rng, attrs):
    raise ValueError(f"{OP}: the cann-bench preset's spec has no fuzzer (its cases are cann-bench's)")


def builtin_work(task: str, case: dict) -> Work:
    """A lab task's least work by the model check's rule for mha / gqa (pipeline/calibration.py): q, k, v read,
    y of query's shape written, 4 B Nq Sq Skv D FLOPs (Q K^T and P V), halved by is_causal."""
    shapes, dtypes = case["input_shape"], [("float32" if d == "float" else d) for d in case["dtype"]]
    (b, sq, nq, d), skv = shapes[0], shapes[1][1]
    read = sum(tensor_bytes(s, t) for s, t in zip(shapes[:3], dtypes[:3], strict=True))
    out, flops = tensor_bytes(shapes[0], dtypes[0]), 4 * b * nq * sq * skv * d
    return Work(read + out, flops // 2 if is_causal(case) else flops, dtypes[0], True, out)


def float32_golden(t: dict, a: dict, outputs) -> tuple:
    """cann_bench_golden on the inputs widened to float32, each output rounded once to its declared dtype: the
    lab task's golden (and the float32 witness of mha / gqa's same-dtype control)."""
    from ...dtypes import torch_dtype

    wide = {k: v.float() if v.is_floating_point() else v for k, v in t.items()}
    outs = cann_bench_golden(wide, a)
    return tuple(o.to(torch_dtype(s.dtype)) for o, s in zip(outs, outputs, strict=True))


SPEC = OpSpec(run=_call, second=cann_bench_golden, golden=golden, fuzz=_no_fuzz, default_cases=lambda quick: [])
