"""cann-bench's attention backward task on our fusion_attention_grad (spec only: no 910B2 time): kernel_bench's
level5 flash_attention_backward (bench_lab/kernel_bench/level5/flash_attention_backward: query, key, value, dy
[B, N, S, D] BNSD, scaleValue, is_causal -> dq, dk, dv). The task takes no forward statistics: it recomputes P and
O itself (desc.md), so the preset's op (BWD_OP) runs our forward for the statistics and output, then our backward,
and the model times both launches. The semantics are the task's desc.md and golden.py (written here from them):
FlashAttention-2's backward of softmax(scale * Q K^T (+ causal j > i)) V per head, computed in float32 and
rounded once to the dtype, which is the control."""

from __future__ import annotations

import torch

from ...ops.attention_args import AttentionAttrs
from ...ops.attention_reference import fusion_attention_grad_reference
from ..families.attention import torch_grads
from ..families.base import OpSpec
from ..pipeline.calibration import Work, tensor_bytes
from ..verify.case_fields import TensorSpec
from . import attention as A

TASK = "flash_attention_backward"
BWD_OP = "fusion_attention_backward"  # the preset's verify op: our forward, then fusion_attention_grad
LAYOUT = "BNSD"
GEMMS = 5  # the task's least cube work (desc.md): S = Q K^T, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q
SEMANTICS = (
    "dq, dk, dv of y = softmax(scaleValue * Q K^T) V per head (BNSD; is_causal masks j > i, S = Skv: our "
    "sparse_mode 3 with the compressed mask) as cann-bench's golden (FA2's formulas in float32, rounded once); "
    "the task recomputes the forward, so ours runs fusion_attention for softmax_max / softmax_sum / attention_out, "
    "then fusion_attention_grad, both launches timed"
)


def specs(case: dict, tensor, dtype_of) -> tuple[list, list, dict]:
    """(input TensorSpecs, declared output TensorSpecs, attrs) of one case; `tensor` makes an input as the preset
    draws cann-bench's data: (name, shape, dtype, seed offset)."""
    shapes, dtypes = [tuple(s) for s in case["input_shape"]], [dtype_of(d) for d in case["dtype"]]
    names = ("query", "key", "value", "dy")
    ins = [tensor(n, shapes[i], dtypes[i], i) for i, n in enumerate(names)]
    attrs = {"head_num": shapes[0][1], "input_layout": LAYOUT, "scale": A.scale_of(case)}  # D last in BNSD too
    if A.is_causal(case):
        ins.append(TensorSpec("atten_mask", "uint8", A.CompressedMask.shape, value=A.CompressedMask()))
        attrs["sparse_mode"] = A.CAUSAL_MODE  # S = Skv: bottom-right is top-left
    outs = [TensorSpec(n, dtypes[0], shapes[i]) for i, n in enumerate(("dq", "dk", "dv"))]
    return ins, outs, attrs


def _attrs(a: dict, atten_mask) -> AttentionAttrs:
    return AttentionAttrs(a["head_num"], a["input_layout"], atten_mask, a["scale"], sparse_mode=a.get("sparse_mode", 0))


def run(t: dict, a: dict) -> tuple:
    """Our forward (its statistics and output), then our backward: the task's recompute and its gradients."""
    attrs = _attrs(a, t.get("atten_mask"))
    q, k, v = t["query"], t["key"], t["value"]
    out, m, s = torch.ops.custom.fusion_attention(q, k, v, *attrs)
    return tuple(torch.ops.custom.fusion_attention_grad(q, k, v, t["dy"], m, s, out, *attrs.grad_args())[:3])


def torch_backward(t: dict, a: dict) -> tuple:
    """PyTorch's autograd of eager attention per batch in the inputs' dtype ([N, S, D] each): cann-bench's golden
    once the preset's control widens the inputs to float32."""
    q = t["query"]
    s = q.shape[2]
    keep = None
    if "atten_mask" in t:  # j > i masked (S = Skv)
        keep = ~torch.triu(torch.ones(s, s, dtype=torch.bool), 1)[None]
    per = [torch_grads(q[b], t["key"][b], t["value"][b], t["dy"][b], keep, a["scale"]) for b in range(q.shape[0])]
    return tuple(torch.stack([p[i] for p in per]) for i in range(3))


def golden(g: dict, a: dict) -> tuple:
    """ops/attention_reference.py's float64 gradients for the case's mapping (the mask back to bool)."""
    mask = g.get("atten_mask")
    return fusion_attention_grad_reference(
        *(g[n] for n in ("query", "key", "value", "dy")), *_attrs(a, None if mask is None else mask != 0)
    )


def _no_fuzz(rng, attrs):
    raise ValueError(f"{BWD_OP}: the cann-bench preset's spec has no fuzzer (its cases are cann-bench's)")


SPEC = OpSpec(run, torch_backward, golden, _no_fuzz, default_cases=lambda quick: [])


def builtin_work(task: str, case: dict) -> Work:
    """The least work of a kernel for the task: q, k, v, dy read and dq, dk, dv written once, the five GEMMs'
    2 B N S S D FLOPs each (desc.md), halved by is_causal."""
    shapes, dtypes = case["input_shape"], [("float32" if d == "float" else d) for d in case["dtype"]]
    b, n, s, d = shapes[0]
    read = sum(tensor_bytes(x, t) for x, t in zip(shapes[:4], dtypes[:4], strict=True))
    out = sum(tensor_bytes(x, dtypes[0]) for x in shapes[:3])
    flops = GEMMS * 2 * b * n * s * s * d
    return Work(read + out, flops // 2 if A.is_causal(case) else flops, dtypes[0], True, out)
