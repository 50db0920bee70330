"""Convergence over 20 AdamW steps with and without the kernels (tiny random configs, nothing downloaded).

Free-running curves are chaotic at rounding level (Adam divides each gradient by its own size, so a ~0
gradient entry steps +-lr on noise), so two checks: lockstep -- at each step of eager's training the
kernels' model takes eager's weights and must give its loss and gradients, at the single-step parity
bounds -- and free-running -- both learn and their curves agree to 1% of the loss eager has shed.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from test_patching import ALL, VOCAB, fwd_bwd, max_rel, tiny  # noqa: E402
from training import adamw_steps, assert_fp32_step, lockstep  # noqa: E402

STEPS = 20
FP32_T = 2.0**-13  # the Ascend fp32 relative-error threshold (MERE; docs' accuracy standards)
CASES = [("llama", torch.float32), ("qwen3", torch.float32), ("llama", torch.bfloat16)]


def batches(seed=0):
    """A learnable stream: a fixed small set of sequences, so the loss falls well within 20 steps."""
    return torch.randint(0, VOCAB, (4, 2, 16), generator=torch.Generator().manual_seed(seed + 1))


def train(model_type, dtype, kernels, seed=0):
    model = tiny(model_type, dtype, seed=seed)
    if kernels:
        assert K.apply_default_kernels(model).applied == ALL
    return adamw_steps(model, batches(seed), STEPS, lr=3e-3)


def assert_step_parity(got, want, dtype):
    if dtype == torch.float32:
        assert_fp32_step(got, want)
    else:  # test_patching's bf16 parity bounds (Liger-Kernel's)
        (logits, loss, grads), (ref_logits, ref_loss, ref_grads) = got, want
        assert abs(loss - ref_loss).item() <= 1e-2 and max_rel(logits, ref_logits) <= 3e-2
        for n in ref_grads:
            assert max_rel(grads[n], ref_grads[n]) <= 6e-2, n


@pytest.mark.parametrize("model_type,dtype", CASES)
def test_twenty_steps_lockstep(model_type, dtype):
    ref, ours = tiny(model_type, dtype), tiny(model_type, dtype)
    K.apply_default_kernels(ours)

    def compare(x):
        got, want = fwd_bwd(ours, x), fwd_bwd(ref, x)
        assert_step_parity(got, want, dtype)
        return want[1].item()

    losses = lockstep(ref, ours, batches(), compare, STEPS)
    assert losses[-1] < losses[0] - 0.5, losses  # the trajectory compared is a real training


@pytest.mark.parametrize("model_type,dtype", CASES)
def test_twenty_steps_learn_as_eager(model_type, dtype):
    ref_losses = train(model_type, dtype, kernels=False)
    losses = train(model_type, dtype, kernels=True)
    assert ref_losses[-1] < ref_losses[0] - 0.5 and losses[-1] < losses[0] - 0.5, (ref_losses, losses)
    shed = (ref_losses[0] - ref_losses).clamp_min(0)
    floor = FP32_T if dtype == torch.float32 else 2.0**-7  # the dtype's relative threshold (same standards)
    assert ((losses - ref_losses).abs() <= 0.01 * shed + floor * ref_losses.abs()).all(), losses - ref_losses
