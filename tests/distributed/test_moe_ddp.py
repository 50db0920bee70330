"""Expert parallelism across 2 processes (gloo, 127.0.0.1): a tiny Qwen3-MoE whose experts are split between
the ranks, tokens dispatched with all_to_all_single around our permute/unpermute
(ascendc_ops.ops.moe_experts.moe_experts_expert_parallel), gives the single-process logits and gradients
of the unpatched model (HF eager experts) on the whole batch."""

from __future__ import annotations

import os

import pytest
import torch

from two_process import gloo_group, run_two  # noqa: E402

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

pytest.importorskip("transformers")

TIMEOUT_S = 180
EP_IMPL = "ascendc_ep_test"


def _model_and_batch():
    from test_moe_models import ids, tiny_moe

    return tiny_moe("qwen3_moe", seed=0), ids(batch=4, seq=12)


def _ep_experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """This rank's slice of the experts, the other slice on the other rank."""
    import torch.distributed as dist

    from ascendc_ops.ops.moe_experts import moe_experts_expert_parallel

    rank, local = dist.get_rank(), self.num_experts // dist.get_world_size()
    lo, hi = rank * local, (rank + 1) * local
    return moe_experts_expert_parallel(
        hidden_states, top_k_index, top_k_weights, self.gate_up_proj[lo:hi], self.down_proj[lo:hi], self.num_experts
    )


def _worker(rank, world, port, out_dir):
    import torch.distributed as dist
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    import ascendc_ops.patching as K

    with gloo_group(rank, world, port, out_dir):
        ALL_EXPERTS_FUNCTIONS.register(EP_IMPL, _ep_experts_forward)
        model, x = _model_and_batch()
        assert "fused_moe" in K.apply_default_kernels(model).applied
        model.config._experts_implementation_internal = EP_IMPL  # fused_moe, then split across ranks
        shard = x.chunk(world)[rank]
        out = model(shard, labels=shard)
        out.loss.backward()
        for p in model.parameters():  # DDP's average; an expert's gradient is non-zero on its owner only
            dist.all_reduce(p.grad)
            p.grad /= world
        result = {"logits": out.logits.detach()}
        if rank == 0:
            result["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
        torch.save(result, os.path.join(out_dir, f"rank{rank}.pt"))


def test_expert_parallel_two_processes_match_single(tmp_path):
    run_two(_worker, str(tmp_path), TIMEOUT_S, "expert-parallel")
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    model, x = _model_and_batch()  # HF's own eager experts, one process, whole batch
    out = model(x, labels=x)
    out.loss.backward()
    torch.testing.assert_close(torch.cat([r["logits"] for r in ranks]), out.logits.detach(), atol=1e-5, rtol=0)
    grads = ranks[0]["grads"]
    experts_seen = 0
    for n, p in model.named_parameters():
        torch.testing.assert_close(grads[n], p.grad, atol=1e-5, rtol=1e-4, msg=n)
        experts_seen += "experts" in n
    assert experts_seen == 2  # layer 0 (layer 1 is dense): gate_up_proj, down_proj
