"""Fused attention: the wrapper of

- ``fusion_attention(query, key, value, head_num, input_layout, atten_mask=None, scale=1.0,
  pre_tockens=2147483647, next_tockens=2147483647, actual_seq_qlen=None, actual_seq_kvlen=None,
  sparse_mode=0) -> (attention_out, softmax_max, softmax_sum)``: torch_npu's ``npu_fusion_attention``
  forward (its first three results) as a FlashAttention-2 mix kernel: layouts BSH, SBH, BSND, BNSD and TND
  (``actual_seq_qlen`` / ``actual_seq_kvlen`` cumulative, no leading 0, trailing zeros dropping batches), GQA
  (query heads a multiple of the key/value heads), Dv <= Dq = Dk; ``atten_mask`` bool or uint8, non-zero =
  masked, ``[B, N, S1, S2]``, ``[B, 1, S1, S2]``, ``[1, 1, S1, S2]`` or ``[S1, S2]`` (TND: ``[max S1, max S2]``);
  sparse modes 0-4 (0: the mask and the band of ``pre_tockens`` / ``next_tockens``; 1: the mask; 2 / 3: causal
  top-left / bottom-right; 4: the band from the bottom-right; 2-4 take the compressed 2048 x 2048 ``triu(1)``
  mask), 5-8 refused by name; with no mask, sparse_mode and the tokens are ignored. ``softmax_max`` /
  ``softmax_sum`` are fp32 ``[B, N, S1, 8]`` (TND: ``[T, N, 8]`` holding one ``[N, s, 8]`` block per sequence,
  torch_npu's default): each row's max of ``scale * q k^T`` and its sum of ``exp(x - max)``, 8 times; a row
  with no key gets output 0, ``-FLT_MAX`` and ``FLT_MAX`` (docs/attention.md).

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
