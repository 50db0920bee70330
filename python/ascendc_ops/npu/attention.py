"""torch_npu's ``npu_fusion_attention`` / ``_grad`` and their ``_v2`` / ``_grad_v2`` and ``_v3`` / ``_grad_v3``
on our attention family's fusion_attention and fusion_attention_grad kernels.

The signatures and tuples follow Ascend/op-plugin (op_plugin_functions.yaml, derivatives.yaml and
op_plugin/ops/opapi/FlashAttentionKernelNpuOpApi.cpp, FlashAttentionV2KernelNpuOpApi.cpp). The forward returns
(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels); softmax_out is an empty tensor of
query's dtype there too. With keep_prob == 1 no dropout mask is drawn: op-plugin then returns seed and offset as
given and numels is the [B, N, S1, S2] mask's element count (TND: N times the sum of each sequence's S1 * S2).
v3 returns no numels and seed / offset as tensors. The grads return (dq, dk, dv, dpse, dsink), v2's
(dq, dk, dv, dpse, dq_rope, dk_rope, dsink); without pse, query_rope, key_rope op-plugin leaves those undefined
(None in Python), without sink dsink is an empty fp32 tensor. docs/attention.md states the semantics.
"""

from __future__ import annotations

import contextlib

import torch

from ..ops.attention import (
    fusion_attention as _fusion_attention,
    fusion_attention_grad as _fusion_attention_grad,
)
from ..ops.attention_args import TOCKENS_MAX, batch_and_seq, seq_lengths
from .errors import fail

OP = "npu_fusion_attention"
GRAD_OP = "npu_fusion_attention_grad"
V2_OP, GRAD_V2_OP, V3_OP, GRAD_V3_OP = (f"{op}_{v}" for v in ("v2", "v3") for op in (OP, GRAD_OP))


def _refuse(kind, msg: str, op: str = OP):
    fail(kind, op, msg)


def _lens(name: str, cumulative, op: str = OP) -> list[int]:
    """Per-sequence lengths of torch_npu's cumulative ends (trailing zeros drop batches)."""
    if cumulative is None:
        _refuse(ValueError, f"input_layout 'TND' needs {name} (cumulative sequence ends), got None", op)
    return [int(x) for x in seq_lengths(cumulative, name)]


def _refuse_unsupported(op: str, pse, padding_mask, prefix, sparse_mode, keep_prob, dropout_mask=None) -> None:
    """What neither kernel takes, refused by name (both ops take the same arguments for it): keep_prob < 1 goes
    only to the forward with an explicit dropout_mask (the grads take none: op-plugin redraws it from seed / offset)."""
    for name, given in (("pse", pse), ("padding_mask", padding_mask), ("prefix", prefix)):
        if given is not None:
            _refuse(
                NotImplementedError, f"{name} is not supported (pass {name}=None), got a {type(given).__name__}", op
            )
    if int(sparse_mode) in (5, 6, 7, 8):
        _refuse(NotImplementedError, f"sparse_mode {sparse_mode} (prefix / split across cards) is not supported", op)
    if float(keep_prob) != 1.0 and dropout_mask is None:
        _refuse(
            NotImplementedError,
            f"keep_prob {keep_prob} < 1 needs an explicit dropout_mask (uint8, a bit a score element, "
            "docs/attention.md): torch_npu draws its own from the NPU's generator, which this kernel cannot reproduce",
            op,
        )


def _layouts(op: str, input_layout, softmax_layout) -> str:
    """input_layout in capitals, once softmax_layout ('' or 'TND', the latter only with TND inputs) is checked."""
    layout = str(input_layout).upper()
    if softmax_layout not in ("", "TND"):
        _refuse(ValueError, f"softmax_layout must be '' or 'TND', got {softmax_layout!r}", op)
    if softmax_layout == "TND" and layout != "TND":
        _refuse(ValueError, f"softmax_layout 'TND' needs input_layout 'TND', got {input_layout!r}", op)
    return layout


def _int_list(values):
    return None if values is None else [int(x) for x in values]


def _numels(query, key, head_num: int, layout: str, qlen, kvlen) -> int:
    """op-plugin's dropout-mask element count: B * N * S1 * S2, or N * sum(s1_b * s2_b) for TND."""
    if layout == "TND":
        q_lens, kv_lens = _lens("actual_seq_qlen", qlen), _lens("actual_seq_kvlen", kvlen)
        return int(query.shape[1]) * sum(a * b for a, b in zip(q_lens, kv_lens, strict=True))
    (b, s1), (_, s2) = batch_and_seq(layout, query.shape), batch_and_seq(layout, key.shape)
    return int(b) * int(head_num) * int(s1) * int(s2)


def _stats_tnd(stat: torch.Tensor, qlen, head_num: int) -> torch.Tensor:
    """The default TND stats (each sequence's [N, s_b, 8] block in order, docs/attention.md) as a true [T, N, 8]."""
    flat, parts, start = stat.reshape(-1), [], 0
    for s in _lens("actual_seq_qlen", qlen):
        n = s * head_num * 8
        parts.append(flat[start : start + n].reshape(head_num, s, 8).transpose(0, 1))
        start += n
    return torch.cat([*parts, stat[start // (head_num * 8) :]]).contiguous()


def _stats_from_tnd(stat: torch.Tensor, qlen, head_num: int) -> torch.Tensor:
    """_stats_tnd's inverse: a true [T, N, 8] back to the kernel's layout (each sequence's [N, s_b, 8] block)."""
    parts, start = [], 0
    for s in _lens("actual_seq_qlen", qlen, GRAD_OP):
        parts.append(stat[start : start + s].transpose(0, 1).reshape(-1))
        start += s
    return torch.cat([*parts, stat[start:].reshape(-1)]).reshape(stat.shape)


def _refuse_v2(op: str, pse_type, q_start_idx, kv_start_idx) -> None:
    """v2's own arguments: pse_type orders how pse is applied (pse is refused), so any valid value goes;
    q_start_idx / kv_start_idx place a split sequence in the whole one, so only the unsplit start 0 goes."""
    if int(pse_type) not in (0, 1, 2, 3):
        _refuse(ValueError, f"pse_type must be 0, 1, 2 or 3, got {pse_type}", op)
    for name, idx in (("q_start_idx", q_start_idx), ("kv_start_idx", kv_start_idx)):
        if idx is not None and any(int(x) for x in idx):
            _refuse(NotImplementedError, f"{name} other than 0 (a split sequence's global start) is not supported", op)


def _forward(op, query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob,
             pre_tokens, next_tokens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, softmax_layout, sink,
             dropout_mask=None, rope=None):  # fmt: skip
    """(attention_out, softmax_max, softmax_sum, softmax_out, numels), shared by every forward version."""
    _refuse_unsupported(op, pse, padding_mask, prefix, sparse_mode, keep_prob, dropout_mask)
    layout = _layouts(op, input_layout, softmax_layout)
    qlen, kvlen = _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen)
    dropout = float(keep_prob) != 1.0  # CANN reads the mask only then
    with _joined_rope(op, rope):
        out, smax, ssum = _fusion_attention(
            query, key, value, int(head_num), layout, atten_mask, float(scale), int(pre_tokens), int(next_tokens),
            qlen, kvlen, int(sparse_mode), keep_prob=float(keep_prob), sink=sink,
            drop_mask=dropout_mask if dropout else None,
        )  # fmt: skip
    if softmax_layout == "TND":
        smax, ssum = _stats_tnd(smax, qlen, int(head_num)), _stats_tnd(ssum, qlen, int(head_num))
    return out, smax, ssum, query.new_empty(0), _numels(query, key, int(head_num), layout, qlen, kvlen)


def _backward(op, query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask, softmax_max,
              softmax_sum, attention_in, scale_value, keep_prob, pre_tokens, next_tokens, prefix, actual_seq_qlen,
              actual_seq_kvlen, sparse_mode, softmax_layout, sink, rope=None):  # fmt: skip
    """(dq, dk, dv, dsink), shared by every grad version: dsink the kernel's (from the forward's statistics), an empty
    fp32 tensor without sink."""
    _refuse_unsupported(op, pse, padding_mask, prefix, sparse_mode, keep_prob)
    if float(keep_prob) != 1.0:  # torch_npu's grads take no mask
        _refuse(
            NotImplementedError,
            f"keep_prob {keep_prob} < 1: op-plugin redraws the forward's dropout mask from seed / offset on the NPU, "
            "which this kernel cannot; differentiate npu_fusion_attention instead (its autograd applies the "
            "forward's dropout_mask)",
            op,
        )
    layout = _layouts(op, input_layout, softmax_layout)
    given = {"softmax_max": softmax_max, "softmax_sum": softmax_sum, "attention_in": attention_in}
    missing = [name for name, t in given.items() if t is None]
    if missing:
        _refuse(
            ValueError,
            f"needs the forward's softmax_max, softmax_sum and attention_in (attention_out), got None for "
            f"{', '.join(missing)}",
            op,
        )
    qlen, kvlen = _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen)
    if softmax_layout == "TND":
        softmax_max = _stats_from_tnd(softmax_max, qlen, int(head_num))
        softmax_sum = _stats_from_tnd(softmax_sum, qlen, int(head_num))
    with _joined_rope(op, rope):
        return _fusion_attention_grad(
            query, key, value, dy, softmax_max, softmax_sum, attention_in, int(head_num), layout, atten_mask,
            float(scale_value), int(pre_tokens), int(next_tokens), qlen, kvlen, int(sparse_mode), sink=sink,
        )  # fmt: skip


def npu_fusion_attention(
    query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
    keep_prob=1.0, pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, inner_precise=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None, dropout_mask=None, seed=0, offset=0,
):  # fmt: skip
    """(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels) as torch_npu returns them,
    differentiable in query, key and value (custom::fusion_attention's autograd; not yet with dropout). Refused by
    name: pse, padding_mask, prefix and sparse modes 5-8, keep_prob < 1 without dropout_mask (torch_npu draws its
    dropout mask from the NPU generator, which we cannot reproduce). keep_prob < 1 with dropout_mask (uint8, one bit
    a score element of [B, N, S1, S2]; TND: [N, s1_b, s2_b] per sequence in order): out = (P * keep / keep_prob) V.
    sink (fp32 [N1]) joins every row's softmax as one more logit with no value (gpt-oss's sinks,
    docs/attention.md). With keep_prob 1 no
    mask is drawn or read: dropout_mask is unused, seed and offset come back as given (op-plugin's draw would
    overwrite them), gen_mask_parallel / sync order a mask stream never used; inner_precise changes nothing here
    (fully masked rows always give 0, docs/attention.md)."""
    out, smax, ssum, softmax_out, numels = _forward(
        OP, query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob, pre_tockens,
        next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, softmax_layout, sink, dropout_mask,
    )  # fmt: skip
    return out, smax, ssum, softmax_out, int(seed), int(offset), numels


def npu_fusion_attention_grad(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0, keep_prob=1.0,
    pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):  # fmt: skip
    """(dq, dk, dv, dpse, dsink) as torch_npu returns them, from npu_fusion_attention's softmax_max, softmax_sum
    and attention_out (attention_in), which are required. Refused by name as in npu_fusion_attention: pse,
    padding_mask, prefix and sparse modes 5-8; keep_prob < 1 too (op-plugin redraws the mask from seed / offset:
    npu_fusion_attention's autograd is the way to its gradients), so seed / offset / numels (the dropout mask's
    draw), gen_mask_parallel and sync have nothing to act on. softmax_in is not read (CANN's kernel takes no
    softmax; torch_npu's autograd passes the forward's empty softmax_out); inner_precise changes nothing here.
    softmax_layout='TND' takes the statistics as a true [T, N, 8], as npu_fusion_attention returns them then.
    Without pse op-plugin returns an undefined dpse (None); dsink is d loss / d sink (fp32 [N1]), without sink an
    empty fp32 tensor."""
    dq, dk, dv, dsink = _backward(
        GRAD_OP, query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask, softmax_max,
        softmax_sum, attention_in, scale_value, keep_prob, pre_tockens, next_tockens, prefix, actual_seq_qlen,
        actual_seq_kvlen, sparse_mode, softmax_layout, sink,
    )  # fmt: skip
    return dq, dk, dv, None, dsink


# ---- v2: pre_tokens spelled so, query / key with a rope part, pse_type, start indices ----
def _heads_last(x, heads: int, layout: str):
    """BSH / SBH's [.., N * d] as [.., N, d]; the other layouts already end in d."""
    return x.unflatten(-1, (heads, -1)) if layout in ("BSH", "SBH") else x


def _flat(x, layout: str):
    return x.flatten(-2) if layout in ("BSH", "SBH") else x


def _heads(query, key, head_num, layout: str) -> tuple[int, int]:
    """(query's heads, key's heads); only BSH / SBH need them: Nk = Hk / D, D = Hq / head_num (docs/attention.md)."""
    n = int(head_num)
    return (n, int(key.shape[-1]) // (int(query.shape[-1]) // n)) if layout in ("BSH", "SBH") else (n, n)


def _with_rope(op, query, key, query_rope, key_rope, head_num, input_layout):
    """query and key with their rope parts after each head's D: scale * (q k^T + q_rope k_rope^T) is
    scale * [q, q_rope] [k, k_rope]^T (hicann/ops-transformer attention/flash_attention_score/docs/
    aclnnFlashAttentionVarLenScoreV3.md), so the kernel takes the joined head dim D + Dr."""
    if query_rope is None and key_rope is None:
        return query, key
    if query_rope is None or key_rope is None:
        given = "query_rope" if key_rope is None else "key_rope"
        _refuse(ValueError, f"query_rope and key_rope go together, got only {given}", op)
    layout = str(input_layout).upper()
    n, nk = _heads(query, key, head_num, layout)
    return _join(query, query_rope, n, layout), _join(key, key_rope, nk, layout)


def _join(x, rope, heads: int, layout: str):
    return _flat(torch.cat((_heads_last(x, heads, layout), _heads_last(rope, heads, layout)), -1), layout)


def _split_rope(d_joined, x, heads: int, layout: str):
    """(d x, d rope) of a joined input's gradient: each head's first D columns, then its Dr."""
    d = _heads_last(x, heads, layout).shape[-1]
    whole = _heads_last(d_joined, heads, layout)
    return tuple(_flat(part, layout).contiguous() for part in whole.split([d, whole.shape[-1] - d], -1))


@contextlib.contextmanager
def _joined_rope(op: str, rope):
    """The kernel's checks on a joined head dim (too large for its blocks, say) name query_rope / key_rope too."""
    try:
        yield
    except ValueError as e:
        if rope is None:
            raise
        _refuse(ValueError, f"with query_rope / key_rope joined to each head's D: {e}", op)


def npu_fusion_attention_v2(
    query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, query_rope=None,
    key_rope=None, scale=1.0, keep_prob=1.0, pre_tokens=TOCKENS_MAX, next_tokens=TOCKENS_MAX, inner_precise=0,
    prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="", sink=None, dropout_mask=None, seed=0,
    offset=0,
):  # fmt: skip
    """npu_fusion_attention's seven-tuple, pre_tokens / next_tokens spelled so; differentiable in query, key, value
    and the rope parts. query_rope / key_rope (together) join each head's D, in every layout (op-plugin on the 910B
    takes them with TND only); pse_type goes with pse, which is refused, so any of 0-3 is accepted;
    q_start_idx / kv_start_idx other than 0 are refused by name, the rest as in npu_fusion_attention."""
    _refuse_v2(V2_OP, pse_type, q_start_idx, kv_start_idx)
    q, k = _with_rope(V2_OP, query, key, query_rope, key_rope, head_num, input_layout)
    out, smax, ssum, softmax_out, numels = _forward(
        V2_OP, q, k, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob, pre_tokens,
        next_tokens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, softmax_layout, sink, dropout_mask,
        query_rope,
    )  # fmt: skip
    return out, smax, ssum, softmax_out, int(seed), int(offset), numels


def npu_fusion_attention_grad_v2(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, query_rope=None, key_rope=None,
    scale_value=1.0, keep_prob=1.0, pre_tokens=TOCKENS_MAX, next_tokens=TOCKENS_MAX, inner_precise=0, seed=0,
    offset=0, numels=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
    gen_mask_parallel=True, sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None, softmax_layout="",
    sink=None,
):  # fmt: skip
    """(dq, dk, dv, dpse, dq_rope, dk_rope, dsink) as torch_npu returns them: dpse, and dq_rope / dk_rope without
    the rope parts, undefined (None); dsink an empty fp32 tensor without sink. Arguments as in
    npu_fusion_attention_v2 and npu_fusion_attention_grad."""
    _refuse_v2(GRAD_V2_OP, pse_type, q_start_idx, kv_start_idx)
    q, k = _with_rope(GRAD_V2_OP, query, key, query_rope, key_rope, head_num, input_layout)
    dq, dk, dv, dsink = _backward(
        GRAD_V2_OP, q, k, value, dy, head_num, input_layout, pse, padding_mask, atten_mask, softmax_max,
        softmax_sum, attention_in, scale_value, keep_prob, pre_tokens, next_tokens, prefix, actual_seq_qlen,
        actual_seq_kvlen, sparse_mode, softmax_layout, sink, query_rope,
    )  # fmt: skip
    dq_rope = dk_rope = None
    if query_rope is not None:
        layout = str(input_layout).upper()
        n, nk = _heads(query, key, head_num, layout)
        (dq, dq_rope), (dk, dk_rope) = _split_rope(dq, query, n, layout), _split_rope(dk, key, nk, layout)
    return dq, dk, dv, None, dq_rope, dk_rope, dsink


# ---- v3: actual_seq_qlen / actual_seq_kvlen as tensors, seed / offset as tensors ----
def npu_fusion_attention_v3(
    query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
    keep_prob=1.0, pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, inner_precise=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):  # fmt: skip
    """(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset) as torch_npu returns them: no numels;
    seed and offset are int64 [1] CPU tensors, which op-plugin leaves unset without dropout (zeros here).
    Differentiable in query, key and value; arguments as in npu_fusion_attention."""
    out, smax, ssum, softmax_out, _ = _forward(
        V3_OP, query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale, keep_prob,
        pre_tockens, next_tockens, prefix, actual_seq_qlen, actual_seq_kvlen, sparse_mode, softmax_layout, sink,
    )  # fmt: skip
    return out, smax, ssum, softmax_out, torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)


def npu_fusion_attention_grad_v3(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0, keep_prob=1.0,
    pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, inner_precise=0, seed=None, offset=None, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):  # fmt: skip
    """(dq, dk, dv, dpse, dsink) as npu_fusion_attention_grad returns them; seed / offset are npu_fusion_attention_v3's
    tensors (the dropout draw, unused with keep_prob 1) and the sequence ends may be tensors."""
    dq, dk, dv, dsink = _backward(
        GRAD_V3_OP, query, key, value, dy, head_num, input_layout, pse, padding_mask, atten_mask, softmax_max,
        softmax_sum, attention_in, scale_value, keep_prob, pre_tockens, next_tockens, prefix, actual_seq_qlen,
        actual_seq_kvlen, sparse_mode, softmax_layout, sink,
    )  # fmt: skip
    return dq, dk, dv, None, dsink
