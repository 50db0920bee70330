"""torch_npu's ``npu_fusion_attention`` and ``npu_fusion_attention_grad`` on our attention family's
fusion_attention and fusion_attention_grad kernels.

The signatures and tuples follow Ascend/op-plugin (op_plugin_functions.yaml and
op_plugin/ops/opapi/FlashAttentionKernelNpuOpApi.cpp, the version whose forward takes ``softmax_layout`` and
``sink``). The forward returns (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels).
softmax_out is an empty tensor of query's dtype there too. With keep_prob == 1 no dropout mask is drawn:
op-plugin then leaves seed and offset unset (we return 0) and numels is the [B, N, S1, S2] mask's element count
(TND: N times the sum of each sequence's S1 * S2). The grad returns (dq, dk, dv, dpse, dsink); without pse and
sink op-plugin's dpse is an empty tensor of query's dtype and dsink an empty fp32 one, as here.
docs/attention.md states the semantics.
"""

from __future__ import annotations

import torch

from ..ops.attention import fusion_attention as _fusion_attention, fusion_attention_grad as _fusion_attention_grad
from ..ops.attention_args import TOCKENS_MAX, batch_and_seq, seq_lengths
from .errors import fail

OP = "npu_fusion_attention"
GRAD_OP = "npu_fusion_attention_grad"


def _refuse(kind, msg: str, op: str = OP):
    fail(kind, op, msg)


def _lens(name: str, cumulative, op: str = OP) -> list[int]:
    """Per-sequence lengths of torch_npu's cumulative ends (trailing zeros drop batches)."""
    if cumulative is None:
        _refuse(ValueError, f"input_layout 'TND' needs {name} (cumulative sequence ends), got None", op)
    return [int(x) for x in seq_lengths(cumulative, name)]


def _refuse_unsupported(op: str, pse, padding_mask, prefix, sink, sparse_mode, keep_prob) -> None:
    """What neither kernel takes, refused by name (both ops take the same arguments for it)."""
    for name, given in (("pse", pse), ("padding_mask", padding_mask), ("prefix", prefix), ("sink", sink)):
        if given is not None:
            _refuse(
                NotImplementedError, f"{name} is not supported (pass {name}=None), got a {type(given).__name__}", op
            )
    if int(sparse_mode) in (5, 6, 7, 8):
        _refuse(NotImplementedError, f"sparse_mode {sparse_mode} (prefix / split across cards) is not supported", op)
    if float(keep_prob) != 1.0:
        _refuse(
            NotImplementedError,
            f"keep_prob must be 1.0 (no dropout), got {keep_prob}: torch_npu's dropout mask comes from the NPU's "
            "generator, which this kernel cannot reproduce",
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


def npu_fusion_attention(
    query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
    keep_prob=1.0, pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, inner_precise=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):  # fmt: skip
    """(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels) as torch_npu returns them,
    differentiable in query, key and value (custom::fusion_attention's autograd). Refused by name: pse,
    padding_mask, prefix and sparse modes 5-8, keep_prob < 1 (torch_npu draws its dropout mask from the NPU
    generator, which we cannot reproduce), sink. gen_mask_parallel / sync order the dropout-mask stream, which
    keep_prob 1 never uses; inner_precise changes nothing here (fully masked rows always give 0, docs/attention.md)."""
    _refuse_unsupported(OP, pse, padding_mask, prefix, sink, sparse_mode, keep_prob)
    layout = _layouts(OP, input_layout, softmax_layout)
    qlen, kvlen = _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen)
    out, smax, ssum = _fusion_attention(
        query, key, value, int(head_num), layout, atten_mask, float(scale), int(pre_tockens), int(next_tockens),
        qlen, kvlen, int(sparse_mode),
    )  # fmt: skip
    if softmax_layout == "TND":
        smax, ssum = _stats_tnd(smax, qlen, int(head_num)), _stats_tnd(ssum, qlen, int(head_num))
    numels = _numels(query, key, int(head_num), layout, qlen, kvlen)
    return out, smax, ssum, query.new_empty(0), 0, 0, numels


def npu_fusion_attention_grad(
    query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
    softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.0, keep_prob=1.0,
    pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
    actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
    softmax_layout="", sink=None,
):  # fmt: skip
    """(dq, dk, dv, dpse, dsink) as torch_npu returns them, from npu_fusion_attention's softmax_max, softmax_sum
    and attention_out (attention_in), which are required. Refused by name as in npu_fusion_attention: pse,
    padding_mask, prefix and sparse modes 5-8, keep_prob < 1, sink; so seed / offset / numels (the dropout mask's
    draw), gen_mask_parallel and sync have nothing to act on. softmax_in is not read (CANN's kernel takes no
    softmax; torch_npu's autograd passes the forward's empty softmax_out); inner_precise changes nothing here.
    softmax_layout='TND' takes the statistics as a true [T, N, 8], as npu_fusion_attention returns them then."""
    _refuse_unsupported(GRAD_OP, pse, padding_mask, prefix, sink, sparse_mode, keep_prob)
    layout = _layouts(GRAD_OP, input_layout, softmax_layout)
    given = {"softmax_max": softmax_max, "softmax_sum": softmax_sum, "attention_in": attention_in}
    missing = [name for name, t in given.items() if t is None]
    if missing:
        _refuse(
            ValueError,
            f"needs the forward's softmax_max, softmax_sum and attention_in (attention_out), got None for "
            f"{', '.join(missing)}",
            GRAD_OP,
        )
    qlen, kvlen = _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen)
    if softmax_layout == "TND":
        softmax_max = _stats_from_tnd(softmax_max, qlen, int(head_num))
        softmax_sum = _stats_from_tnd(softmax_sum, qlen, int(head_num))
    dq, dk, dv = _fusion_attention_grad(
        query, key, value, dy, softmax_max, softmax_sum, attention_in, int(head_num), layout, atten_mask,
        float(scale_value), int(pre_tockens), int(next_tockens), qlen, kvlen, int(sparse_mode),
    )  # fmt: skip
    return dq, dk, dv, query.new_empty(0), key.new_empty(0, dtype=torch.float32)
