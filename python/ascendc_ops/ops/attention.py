"""Fused attention: the wrappers and the autograd of

- ``fusion_attention(query, key, value, head_num, input_layout, atten_mask=None, scale=1.0,
  pre_tockens=TOCKENS_MAX, next_tockens=TOCKENS_MAX, actual_seq_qlen=None, actual_seq_kvlen=None,
  sparse_mode=0) -> (attention_out, softmax_max, softmax_sum)`` (the arguments after the tensors and their
  defaults: ``attention_args.AttentionAttrs``, from the prototype): torch_npu's ``npu_fusion_attention``
  forward (its first three results) as a FlashAttention-2 mix kernel: layouts BSH, SBH, BSND, BNSD and TND
  (``actual_seq_qlen`` / ``actual_seq_kvlen`` cumulative, no leading 0, trailing zeros dropping batches), GQA
  (query heads a multiple of the key/value heads), Dv <= Dq = Dk; ``atten_mask`` bool or uint8, non-zero =
  masked, ``[B, N, S1, S2]``, ``[B, 1, S1, S2]``, ``[1, 1, S1, S2]`` or ``[S1, S2]`` (TND: ``[max S1, max S2]``);
  sparse modes 0-4 (0: the mask and the band of ``pre_tockens`` / ``next_tockens``; 1: the mask; 2 / 3: causal
  top-left / bottom-right; 4: the band from the bottom-right; 2-4 take the compressed causal mask,
  ``attention_args.compressed_mask()``), 5-8 refused by name; with no mask, sparse_mode and the tokens are
  ignored. ``softmax_max`` / ``softmax_sum`` are fp32 ``[B, N, S1, 8]`` (TND: ``[T, N, 8]`` holding one
  ``[N, s, 8]`` block per sequence, torch_npu's default): each row's max of ``scale * q k^T`` and its sum of
  ``exp(x - max)``, 8 times; a row with no key gets output 0, ``-FLT_MAX`` and ``FLT_MAX`` (docs/attention.md).
  Dropout: ``keep_prob`` < 1 with ``drop_mask`` (torch_npu's bit-packed uint8 mask over [B, N, S1, S2],
  ``attention_args.pack_dropout_mask``; TND: [N, s1_b, s2_b] per sequence in order) gives (P * keep / keep_prob)
  V, the statistics P's.

- ``fusion_attention_grad(query, key, value, dy, softmax_max, softmax_sum, attention_in, head_num, input_layout,
  ...) -> (dq, dk, dv, dsink)``, the forward's arguments after its tensors (``sink`` last): its backward (torch_npu's
  ``npu_fusion_attention_grad`` without pse; dropout with the forward's keep_prob and drop_mask), from the
  forward's ``softmax_max`` / ``softmax_sum`` and ``attention_out`` (``attention_in``) and the gradient ``dy`` of
  attention_out; dq / dk / dv have query's / key's / value's shapes and dtype; dsink is d loss / d sink, fp32 [N1]
  (the kernel's: -sum over the head's rows of p_sink * D, docs/attention.md "Sinks"), an empty fp32 tensor without
  sink. An empty S1 or S2 gives zeros.

Autograd: ``custom::fusion_attention``'s backward is ``custom::fusion_attention_grad`` with the forward's inputs,
attrs and results, as torch_npu's derivatives.yaml wires npu_fusion_attention to its grad. Only query, key and value
get gradients. softmax_max and softmax_sum are marked non-differentiable (torch_npu leaves them differentiable and
drops their gradients, so a loss through them silently misses a term; here they come out with requires_grad=False).
Schemas come from op_proto/attention/fusion_attention.json and fusion_attention_grad.json; the argument rules and
the output shapes (also for FakeTensor / torch.compile, through C++ Meta kernels) from tiling/attention_problem.h
and attention_grad_problem.h.
"""

from __future__ import annotations

import torch

from .attention_args import AttentionAttrs


def fusion_attention(query, key, value, *attrs, **named):
    """(attention_out, softmax_max, softmax_sum) of softmax(scale * q k^T, masked) v; differentiable in q, k, v.
    After the tensors, the op's arguments as AttentionAttrs takes them (head_num, input_layout, atten_mask, ...)."""
    return torch.ops.custom.fusion_attention(query, key, value, *AttentionAttrs(*attrs, **named))


def fusion_attention_grad(query, key, value, dy, softmax_max, softmax_sum, attention_in, *attrs, **named):
    """(dq, dk, dv, dsink) of fusion_attention given dy = d(attention_out) and the forward's statistics and output,
    for the forward's arguments (AttentionAttrs; dsink fp32 [N1] with a sink, else empty)."""
    return torch.ops.custom.fusion_attention_grad(
        query, key, value, dy, softmax_max, softmax_sum, attention_in, *AttentionAttrs(*attrs, **named).grad_args()
    )


# ---- autograd ----
def _setup_context(ctx, inputs, output):
    query, key, value, *attrs = inputs
    attention_out, softmax_max, softmax_sum = output
    ctx.mark_non_differentiable(softmax_max, softmax_sum)
    attrs = AttentionAttrs(*attrs)
    ctx.save_for_backward(
        query, key, value, attrs.atten_mask, attrs.sink, attrs.drop_mask, attention_out, softmax_max, softmax_sum
    )
    ctx.attrs = attrs._replace(atten_mask=None, sink=None, drop_mask=None)  # saved tensors


def _fusion_attention_backward(ctx, d_out, _d_max, _d_sum):
    query, key, value, atten_mask, sink, drop_mask, attention_out, softmax_max, softmax_sum = ctx.saved_tensors
    attrs = ctx.attrs._replace(atten_mask=atten_mask, sink=sink, drop_mask=drop_mask)
    dq, dk, dv, dsink = torch.ops.custom.fusion_attention_grad(
        query, key, value, d_out, softmax_max, softmax_sum, attention_out, *attrs.grad_args()
    )
    # one gradient per input given (the inputs run up to the last argument passed)
    need, at_sink = ctx.needs_input_grad, 3 + AttentionAttrs._fields.index("sink")
    grads = [dq if need[0] else None, dk if need[1] else None, dv if need[2] else None] + [None] * (len(need) - 3)
    if len(need) > at_sink and need[at_sink]:
        grads[at_sink] = dsink.to(sink.dtype)
    return tuple(grads)


torch.library.register_autograd("custom::fusion_attention", _fusion_attention_backward, setup_context=_setup_context)
