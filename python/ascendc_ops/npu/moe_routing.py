"""torch_npu's MoE token routing names on our moe_routing family: npu_moe_token_permute, npu_moe_token_unpermute
and npu_moe_token_unpermute_grad."""

from __future__ import annotations

import torch

from ..ops.moe_routing import moe_token_permute as _moe_token_permute, moe_token_unpermute as _moe_token_unpermute


def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    """-> (permuted_tokens, sorted_indices int32): tokens sorted (stably) by expert id."""
    return _moe_token_permute(tokens, indices, num_out_tokens, padded_mode)


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    """``out[t] = sum_k probs[t, k] * permuted_tokens[sorted_indices[t*K + k]]``."""
    return _moe_token_unpermute(permuted_tokens, sorted_indices, probs, padded_mode, restore_shape)


def npu_moe_token_unpermute_grad(
    permuted_tokens, grad_unpermuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None
):
    """-> (grad_permuted_tokens, grad_probs)."""
    return tuple(
        torch.ops.custom.moe_token_unpermute_grad(
            permuted_tokens, grad_unpermuted_tokens.contiguous(), sorted_indices, probs, padded_mode, restore_shape
        )
    )
