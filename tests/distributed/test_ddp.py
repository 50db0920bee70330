"""Distributed: a 2-process DDP training step (gloo, 127.0.0.1) of a patched tiny model gives the same
gradients as one process on the whole batch."""

from __future__ import annotations

import os

import pytest
import torch

from two_process import gloo_group, run_two  # noqa: E402

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402

TIMEOUT_S = 120


def _model_and_batch():
    from test_patching import ids, tiny

    model = tiny("llama", seed=0)
    K.apply_default_kernels(model)
    return model, ids(batch=4, seq=16)


def _worker(rank, world, port, out_dir):
    with gloo_group(rank, world, port, out_dir):
        model, x = _model_and_batch()
        assert K.applied_kernels(model) == ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_add_rmsnorm"]
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        shard = x.chunk(world)[rank]
        loss = ddp(shard, labels=shard).loss
        loss.backward()
        if rank == 0:
            torch.save({n: p.grad.clone() for n, p in model.named_parameters()}, os.path.join(out_dir, "grads.pt"))


def test_ddp_two_processes_match_single(tmp_path):
    run_two(_worker, str(tmp_path), TIMEOUT_S, "DDP")
    ddp_grads = torch.load(tmp_path / "grads.pt")
    model, x = _model_and_batch()
    # each rank's loss is the mean over its shard (equal token counts), DDP averages: = the full-batch mean
    model(x, labels=x).loss.backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(ddp_grads[n], p.grad, atol=1e-6, rtol=1e-4, msg=n)
