"""torch_npu's ``npu_fusion_attention`` on our fusion_attention kernel (re-exported by ascendc_ops.npu).

The signature and the 7-tuple follow Ascend/op-plugin (op_plugin_functions.yaml and
op_plugin/ops/opapi/FlashAttentionKernelNpuOpApi.cpp): (attention_out, softmax_max, softmax_sum, softmax_out,
seed, offset, numels). softmax_out is an empty tensor of query's dtype there too. With keep_prob == 1 no dropout
mask is drawn: op-plugin then leaves seed and offset unset (we return 0) and numels is the [B, N, S1, S2] mask's
element count (TND: N times the sum of each sequence's S1 * S2). docs/attention.md states the semantics.
"""

from __future__ import annotations

import torch

from .ops.attention import fusion_attention as _fusion_attention
from .ops.attention_reference import seq_lengths

OP = "npu_fusion_attention"
TOCKENS_MAX = 2147483647


def _refuse(kind, msg: str):
    from .npu import _fail  # the RuntimeError-compatible error kinds torch_npu's callers catch

    _fail(kind, OP, msg)


def _lens(name: str, cumulative) -> list[int]:
    """Per-sequence lengths of torch_npu's cumulative ends (trailing zeros drop batches)."""
    if cumulative is None:
        _refuse(ValueError, f"input_layout 'TND' needs {name} (cumulative sequence ends), got None")
    return [int(x) for x in seq_lengths(cumulative, name)]


def _numels(query, key, head_num: int, layout: str, qlen, kvlen) -> int:
    """op-plugin's dropout-mask element count: B * N * S1 * S2, or N * sum(s1_b * s2_b) for TND."""
    if layout == "TND":
        q_lens, kv_lens = _lens("actual_seq_qlen", qlen), _lens("actual_seq_kvlen", kvlen)
        return int(query.shape[1]) * sum(a * b for a, b in zip(q_lens, kv_lens, strict=True))
    b, s1, s2 = {
        "BSH": (query.shape[0], query.shape[1], key.shape[1]),
        "SBH": (query.shape[1], query.shape[0], key.shape[0]),
        "BSND": (query.shape[0], query.shape[1], key.shape[1]),
        "BNSD": (query.shape[0], query.shape[2], key.shape[2]),
    }[layout]
    return int(b) * int(head_num) * int(s1) * int(s2)


def _stats_tnd(stat: torch.Tensor, qlen, head_num: int) -> torch.Tensor:
    """The default TND stats (each sequence's [N, s_b, 8] block in order, docs/attention.md) as a true [T, N, 8]."""
    flat, parts, start = stat.reshape(-1), [], 0
    for s in _lens("actual_seq_qlen", qlen):
        n = s * head_num * 8
        parts.append(flat[start : start + n].reshape(head_num, s, 8).transpose(0, 1))
        start += n
    return torch.cat([*parts, stat[start // (head_num * 8) :]]).contiguous()


def npu_fusion_attention(
    query,
    key,
    value,
    head_num,
    input_layout,
    pse=None,
    padding_mask=None,
    atten_mask=None,
    scale=1.0,
    keep_prob=1.0,
    pre_tockens=TOCKENS_MAX,
    next_tockens=TOCKENS_MAX,
    inner_precise=0,
    prefix=None,
    actual_seq_qlen=None,
    actual_seq_kvlen=None,
    sparse_mode=0,
    gen_mask_parallel=True,
    sync=False,
    softmax_layout="",
    sink=None,
):
    """(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels) as torch_npu returns them.
    Forward only (our op has no autograd formula yet). Refused by name: pse, padding_mask, prefix and sparse
    modes 5-8, keep_prob < 1 (torch_npu draws its dropout mask from the NPU generator, which we cannot
    reproduce), sink. gen_mask_parallel / sync order the dropout-mask stream, which keep_prob 1 never uses;
    inner_precise changes nothing here (fully masked rows always give 0, docs/attention.md)."""
    for name, given in (("pse", pse), ("padding_mask", padding_mask), ("prefix", prefix), ("sink", sink)):
        if given is not None:
            _refuse(NotImplementedError, f"{name} is not supported (pass {name}=None), got a {type(given).__name__}")
    if int(sparse_mode) in (5, 6, 7, 8):
        _refuse(NotImplementedError, f"sparse_mode {sparse_mode} (prefix / split across cards) is not supported")
    if float(keep_prob) != 1.0:
        _refuse(
            NotImplementedError,
            f"keep_prob must be 1.0 (no dropout), got {keep_prob}: torch_npu's dropout mask comes from the NPU's "
            "generator, which this kernel cannot reproduce",
        )
    layout = str(input_layout).upper()
    if softmax_layout not in ("", "TND"):
        _refuse(ValueError, f"softmax_layout must be '' or 'TND', got {softmax_layout!r}")
    if softmax_layout == "TND" and layout != "TND":
        _refuse(ValueError, f"softmax_layout 'TND' needs input_layout 'TND', got {input_layout!r}")
    qlen = None if actual_seq_qlen is None else [int(x) for x in actual_seq_qlen]
    kvlen = None if actual_seq_kvlen is None else [int(x) for x in actual_seq_kvlen]
    out, smax, ssum = _fusion_attention(
        query, key, value, int(head_num), layout, atten_mask, float(scale), int(pre_tockens), int(next_tockens),
        qlen, kvlen, int(sparse_mode),
    )  # fmt: skip
    if softmax_layout == "TND":
        smax, ssum = _stats_tnd(smax, qlen, int(head_num)), _stats_tnd(ssum, qlen, int(head_num))
    numels = _numels(query, key, int(head_num), layout, qlen, kvlen)
    return out, smax, ssum, query.new_empty(0), 0, 0, numels
