"""MoE routing ops: wrappers, fake kernels and autograd for

- ``moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False)``: tokens sorted
  stably by expert, ``sorted_indices = argsort(argsort(flat indices))`` (int32);
- ``moe_token_unpermute(permuted, sorted_indices, probs=None, padded_mode=False, restore_shape=None)``:
  ``out[t] = sum_k probs[t, k] * permuted[sorted_indices[t*K + k]]``, and its ``*_grad`` op.

Schemas come from op_proto/moe_token_*.json. Autograd: dtokens by unpermute (a gather-sum, no
probs); dpermuted and dprobs by moe_token_unpermute_grad. Data-dependent checks (index ranges) run
in the C++ bindings. The grouped matmul ops are in grouped_matmul.py.
"""

from __future__ import annotations

import torch

from ..op_proto import load_all
from .checks import check_dtype, check_same_dtype, fail

PROTOS = load_all()
MAX_TOPK = torch.ops.ascendc_ops.moe_max_topk()  # MOE_MAX_TOPK, tiling/moe_routing_tiling_data.h


def check_permute(tokens, indices, num_out_tokens, padded_mode) -> tuple[list, int]:
    """Returns (permuted shape, T * topK)."""
    op, proto = "moe_token_permute", PROTOS["moe_token_permute"]
    if padded_mode:
        fail(ValueError, op, "padded_mode=True is not supported (as on the NPU); pass padded_mode=False")
    if tokens.dim() != 2:
        fail(ValueError, op, f"tokens must be 2-D [T, H], got shape {list(tokens.shape)}")
    if indices.dim() not in (1, 2):
        fail(ValueError, op, f"indices must be [T, topK] or [T], got shape {list(indices.shape)}")
    t, h = tokens.shape
    k = indices.shape[1] if indices.dim() == 2 else 1
    if indices.shape[0] != t:
        fail(ValueError, op, f"indices must have T = {t} rows (tokens.size(0)), got shape {list(indices.shape)}")
    if not 1 <= k <= MAX_TOPK:
        fail(ValueError, op, f"topK (indices.size(1)) must be in [1, {MAX_TOPK}], got {k}")
    check_dtype(proto, 0, tokens)
    check_dtype(proto, 1, indices)
    n = t * k
    if num_out_tokens is not None and num_out_tokens < 0:
        fail(ValueError, op, f"num_out_tokens must be >= 0 (0: keep all), got {num_out_tokens}")
    n_out = min(num_out_tokens, n) if num_out_tokens else n
    return [n_out, h], n


def check_unpermute(op, permuted, sorted_indices, probs, padded_mode, restore_shape, dout=None) -> tuple[int, int]:
    """Returns (T, topK)."""
    proto = PROTOS[op]
    if padded_mode:
        fail(ValueError, op, "padded_mode=True is not supported (as on the NPU); pass padded_mode=False")
    if permuted.dim() != 2:
        fail(ValueError, op, f"permuted_tokens must be 2-D [rows, H], got shape {list(permuted.shape)}")
    if sorted_indices.dim() != 1:
        fail(ValueError, op, f"sorted_indices must be 1-D [T * topK], got shape {list(sorted_indices.shape)}")
    rows, h = permuted.shape
    n = sorted_indices.shape[0]
    if probs is not None:
        if probs.dim() != 2 or probs.numel() != n:
            fail(
                ValueError,
                op,
                f"probs must be 2-D [T, topK] with T * topK = {n} (sorted_indices length), "
                f"got shape {list(probs.shape)}",
            )
        t, k = probs.shape
    elif restore_shape:
        rs = list(restore_shape)
        if len(rs) != 2 or rs[0] <= 0 or n % rs[0] or rs[1] != h:
            fail(
                ValueError,
                op,
                f"restore_shape must be [T, H] with H = {h} and T dividing {n} (sorted_indices length), got {rs}",
            )
        t, k = rs[0], n // rs[0]
    else:
        t, k = n, 1
    if k > MAX_TOPK:
        fail(ValueError, op, f"topK must be at most {MAX_TOPK}, got {k}")
    if rows > n:
        fail(ValueError, op, f"permuted_tokens has {rows} rows, more than the {n} entries of sorted_indices")
    check_dtype(proto, 0, permuted)
    s_index = 2 if dout is not None else 1
    check_dtype(proto, s_index, sorted_indices)
    if dout is not None:
        if list(dout.shape) != [t, h]:
            fail(ValueError, op, f"unpermuted_tokens_grad must have shape [{t}, {h}], got {list(dout.shape)}")
        check_same_dtype(op, "unpermuted_tokens_grad", dout, "permuted_tokens", permuted)
    if probs is not None:
        check_dtype(proto, s_index + 1, probs)
        if probs.dtype != permuted.dtype and probs.dtype != torch.float32:
            fail(
                TypeError,
                op,
                f"probs must have permuted_tokens' dtype or float32, got {str(probs.dtype).removeprefix('torch.')}",
            )
    return t, k


# ---- wrappers ----
def moe_token_permute(tokens, indices, num_out_tokens: int | None = None, padded_mode: bool = False):
    """(permuted_tokens, sorted_indices): tokens sorted stably by expert id."""
    check_permute(tokens, indices, num_out_tokens, padded_mode)
    return torch.ops.custom.moe_token_permute(tokens, indices, num_out_tokens, padded_mode)


def moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode: bool = False, restore_shape=None):
    """out[t] = sum_k probs[t, k] * permuted_tokens[sorted_indices[t*K + k]] (probs None: a plain sum)."""
    check_unpermute("moe_token_unpermute", permuted_tokens, sorted_indices, probs, padded_mode, restore_shape)
    rs = list(restore_shape) if restore_shape is not None else None
    return torch.ops.custom.moe_token_unpermute(permuted_tokens, sorted_indices, probs, padded_mode, rs)


# ---- fake kernels ----
@torch.library.register_fake("custom::moe_token_permute")
def _permute_fake(tokens, indices, num_out_tokens=None, padded_mode=False):
    shape, n = check_permute(tokens, indices, num_out_tokens, padded_mode)
    return tokens.new_empty(shape), indices.new_empty([n], dtype=torch.int32)


@torch.library.register_fake("custom::moe_token_unpermute")
def _unpermute_fake(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    t, _ = check_unpermute("moe_token_unpermute", permuted_tokens, sorted_indices, probs, padded_mode, restore_shape)
    return permuted_tokens.new_empty([t, permuted_tokens.shape[1]])


@torch.library.register_fake("custom::moe_token_unpermute_grad")
def _unpermute_grad_fake(
    permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs=None, padded_mode=False, restore_shape=None
):
    t, k = check_unpermute(
        "moe_token_unpermute_grad",
        permuted_tokens,
        sorted_indices,
        probs,
        padded_mode,
        restore_shape,
        dout=unpermuted_tokens_grad,
    )
    dprobs = probs.new_empty([t, k]) if probs is not None else permuted_tokens.new_empty([0])
    return torch.empty_like(permuted_tokens, memory_format=torch.contiguous_format), dprobs


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
    ctx.save_for_backward(permuted, sorted_indices, probs)


def _unpermute_backward(ctx, dout):
    permuted, sorted_indices, probs = ctx.saved_tensors
    dperm, dprobs = torch.ops.custom.moe_token_unpermute_grad(
        permuted, dout.contiguous(), sorted_indices, probs, False, ctx.restore_shape
    )
    return dperm, None, (dprobs if ctx.has_probs else None), None, None


torch.library.register_autograd("custom::moe_token_permute", _permute_backward, setup_context=_permute_setup)
torch.library.register_autograd("custom::moe_token_unpermute", _unpermute_backward, setup_context=_unpermute_setup)
