"""Distributed: the fused linear cross-entropy with the vocabulary split across 2 processes (gloo, 127.0.0.1)
gives the single-process loss, hidden's gradient and each shard's rows of weight's gradient."""

from __future__ import annotations

import os

import pytest
import torch

from two_process import gloo_group, run_two  # noqa: E402

pytestmark = [pytest.mark.distributed]

import ascendc_ops  # noqa: E402

TIMEOUT_S = 120
SPLIT = 230  # rank 0 holds vocabulary rows [0, 230), rank 1 [230, 500)
OPTIONS = dict(label_smoothing=0.1, lse_square_scale=1e-4, softcap=30.0)


def _data():
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(37, 24, generator=gen)
    w = torch.randn(500, 24, generator=gen) / 5
    t = torch.randint(0, 500, (37,), generator=gen)
    t[::6] = -100
    return h, w, t


def _worker(rank, world, port, out_dir):
    with gloo_group(rank, world, port, out_dir):
        h, w, t = _data()
        lo, hi = (0, SPLIT) if rank == 0 else (SPLIT, 500)
        hg, wg = h.clone().requires_grad_(), w[lo:hi].clone().requires_grad_()
        loss = ascendc_ops.vocab_parallel_linear_cross_entropy(hg, wg, t, lo, 500, **OPTIONS)
        loss.backward()
        torch.save({"loss": loss.detach(), "dh": hg.grad, "dw": wg.grad}, os.path.join(out_dir, f"rank{rank}.pt"))


def test_two_vocabulary_shards_match_one_process(tmp_path):
    run_two(_worker, str(tmp_path), TIMEOUT_S, "vocabulary-parallel cross-entropy")
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    h, w, t = _data()
    hg, wg = h.clone().requires_grad_(), w.clone().requires_grad_()
    loss = ascendc_ops.linear_cross_entropy(hg, wg, t, **OPTIONS)
    loss.backward()
    for r in ranks:
        torch.testing.assert_close(r["loss"], loss.detach(), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(r["dh"], hg.grad, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(torch.cat([ranks[0]["dw"], ranks[1]["dw"]]), wg.grad, rtol=1e-5, atol=1e-7)
