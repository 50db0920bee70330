"""Convergence: 20 optimizer steps with and without the kernels from the same seed give the same loss
curve and the same final weights (tiny random configs, random token ids, nothing downloaded)."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from test_patching import VOCAB, tiny  # noqa: E402

STEPS = 20


def train(model_type, dtype, kernels, seed=0):
    model = tiny(model_type, dtype, seed=seed)
    if kernels:
        assert K.apply_default_kernels(model).applied == ["fused_rope", "fused_rmsnorm", "fused_swiglu"]
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    g = torch.Generator().manual_seed(seed + 1)
    # a learnable stream: a fixed small set of sequences, so the loss falls well within 20 steps
    data = torch.randint(0, VOCAB, (4, 2, 16), generator=g)
    losses = []
    for step in range(STEPS):
        x = data[step % len(data)]
        loss = model(x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.tensor(losses), {n: p.detach().float().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("model_type,dtype", [("llama", torch.float32), ("qwen3", torch.float32),
                                              ("llama", torch.bfloat16)])
def test_twenty_steps_match(model_type, dtype):
    ref_losses, ref_w = train(model_type, dtype, kernels=False)
    losses, w = train(model_type, dtype, kernels=True)
    assert ref_losses[-1] < ref_losses[0] - 0.5, ref_losses  # it does learn
    if dtype == torch.float32:
        torch.testing.assert_close(losses, ref_losses, atol=1e-4, rtol=0)
        # Adam divides by sqrt(v): an entry whose gradient is ~0 can take a different (lr-sized) step on
        # 1e-7 noise, so bound the worst element loosely and the whole tensor tightly.
        for n in ref_w:
            diff = w[n] - ref_w[n]
            assert diff.abs().max().item() <= 1e-3, n
            assert (diff.norm() / ref_w[n].norm()).item() <= 1e-3, n
    else:  # bf16: rounding differences compound through Adam; the curves must still agree closely
        assert (losses - ref_losses).abs().max().item() <= 5e-2, (losses, ref_losses)
        for n in ref_w:
            diff = (w[n] - ref_w[n]).abs().max().item()
            assert diff <= 2e-2 + 2e-2 * ref_w[n].abs().max().item(), (n, diff)
