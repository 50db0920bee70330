"""Sink rows of cann-bench's flash_attention_score_grad_enhance (TND, sink_num > 0) through our fusion_attention_grad.

The task's golden.py (bench_lab/omni-ops_bench/flash_attention_score_grad_enhance; written here from it): with TND,
key and value carry sink_num * 64 more rows in front of the packed sequences (its get_input puts them there), and
every sequence's query rows attend to those rows before their own keys, never masked, with their values; dk and dv
of a sink row sum over every sequence. Our kernel takes no such rows, so the case runs as two launches of our
fusion_attention_grad that split each row's softmax by its columns:

- main: the case without the sink rows (its sequences, sparse mode and mask);
- sink: every query row as one sequence against the sink rows, no mask;

both given the whole softmax's statistics and output (a launch's P = exp(s - max) / sum and D = rowsum(dy * O) are
those of the joined row, so each launch's dS is the joined row's on its columns): dq is the sum of the two, dk and
dv the sink launch's rows then the main's. The forward is our two fusion_attention launches merged by their
statistics (untimed, as the task's other forward inputs). The model times both grad launches and charges the two
steps between them, the statistics' relayout for the sink launch and dq's sum, at the model's least time of a
streaming kernel (calibration.predict). The sink rows are drawn as the rest of key / value (cann-bench's get_input
copies the first rows of the drawn tensors: the same distribution)."""

from __future__ import annotations

import numpy as np
import torch

import ascendc_ops

from ...dtypes import torch_dtype
from ...ops.attention_reference import fusion_attention_grad_reference
from ..families.attention import case_attrs, from_sequences, sequences, torch_grads
from ..families.base import OpSpec
from ..pipeline.calibration import DTYPE_BYTES, Work, predict
from ..verify.attention_grad_standard import check_cancelling, grad_bounds

OP = "fusion_attention_grad_sink_rows"  # the preset's verify op: two launches of fusion_attention_grad
ROWS_PER_SINK = 64  # the golden's sink_len = sink_num * 64 (TND only)
LANES = 8  # softmax_max / softmax_sum's last dim
_LAST_FORWARD: list = [None, None]  # (the case's inputs, the merged forward): one forward a case


def _split(t: dict, a: dict) -> tuple:
    """(main attrs, sink attrs, key / value's sink rows, key / value's own rows) of a case."""
    rows, n = int(a["sink_rows"]), int(a["head_num"])
    main = {k: v for k, v in a.items() if k != "sink_rows"}
    total = t["query"].shape[0]
    sink = {"head_num": n, "input_layout": "TND", "scale": a["scale"], "actual_seq_qlen": [total],
            "actual_seq_kvlen": [rows]}  # fmt: skip
    kv = (t["key"][:rows], t["value"][:rows]), (t["key"][rows:], t["value"][rows:])
    return main, sink, *kv


def rows_of(stats: torch.Tensor, ends, n: int) -> torch.Tensor:
    """TND statistics (each sequence an [N, s, 8] block, flat) as [T, N] (lane 0)."""
    flat, parts, start = stats.reshape(-1, LANES)[:, 0], [], 0
    for end in ends:
        parts.append(flat[start * n : end * n].reshape(n, end - start).T)
        start = end
    return torch.cat(parts)


def blocks_of(rows: torch.Tensor, ends, n: int) -> torch.Tensor:
    """rows_of's inverse: [T, N] as TND statistics [T, N, 8], every lane the same."""
    parts, start = [], 0
    for end in ends:
        parts.append(rows[start:end].T.reshape(-1))
        start = end
    return torch.cat(parts).reshape(-1, n, 1).expand(-1, n, LANES).contiguous()


def _ends(a: dict) -> list[int]:
    return [int(e) for e in a["actual_seq_qlen"]]


def merged_forward(q, k, v, mask, a: dict) -> tuple:
    """Our forward of a case with sink rows: the two launches' outputs merged by their statistics in float64,
    max m = max(m1, m2), weights w_i = l_i exp(m_i - m), o = (w1 o1 + w2 o2) / (w1 + w2), sum w1 + w2."""
    main, sink, (k_s, v_s), (k_m, v_m) = _split({"query": q, "key": k, "value": v}, a)
    n, ends = int(a["head_num"]), _ends(a)
    o1, m1, l1 = ascendc_ops.fusion_attention(q, k_m, v_m, *case_attrs(main, mask))
    o2, m2, l2 = ascendc_ops.fusion_attention(q, k_s, v_s, *case_attrs(sink))
    m1, l1 = (rows_of(x.double(), ends, n) for x in (m1, l1))
    m2, l2 = (rows_of(x.double(), [q.shape[0]], n) for x in (m2, l2))
    m = torch.maximum(m1, m2)
    w1, w2 = l1 * torch.exp(m1 - m), l2 * torch.exp(m2 - m)
    o = (w1[..., None] * o1.double() + w2[..., None] * o2.double()) / (w1 + w2)[..., None]
    return o, blocks_of(m, ends, n), blocks_of(w1 + w2, ends, n)


def _forward(attrs, ctx):
    if _LAST_FORWARD[0] is not ctx.made:
        dtype = torch_dtype(ctx.dtypes["query"])
        q, k, v = (torch.from_numpy(ctx.made[n]).to(dtype) for n in ("query", "key", "value"))
        mask = ctx.made.get("atten_mask")
        mask = None if mask is None else torch.from_numpy(mask != 0)
        _LAST_FORWARD[:] = [ctx.made, tuple(x.numpy() for x in merged_forward(q, k, v, mask, attrs))]
    return _LAST_FORWARD[1]


def _forward_output(index: int):
    return lambda shape, attrs, ctx=None: _forward(attrs, ctx)[index]


VALUES = {
    f"forward_{name}": _forward_output(i) for i, name in enumerate(("attention_out", "softmax_max", "softmax_sum"))
}


def run(t: dict, a: dict) -> tuple:
    """The two grad launches (module docstring); also on meta tensors."""
    main, sink, (k_s, v_s), (k_m, v_m) = _split(t, a)
    q, dy, o, n = t["query"], t["dy"], t["attention_in"], int(a["head_num"])
    m, s = t["softmax_max"], t["softmax_sum"]
    grad = torch.ops.custom.fusion_attention_grad
    dq1, dk1, dv1 = grad(q, k_m, v_m, dy, m, s, o, *case_attrs(main, t.get("atten_mask")).grad_args())[:3]
    m2, s2 = (blocks_of(rows_of(x, _ends(a), n), [q.shape[0]], n) for x in (m, s))  # one sequence's layout
    dq2, dk2, dv2 = grad(q, k_s, v_s, dy, m2, s2, o, *case_attrs(sink).grad_args())[:3]
    return (dq1.float() + dq2.float()).to(q.dtype), torch.cat([dk2, dk1]), torch.cat([dv2, dv1])


def between_launches_us(t: dict, a: dict, plat) -> float:
    """The model's time of the steps between the grad launches: the statistics' relayout (two fp32 [T, N, 8] read
    and written) and dq's sum (two dq read, one written), each a streaming kernel at its least time."""
    stats = 2 * t["softmax_max"].numel() * 4
    dtype = str(t["query"].dtype).removeprefix("torch.")
    dq = t["query"].numel() * DTYPE_BYTES[dtype]
    relayout = predict(Work(2 * stats, 0, "float32", False, stats), plat)
    return relayout + predict(Work(3 * dq, 0, dtype, False, dq), plat)


# ---------------------------------------------------------------- the controls: per sequence, sink rows joined
def joined_sequences(t: dict, a: dict):
    """Per sequence: (q, k, v, dy, o, m, s, keep) as families.attention.sequences gives them, k / v / keep with
    the sink rows' columns in front (keep True there)."""
    main, _, (k_s, v_s), (k_m, v_m) = _split(t, a)
    heads = [x.permute(1, 0, 2) for x in (k_s, v_s)]  # [Nkv, rows, D]
    for q, k, v, dy, o, m, s, keep in sequences({**t, "key": k_m, "value": v_m}, main):
        if keep is not None:
            keep = torch.cat([keep.new_ones((*keep.shape[:-1], k_s.shape[0])), keep], -1)
        yield q, torch.cat([heads[0], k], 1), torch.cat([heads[1], v], 1), dy, o, m, s, keep


def fold(per: list, rows: int) -> tuple:
    """Per-sequence (dq, dk, dv) with the sink rows' columns in front -> the case's (dq, dk, dv): a sink row's
    gradient the sum over the sequences."""
    dq = from_sequences([p[0] for p in per], "TND")
    out = [dq]
    for i in (1, 2):
        sink = sum(p[i][:, :rows] for p in per).permute(1, 0, 2)
        out.append(torch.cat([sink, from_sequences([p[i][:, rows:] for p in per], "TND")]))
    return tuple(out)


def torch_backward(t: dict, a: dict) -> tuple:
    """PyTorch's autograd of eager attention per sequence over the joined keys, in the inputs' dtype."""
    scale = float(a["scale"])
    per = [torch_grads(q, k, v, dy, keep, scale) for q, k, v, dy, _, _, _, keep in joined_sequences(t, a)]
    return fold(per, int(a["sink_rows"]))


def golden(g: dict, a: dict) -> tuple:
    """ops/attention_reference.py's float64 gradients per sequence over the joined keys (BNSD, the sequence's
    own mask with the sink columns kept), folded."""
    t = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in g.items()}
    per = []
    for q, k, v, dy, _, _, _, keep in joined_sequences(t, a):
        mask = None if keep is None else (~keep).numpy()[None]
        attrs = case_attrs({"head_num": q.shape[0], "input_layout": "BNSD", "scale": a["scale"]}, mask)
        grads = fusion_attention_grad_reference(*(x.numpy()[None] for x in (q, k, v, dy)), *attrs)
        per.append(tuple(torch.from_numpy(np.asarray(x)[0]) for x in grads))
    return tuple(x.numpy() for x in fold(per, int(a["sink_rows"])))


def check(t: dict, a: dict, ours, second, gold) -> tuple:
    """dq, dk, dv by attention_grad_standard.check_cancelling with the kernel's bounds per sequence, folded (a sink
    row's bound the sum of its sequences')."""
    dtype, scale = t["query"].dtype, float(a["scale"])
    per = [
        tuple(torch.from_numpy(np.asarray(b)) for b in grad_bounds(q, k, v, dy, o, m, s, keep, scale, dtype))
        for q, k, v, dy, o, m, s, keep in joined_sequences(t, a)
    ]
    bounds = fold(per, int(a["sink_rows"]))
    return tuple(
        check_cancelling(y.double().numpy(), g, s.double().numpy(), dtype, b.numpy())
        for y, s, g, b in zip(ours, second, gold, bounds, strict=True)
    )


def _no_fuzz(rng, attrs):
    raise ValueError(f"{OP}: the cann-bench preset's spec has no fuzzer (its cases are cann-bench's)")


SPEC = OpSpec(run, torch_backward, golden, _no_fuzz, default_cases=lambda quick: [], values=VALUES, check=check)
