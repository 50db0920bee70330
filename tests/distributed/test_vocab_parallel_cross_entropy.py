"""Distributed: the fused linear cross-entropy with the vocabulary split across 2 processes (gloo, 127.0.0.1)
gives the single-process loss, hidden's gradient and each shard's rows of weight's gradient; with a bias (each
shard's rows) and class weights (the whole vocabulary's), each shard's rows of the bias's gradient too."""

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
    return h, w, t, torch.randn(500, generator=gen) / 5, torch.rand(500, generator=gen) * 2


def _worker(rank, world, port, out_dir):
    with gloo_group(rank, world, port, out_dir):
        h, w, t, bias, cw = _data()
        lo, hi = (0, SPLIT) if rank == 0 else (SPLIT, 500)
        out = {}
        for name, extra in (("plain", False), ("biased", True)):
            hg, wg, bg = h.clone().requires_grad_(), w[lo:hi].clone().requires_grad_(), bias[lo:hi].clone()
            more = dict(bias=bg.requires_grad_(), ce_weight=cw) if extra else {}
            loss = ascendc_ops.vocab_parallel_linear_cross_entropy(hg, wg, t, lo, 500, **more, **OPTIONS)
            loss.backward()
            out[name] = {"loss": loss.detach(), "dh": hg.grad, "dw": wg.grad, "db": bg.grad}
        torch.save(out, os.path.join(out_dir, f"rank{rank}.pt"))


def test_two_vocabulary_shards_match_one_process(tmp_path):
    run_two(_worker, str(tmp_path), TIMEOUT_S, "vocabulary-parallel cross-entropy")
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    h, w, t, bias, cw = _data()
    for name, extra in (("plain", False), ("biased", True)):
        hg, wg, bg = h.clone().requires_grad_(), w.clone().requires_grad_(), bias.clone().requires_grad_()
        more = dict(bias=bg, ce_weight=cw) if extra else {}
        loss = ascendc_ops.linear_cross_entropy(hg, wg, t, **more, **OPTIONS)
        loss.backward()
        for r in ranks:
            torch.testing.assert_close(r[name]["loss"], loss.detach(), rtol=1e-6, atol=1e-6)
            torch.testing.assert_close(r[name]["dh"], hg.grad, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(torch.cat([r[name]["dw"] for r in ranks]), wg.grad, rtol=1e-5, atol=1e-7)
        if extra:
            torch.testing.assert_close(torch.cat([r[name]["db"] for r in ranks]), bg.grad, rtol=1e-5, atol=1e-7)
