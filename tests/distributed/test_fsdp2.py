"""FSDP2 (torch.distributed.fsdp.fully_shard, 2 processes, gloo on 127.0.0.1) on patched tiny models, a dense Qwen3
and a Qwen3-MoE (the experts' [E, ...] weights sharded by expert): each decoder layer and the root sharded, half the
batch per rank, two AdamW steps on the sharded parameters. The losses (mean of the ranks') and the full gradients
(DTensor.full_tensor) at each step are the unpatched single-process model's on the whole batch."""

from __future__ import annotations

import os

import pytest
import torch

from two_process import gloo_group, run_two  # noqa: E402

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

pytest.importorskip("transformers")

TIMEOUT_S = 180
STEPS, LR = 2, 1e-3


def _model_and_data(kind):
    if kind == "dense":
        from test_patching import ids, tiny

        model, seq = tiny("qwen3", seed=0), 16
    else:
        from test_moe_models import ids, tiny_moe

        model, seq = tiny_moe("qwen3_moe", seed=0), 12
    return model, [ids(batch=4, seq=seq, seed=s) for s in range(1, STEPS + 1)]


def _steps(model, data, world=1, rank=0, full=lambda g: g):
    """STEPS AdamW steps, this rank's slice of each batch: per step the loss and every full gradient."""
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    losses, grads = [], []
    for x in data:
        shard = x.chunk(world)[rank]
        loss = model(shard, labels=shard).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        losses.append(loss.item())
        grads.append({n: full(p.grad).detach().clone() for n, p in model.named_parameters()})
        opt.step()
    return losses, grads


def _worker(rank, world, port, out_dir, kind):
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    import ascendc_ops.patching as K
    from ascendc_ops.patching import add_rms_norm as add_norm_kernel, moe as moe_kernel

    calls, fused = [], moe_kernel.moe_experts
    moe_kernel.moe_experts = lambda *a, **kw: calls.append(1) or fused(*a, **kw)  # this process only
    with gloo_group(rank, world, port, out_dir):
        model, data = _model_and_data(kind)
        applied = K.apply_default_kernels(model).applied
        moe = ["fused_moe"] if kind == "moe" else []
        assert applied == ["fused_rope", "fused_rmsnorm", "fused_swiglu", *moe, "fused_add_rmsnorm"]
        add_calls, add_fused = [], add_norm_kernel._fused  # counted from here: the probe ran it once
        add_norm_kernel._fused = lambda *a: add_calls.append(1) or add_fused(*a)
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        assert all(isinstance(p, DTensor) for p in model.parameters())
        # full_tensor() all-gathers each gradient shard (FSDP2 reduce-scatters with the mean over ranks)
        losses, grads = _steps(model, data, world, rank, full=lambda g: g.full_tensor())
        assert len(calls) == (STEPS if kind == "moe" else 0)  # one MoE layer: our experts block ran at each step
        assert len(add_calls) == STEPS * len(model.model.layers)  # the fused add + norm in every layer
        torch.save({"losses": losses, "grads": grads if rank == 0 else None}, os.path.join(out_dir, f"rank{rank}.pt"))


def _worker_dense(rank, world, port, out_dir):
    _worker(rank, world, port, out_dir, "dense")


def _worker_moe(rank, world, port, out_dir):
    _worker(rank, world, port, out_dir, "moe")


@pytest.mark.parametrize("kind", ["dense", "moe"])
def test_fsdp2_two_processes_match_unpatched_single(tmp_path, kind):
    run_two(_worker_dense if kind == "dense" else _worker_moe, str(tmp_path), TIMEOUT_S, f"FSDP2 {kind}")
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    model, data = _model_and_data(kind)  # unpatched (HF eager), one process, whole batch
    ref_losses, ref_grads = _steps(model, data)
    for step in range(STEPS):
        # each rank's loss is the mean over its half (equal token counts): their mean is the whole batch's
        loss = (ranks[0]["losses"][step] + ranks[1]["losses"][step]) / 2
        assert abs(loss - ref_losses[step]) <= 1e-5, (step, loss, ref_losses[step])
        grads = ranks[0]["grads"][step]
        assert grads.keys() == ref_grads[step].keys()
        for n, g in ref_grads[step].items():
            torch.testing.assert_close(grads[n], g, atol=1e-5, rtol=1e-4, msg=f"step {step}: {n}")
