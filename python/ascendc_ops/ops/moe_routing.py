"""MoE routing ops: wrappers and autograd for

- ``moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False)``: tokens sorted
  stably by expert, ``sorted_indices = argsort(argsort(flat indices))`` (int32);
- ``moe_token_unpermute(permuted, sorted_indices, probs=None, padded_mode=False, restore_shape=None)``:
  ``out[t] = sum_k probs[t, k] * permuted[sorted_indices[t*K + k]]``, and its ``*_grad`` op.

Schemas come from op_proto/moe_routing/*.json; the argument rules and the output shapes (also for
FakeTensor / torch.compile, through C++ Meta kernels) from tiling/moe_routing_problem.h. Autograd:
dtokens by unpermute (a gather-sum, no probs); dpermuted and dprobs by moe_token_unpermute_grad.
Data-dependent checks (index ranges) run in the C++ bindings. The grouped matmul ops are in
grouped_matmul.py.
"""

from __future__ import annotations

import torch


# ---- wrappers ----
def moe_token_permute(tokens, indices, num_out_tokens: int | None = None, padded_mode: bool = False):
    """(permuted_tokens, sorted_indices): tokens sorted stably by expert id."""
    return torch.ops.custom.moe_token_permute(tokens, indices, num_out_tokens, padded_mode)


def moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode: bool = False, restore_shape=None):
    """out[t] = sum_k probs[t, k] * permuted_tokens[sorted_indices[t*K + k]] (probs None: a plain sum)."""
    rs = list(restore_shape) if restore_shape is not None else None
    return torch.ops.custom.moe_token_unpermute(permuted_tokens, sorted_indices, probs, padded_mode, rs)


# ---- autograd ----
def _permute_setup(ctx, inputs, output):
    ctx.tokens_shape = list(inputs[0].shape)
    ctx.save_for_backward(output[1])


def _permute_backward(ctx, dpermuted, _dsorted):
    (sorted_indices,) = ctx.saved_tensors
    t, h = ctx.tokens_shape
    if dpermuted is None or t == 0:
        return (dpermuted.new_zeros([t, h]) if dpermuted is not None else None), None, None, None
    dtokens = torch.ops.custom.moe_token_unpermute(dpermuted.contiguous(), sorted_indices, None, False, [t, h])
    return dtokens, None, None, None


def _unpermute_setup(ctx, inputs, output):
    permuted, sorted_indices = inputs[:2]
    probs = inputs[2] if len(inputs) > 2 else None
    ctx.restore_shape = inputs[4] if len(inputs) > 4 else None
    ctx.has_probs = probs is not None
    # without probs the grad reads only permuted's shape and dtype (no dprobs): it is not kept alive for backward
    ctx.permuted_meta = (permuted.shape, permuted.dtype)
    ctx.save_for_backward(permuted if ctx.has_probs else None, sorted_indices, probs)


def _unpermute_backward(ctx, dout):
    permuted, sorted_indices, probs = ctx.saved_tensors
    if permuted is None:
        shape, dtype = ctx.permuted_meta
        permuted = dout.new_empty(shape, dtype=dtype)  # never read by the kernel when probs is None
    dperm, dprobs = torch.ops.custom.moe_token_unpermute_grad(
        permuted, dout.contiguous(), sorted_indices, probs, False, ctx.restore_shape
    )
    return dperm, None, (dprobs if ctx.has_probs else None), None, None


torch.library.register_autograd("custom::moe_token_permute", _permute_backward, setup_context=_permute_setup)
torch.library.register_autograd("custom::moe_token_unpermute", _unpermute_backward, setup_context=_unpermute_setup)
