"""The MoE experts block on our kernels (LLaMA-Factory's NpuFusedMoE pattern), differentiable end to end:

    permute -> grouped_matmul(gate_up) -> swiglu -> grouped_matmul(down) -> unpermute(probs)

Layouts are Hugging Face transformers 5's fused 3-D expert weights: ``gate_up_proj [E, 2I, H]`` with the
gate rows first and ``down_proj [E, H, I]`` (``transposed=True``: ``[E, H, 2I]`` and ``[E, I, H]``). The
[E, N, K] layout is read by the kernel as is (``transpose_weight=True``), never copied. ``swiglu`` computes
``silu(first half) * second half``, which is HF's ``act_fn(gate) * up`` for the gate-first layout.

The gradient of every input (hidden, the routing weights, both weights) comes from the ops' own autograd:
unpermute_grad (dpermuted, dprobs), grouped_matmul's dx and dweight kernels, swiglu_grad, and permute's
backward. Expert ids >= num_experts (HF's expert-parallel sentinels) sort to the tail, fall outside every
group (the grouped matmul leaves those rows zero) and, with their zero routing weight, contribute nothing.
"""

from __future__ import annotations

import torch

from .grouped_matmul import grouped_matmul
from .moe_routing import moe_token_permute, moe_token_unpermute

OP = "moe_experts"


def expert_counts(top_k_index: torch.Tensor, num_experts: int) -> torch.Tensor:
    """Tokens per expert, int64 [E] (the grouped matmul's group_list, type 1). Ids >= E are not counted.

    A fixed-size scatter-add rather than bincount: its output shape does not depend on the data, so
    torch.compile keeps one graph.
    """
    ids = top_k_index.reshape(-1).to(torch.int64).clamp(max=num_experts)
    counts = torch.zeros(num_experts + 1, dtype=torch.int64, device=ids.device)
    return counts.scatter_add_(0, ids, torch.ones_like(ids))[:num_experts]


def _check(hidden, top_k_index, top_k_weights, gate_up_proj, down_proj, transposed):
    def fail(msg):
        raise ValueError(f"{OP}: {msg}")

    if hidden.dim() != 2:
        fail(f"hidden_states must be [T, H], got shape {list(hidden.shape)}")
    if top_k_index.dim() != 2 or top_k_index.shape[0] != hidden.shape[0]:
        fail(f"top_k_index must be [T, K] with T={hidden.shape[0]}, got shape {list(top_k_index.shape)}")
    if top_k_weights.shape != top_k_index.shape:
        fail(f"top_k_weights must have top_k_index's shape {list(top_k_index.shape)}, got {list(top_k_weights.shape)}")
    if gate_up_proj.dim() != 3 or down_proj.dim() != 3 or gate_up_proj.shape[0] != down_proj.shape[0]:
        fail(
            f"gate_up_proj and down_proj must be 3-D with one expert count, got {list(gate_up_proj.shape)} "
            f"and {list(down_proj.shape)}"
        )
    h = hidden.shape[1]
    two_i, gu_h = (gate_up_proj.shape[2], gate_up_proj.shape[1]) if transposed else gate_up_proj.shape[1:]
    d_i, d_h = (down_proj.shape[1], down_proj.shape[2]) if transposed else (down_proj.shape[2], down_proj.shape[1])
    if gu_h != h or d_h != h or two_i != 2 * d_i:
        layout = "[E, H, 2I] and [E, I, H]" if transposed else "[E, 2I, H] and [E, H, I]"
        fail(
            f"with hidden size {h} the weights must be {layout}, got gate_up_proj {list(gate_up_proj.shape)} "
            f"and down_proj {list(down_proj.shape)}"
        )


def moe_experts(
    hidden_states: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up_proj: torch.Tensor,
    down_proj: torch.Tensor,
    transposed: bool = False,
) -> torch.Tensor:
    """HF's experts forward ``sum_k w[t,k] * down_e(silu(gate_e(x_t)) * up_e(x_t))`` with e = top_k_index[t,k].

    hidden_states [T, H]; top_k_index [T, K] int; top_k_weights [T, K] (hidden's dtype or fp32);
    returns [T, H] in hidden's dtype. Hidden is cast to the weights' dtype first, as HF's grouped_mm does.
    """
    _check(hidden_states, top_k_index, top_k_weights, gate_up_proj, down_proj, transposed)
    out_dtype = hidden_states.dtype
    x = hidden_states.to(gate_up_proj.dtype)
    counts = expert_counts(top_k_index, gate_up_proj.shape[0])
    permuted, sorted_indices = moe_token_permute(x, top_k_index)
    gate_up = grouped_matmul(permuted, gate_up_proj, counts, 1, not transposed)
    down = grouped_matmul(torch.ops.custom.swiglu(gate_up, -1), down_proj, counts, 1, not transposed)
    probs = top_k_weights if top_k_weights.dtype == torch.float32 else top_k_weights.to(down.dtype)
    out = moe_token_unpermute(down, sorted_indices, probs)
    return out if out.dtype == out_dtype else out.to(out_dtype)


def moe_experts_expert_parallel(
    hidden_states: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up_local: torch.Tensor,
    down_local: torch.Tensor,
    num_experts: int,
    group=None,
    transposed: bool = False,
) -> torch.Tensor:
    """``moe_experts`` with the experts split across the ranks of ``group`` (expert parallelism).

    Rank r holds experts ``[r*E/W, (r+1)*E/W)`` (``gate_up_local`` / ``down_local`` are those slices) and
    routes its own tokens (``top_k_index`` holds global ids). Dispatch: permute groups the token copies by
    expert, hence by destination rank; ``all_to_all_single`` sends them (and the per-expert counts); a
    second permute regroups what arrived by local expert; the grouped matmuls run; unpermute restores the
    arrival order, ``all_to_all_single`` sends the rows back, and unpermute(probs) combines them. The
    collectives are torch.distributed.nn's differentiable ones, so backward runs the mirror exchange.
    """
    import torch.distributed as dist
    from torch.distributed.nn.functional import all_to_all_single

    world = dist.get_world_size(group)
    local = gate_up_local.shape[0]
    if local * world != num_experts:
        raise ValueError(f"{OP}: {world} ranks x {local} local experts != num_experts {num_experts}")
    out_dtype = hidden_states.dtype
    x = hidden_states.to(gate_up_local.dtype)
    counts = expert_counts(top_k_index, num_experts)
    permuted, sorted_indices = moe_token_permute(x, top_k_index)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts, group=group)  # [source rank, local expert]
    send_splits = counts.view(world, local).sum(1).tolist()
    recv_splits = recv_counts.view(world, local).sum(1).tolist()
    received = all_to_all_single(
        permuted.new_empty(sum(recv_splits), x.shape[1]), permuted, recv_splits, send_splits, group=group
    )
    local_ids = torch.arange(local, device=x.device).repeat(world).repeat_interleave(recv_counts)
    grouped, regroup_indices = moe_token_permute(received, local_ids[:, None])
    local_counts = recv_counts.view(world, local).sum(0)
    gate_up = grouped_matmul(grouped, gate_up_local, local_counts, 1, not transposed)
    down = grouped_matmul(torch.ops.custom.swiglu(gate_up, -1), down_local, local_counts, 1, not transposed)
    arrived_order = moe_token_unpermute(down, regroup_indices)
    returned = all_to_all_single(
        permuted.new_empty(permuted.shape), arrived_order, send_splits, recv_splits, group=group
    )
    probs = top_k_weights if top_k_weights.dtype == torch.float32 else top_k_weights.to(returned.dtype)
    out = moe_token_unpermute(returned, sorted_indices, probs)
    return out if out.dtype == out_dtype else out.to(out_dtype)
