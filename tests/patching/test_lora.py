"""LoRA adapters (peft) on patched models: a tiny Qwen3 (dense) and a tiny Qwen3-MoE (LoRA on the attention, the
dense MLP and the experts' 3-D weights through peft's target_parameters), over a few AdamW steps of LoRA-only
training the patched model gives the unpatched model's losses and LoRA gradients (fp32, the tolerances of
test_patching / test_moe_models); the kernels apply under the adapters in either order (patch then wrap, wrap then
patch); and torch.compile(fullgraph=True) of the LoRA-patched model has no graph break, our ops in its graph."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
import ascendc_ops.patching as K  # noqa: E402
from test_moe_models import APPLIED, tiny_moe  # noqa: E402
from test_patching import ALL, VOCAB, ids, tiny  # noqa: E402
from training import CompileRecorder, adamw_steps  # noqa: E402

ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLP = ["gate_proj", "up_proj", "down_proj"]
EXPERTS = ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]  # 3-D parameters: peft's ParamWrapper
STEPS, LR = 4, 1e-3


def with_lora(model, target_parameters=None, seed=3):
    """The same random adapters on any two models built alike: B is random too (init_lora_weights=False), so
    every LoRA weight has a non-zero gradient from the first step."""
    cfg = peft.LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        target_modules=ATTN + MLP,
        target_parameters=target_parameters,
        init_lora_weights=False,
    )
    torch.manual_seed(seed)
    return peft.get_peft_model(model, cfg)


def lora_grads(model):
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    assert grads and all("lora_" in n for n in grads), sorted(grads)  # only the adapters train
    assert all(g is not None for g in grads.values())
    return grads


def train(model):
    """STEPS AdamW steps on the LoRA parameters: the losses and each step's LoRA gradients."""
    data = torch.randint(0, VOCAB, (STEPS, 2, 12), generator=torch.Generator().manual_seed(5))
    grads = []
    losses = adamw_steps(model, data, STEPS, LR, after_step=lambda: grads.append(lora_grads(model)))
    return losses, grads


def assert_same_training(got, ref):
    (losses, grads), (ref_losses, ref_grads) = got, ref
    assert (losses - ref_losses).abs().max().item() <= 1e-5, (losses, ref_losses)
    for step, (g, r) in enumerate(zip(grads, ref_grads, strict=True)):
        assert g.keys() == r.keys()
        for n in r:
            torch.testing.assert_close(g[n], r[n], atol=1e-5, rtol=1e-4, msg=f"step {step}: {n}")


@pytest.mark.parametrize("order", ["patch_then_lora", "lora_then_patch"])
def test_lora_dense_training_matches_unpatched(order):
    ref = train(with_lora(tiny("qwen3")))
    if order == "patch_then_lora":
        base = tiny("qwen3")
        assert K.apply_default_kernels(base).applied == ALL
        model = with_lora(base)
    else:
        model = with_lora(tiny("qwen3"))
        assert K.apply_default_kernels(model).applied == ALL  # the PeftModel itself
    mlp = model.base_model.model.model.layers[0].mlp
    assert "forward" in mlp.__dict__ and isinstance(mlp.gate_proj, peft.tuners.lora.Linear)
    assert_same_training(train(model), ref)


def test_lora_moe_training_matches_unpatched(monkeypatch):
    """Adapters on attention, the dense MLP (layer 1) and the experts' gate_up_proj / down_proj: fused_moe reads
    the experts' weights through the module attribute, so it computes on W + B A as HF's eager experts do."""
    from ascendc_ops.patching import moe as moe_kernel

    ref = train(with_lora(tiny_moe("qwen3_moe"), EXPERTS))
    model = with_lora(tiny_moe("qwen3_moe"), EXPERTS)
    assert K.apply_default_kernels(model).applied == APPLIED["qwen3_moe"]
    calls = []
    fused = moe_kernel.moe_experts
    monkeypatch.setattr(moe_kernel, "moe_experts", lambda *a, **kw: calls.append(1) or fused(*a, **kw))
    got = train(model)
    assert len(calls) == STEPS  # one MoE layer: our experts block ran at every step, under the adapters
    assert any("experts" in n for n in got[1][0]), sorted(got[1][0])  # the experts' adapters did train
    assert_same_training(got, ref)


def test_lora_torch_compile_fullgraph():
    torch._dynamo.reset()
    x = ids()
    ref = with_lora(tiny("qwen3"))
    ref(x, labels=x).loss.backward()
    ref_grads = lora_grads(ref)
    model = with_lora(tiny("qwen3"))
    K.apply_default_kernels(model)
    rec = CompileRecorder()
    compiled = torch.compile(model, fullgraph=True, backend=rec)  # any graph break is an error
    loss = compiled(x, labels=x).loss
    loss.backward()
    assert len(rec.graphs) == 1
    ops = rec.ops()
    for op in ("custom.apply_rotary_pos_emb", "custom.rms_norm", "custom.swiglu", "custom.add_rms_norm"):
        assert any(o.startswith(op) for o in ops), (op, sorted(ops))
    grads = lora_grads(model)
    for n in ref_grads:
        torch.testing.assert_close(grads[n], ref_grads[n], atol=1e-5, rtol=1e-4, msg=n)
    torch._dynamo.reset()
