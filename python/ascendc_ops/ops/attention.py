"""Fused attention: the wrapper of

- ``fusion_attention(query, key, value, head_num, input_layout, atten_mask=None, scale=1.0,
  pre_tockens=2147483647, next_tockens=2147483647, actual_seq_qlen=None, actual_seq_kvlen=None,
  sparse_mode=0) -> (attention_out, softmax_max, softmax_sum)``: torch_npu's ``npu_fusion_attention``
  forward (its first three results) as a FlashAttention-2 mix kernel: layouts BSH, SBH, BSND, BNSD and TND
  (``actual_seq_qlen`` / ``actual_seq_kvlen`` cumulative, no leading 0), GQA (query heads a multiple of the
  key/value heads), ``atten_mask`` bool with True = masked, sparse modes 0-4 (2/3/4 take the compressed
  2048 x 2048 causal mask; 5-8 are refused by name). ``softmax_max`` / ``softmax_sum`` are fp32
  ``[B, N, S1, 8]`` (TND ``[T, N, 8]``): each row's max of ``scale * q k^T`` and its sum of
  ``exp(x - max)``, repeated 8 times.

Forward only: there is no autograd formula yet (the backward kernel is the next step), so a tensor that
requires grad gets no gradient through this op. Schemas come from op_proto/attention/fusion_attention.json;
the argument rules and the output shapes (also for FakeTensor / torch.compile, through a C++ Meta kernel)
from tiling/attention_problem.h.
"""

from __future__ import annotations

import torch


def fusion_attention(
    query,
    key,
    value,
    head_num: int,
    input_layout: str,
    atten_mask=None,
    scale: float = 1.0,
    pre_tockens: int = 2147483647,
    next_tockens: int = 2147483647,
    actual_seq_qlen=None,
    actual_seq_kvlen=None,
    sparse_mode: int = 0,
):
    """(attention_out, softmax_max, softmax_sum) of softmax(scale * q k^T, masked) v; forward only."""
    return torch.ops.custom.fusion_attention(
        query,
        key,
        value,
        head_num,
        input_layout,
        atten_mask,
        scale,
        pre_tockens,
        next_tockens,
        actual_seq_qlen,
        actual_seq_kvlen,
        sparse_mode,
    )
