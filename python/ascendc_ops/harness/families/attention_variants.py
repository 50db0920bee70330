"""`bench` / `estimate` rows of fusion_attention with what training adds to the plain causal call: attention dropout
with an explicit mask (keep_prob 0.9, torch_npu's bit packing) and gpt-oss's per-head sink logits. Each against HF's
eager attention doing the same (the dropout multiplies the probabilities by keep / keep_prob, as nn.Dropout does
with that keep matrix; the sink is one more softmax column dropped after, as transformers' gpt_oss eager attention),
so `ascendc-ops estimate fusion_attention_dropout --mode bwd` reproduces docs/attention.md's figures."""

from __future__ import annotations

import torch

import ascendc_ops

from ...ops.attention_args import pack_dropout_mask
from . import attention as A
from .base import Moved, OpBench, per_pass

KEEP_PROB = 0.9  # docs/attention.md's dropout figures


def dropout_inputs(shape, dtype, gen):
    """attention_inputs, then torch_npu's packed mask (for ours) and the same keep matrix as the eager step's
    factors keep / keep_prob [B, N, S, S] (for PyTorch's step), drawn with the same generator."""
    q, k, v, mask = A.attention_inputs(shape, dtype, gen)
    b, s, n, _ = q.shape
    keep = torch.rand(b, n, s, s, generator=gen) < KEEP_PROB
    return q, k, v, mask, torch.from_numpy(pack_dropout_mask(keep)), (keep / KEEP_PROB).to(dtype)


def dropout_ours(q, k, v, mask, drop, z):
    """fusion_attention causal as attention_ours, with dropout at KEEP_PROB by the packed mask."""
    scale = 1.0 / q.shape[-1] ** 0.5
    return ascendc_ops.fusion_attention(
        q, k, v, q.shape[2], "BSND", mask, scale, sparse_mode=3, keep_prob=KEEP_PROB, drop_mask=drop
    )[0]


def dropout_eager(q, k, v, mask, drop, z):
    """HF's eager attention with its dropout on the probabilities: P * keep / keep_prob before P V."""
    w, vt = A.eager_scores(q, k, v)
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype) * z
    return torch.matmul(w, vt).transpose(1, 2)


def sink_inputs(shape, dtype, gen):
    """attention_inputs and one fp32 sink logit a query head, N(0, 1)."""
    q, k, v, mask = A.attention_inputs(shape, dtype, gen)
    return q, k, v, mask, torch.randn(q.shape[2], generator=gen)


def sink_ours(q, k, v, mask, sink):
    scale = 1.0 / q.shape[-1] ** 0.5
    return ascendc_ops.fusion_attention(q, k, v, q.shape[2], "BSND", mask, scale, sparse_mode=3, sink=sink)[0]


def sink_eager(q, k, v, mask, sink):
    """transformers' gpt_oss eager attention: the sink one more column of the scores, the softmax over all, the
    column dropped before P V."""
    w, vt = A.eager_scores(q, k, v)
    b, n, s, _ = w.shape
    w = torch.cat([w, sink.to(w.dtype).reshape(1, n, 1, 1).expand(b, n, s, 1)], dim=-1)
    w = w - w.max(dim=-1, keepdim=True).values
    p = torch.softmax(w, dim=-1, dtype=w.dtype)[..., :-1]
    return torch.matmul(p, vt).transpose(1, 2)


def variant_bytes(inputs, out, pass_) -> Moved:
    """attention_bytes, plus what the variant reads more: the packed mask once a pass (the backward reads it again),
    or the sink logits (the backward writes their gradient)."""
    base = A.attention_bytes(inputs[:4], out, pass_)
    more = inputs[4].nbytes
    extra = per_pass(Moved(more, 0), Moved(more, 0 if inputs[4].dtype == torch.uint8 else more))[pass_]
    return Moved(base.read + extra.read, base.written + extra.written)


def _bench(ours, step, inputs) -> OpBench:
    return OpBench(
        ours,
        step,
        inputs,
        A.check_attention_shape,
        lambda m, seq: [(1, seq, m.heads, m.kv_heads, m.head_dim)],
        variant_bytes,
        "B,S,N,NKV,D",
        (A.DEFAULT_SHAPE,),
        A.BENCH_TARGETS,
        flops=A.attention_flops,
        autograd_op=A.AUTOGRAD_OP,
    )


VERIFY: dict = {}  # both are fusion_attention, verified as its own op (its default cases: dropout, sink)
BENCH: dict[str, OpBench] = {
    "fusion_attention_dropout": _bench(dropout_ours, dropout_eager, dropout_inputs),
    "fusion_attention_sink": _bench(sink_ours, sink_eager, sink_inputs),
}
