"""The HF patching on transformers versions it does not patch: every kernel skips with the reason, the model
stays untouched. On 4.x (tools/wheel_check.sh installs 4.57.6) it runs as is; on 5.x the version is faked."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from ascendc_ops.patching import base  # noqa: E402


def tiny_llama():
    cfg = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    return transformers.LlamaForCausalLM(cfg)


@pytest.fixture
def transformers4(monkeypatch):
    if int(transformers.__version__.split(".")[0]) >= 5:
        monkeypatch.setattr(base, "transformers_version", lambda: "4.57.6")
    return base.transformers_version()


def test_every_kernel_skips_on_transformers_4(transformers4):
    model = tiny_llama()
    x = torch.randint(0, 64, (1, 8))
    with torch.no_grad():
        before = model(x).logits
    report = K.apply_default_kernels(model, include_kernels=list(K.KERNELS))  # "auto" leaves fused_attention out
    assert report.applied == [] and set(report.skipped) == set(K.KERNELS)
    for why in report.skipped.values():
        assert f"transformers {transformers4} is installed" in why and "transformers 5" in why
    assert not [n for n, m in model.named_modules() if "forward" in m.__dict__]
    with torch.no_grad():
        assert torch.equal(model(x).logits, before)
    assert K.apply_kernel("fused_moe", model).applied == []


def test_transformers_5_is_patched():
    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip(f"transformers {transformers.__version__}: the kernels skip there (test above)")
    assert K.apply_default_kernels(tiny_llama()).applied == [
        "fused_rope",
        "fused_rmsnorm",
        "fused_swiglu",
        "fused_add_rmsnorm",
    ]
