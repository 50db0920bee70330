"""Kernel registry + per-instance patching of HF transformers 5 models (tiny random configs, nothing downloaded).

Parity patched vs unpatched (logits, loss, all parameter grads, greedy generate), revert, a second model
untouched, torch.compile(fullgraph=True) with our ops in the graph, partial rotary, per-sequence position ids,
bf16/fp32, Qwen3 q_norm/k_norm, hidden_act != silu, error paths.
"""

from __future__ import annotations

import logging

import pytest
import torch

transformers = pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from training import TINY, VOCAB, CompileRecorder, assert_fp32_step  # noqa: E402

CONFIGS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
    "mistral": ("MistralConfig", "MistralForCausalLM"),
}
ALL = ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_add_rmsnorm"]
SEQ = 16


def tiny(model_type="llama", dtype=torch.float32, seed=0, **over):
    cfg_cls, model_cls = (getattr(transformers, n) for n in CONFIGS[model_type])
    kw = dict(TINY, intermediate_size=96, max_position_embeddings=128)
    if model_type == "qwen3":
        kw["head_dim"] = 16
    kw.update(over)
    torch.manual_seed(seed)
    model = model_cls(cfg_cls(**kw)).to(dtype)
    with torch.no_grad():  # non-trivial norm weights, so a wrong gamma path shows up
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(0.1 * torch.randn_like(p))
    return model


def ids(batch=2, seq=SEQ, seed=1):
    return torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(seed))


def fwd_bwd(model, x, **kw):
    model.zero_grad(set_to_none=True)
    out = model(x, labels=x, **kw)
    out.loss.backward()
    return (
        out.logits.detach().float(),
        out.loss.detach().float(),
        {n.removeprefix("_orig_mod."): p.grad.detach().float().clone() for n, p in model.named_parameters()},
    )


def max_rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


@pytest.mark.parametrize("model_type", list(CONFIGS))
def test_fp32_parity_logits_loss_grads(model_type):
    model = tiny(model_type)
    x = ids()
    ref = fwd_bwd(model, x)
    report = K.apply_default_kernels(model)
    assert report.applied == ALL, report
    assert not report.skipped
    assert_fp32_step(fwd_bwd(model, x), ref)


def test_qwen3_q_norm_k_norm_patched():
    model = tiny("qwen3")
    report = K.apply_kernel("fused_rmsnorm", model)
    attn = model.model.layers[0].self_attn
    assert "forward" in attn.q_norm.__dict__ and "forward" in attn.k_norm.__dict__
    # 2 layers x (input, post-attention, q_norm, k_norm) + final norm
    assert report.patched_modules["fused_rmsnorm"] == 2 * 4 + 1


@pytest.mark.parametrize("model_type", ["llama", "qwen3"])
def test_bf16_parity(model_type):
    model = tiny(model_type, torch.bfloat16)
    x = ids()
    ref_logits, ref_loss, ref_grads = fwd_bwd(model, x)
    K.apply_default_kernels(model)
    logits, loss, grads = fwd_bwd(model, x)
    # Liger-Kernel's bf16 tolerances: loss atol 1e-2; logits/grads to a few bf16 ulps of their scale.
    assert abs(loss - ref_loss).item() <= 1e-2
    assert max_rel(logits, ref_logits) <= 3e-2
    for n in ref_grads:
        assert max_rel(grads[n], ref_grads[n]) <= 6e-2, n


@pytest.mark.parametrize("model_type", ["llama", "qwen3"])
def test_greedy_generate_identical_fp32(model_type):
    model = tiny(model_type).eval()
    prompt = ids(batch=2, seq=6)
    mask = torch.ones_like(prompt)
    kw = dict(attention_mask=mask, max_new_tokens=8, do_sample=False, pad_token_id=0)
    ref = model.generate(prompt, **kw)
    K.apply_default_kernels(model)
    assert torch.equal(model.generate(prompt, **kw), ref)


def test_batch_position_ids_left_padding():
    """Per-sequence position ids ((B, S), B > 1): cos/sin are (B, S, D), the B1SD broadcast of the op."""
    model = tiny("llama").eval()
    x = ids(batch=3)
    pos = torch.stack([torch.arange(SEQ) + off for off in (0, 5, 11)])
    ref = model(x, position_ids=pos).logits
    K.apply_default_kernels(model)
    torch.testing.assert_close(model(x, position_ids=pos).logits, ref, atol=1e-5, rtol=0)
    # left padding through generate's own position ids
    mask = torch.ones(3, SEQ, dtype=torch.long)
    mask[1, :4] = 0
    mask[2, :9] = 0
    K.revert_kernels(model)
    ref = model.generate(x, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0)
    K.apply_default_kernels(model)
    assert torch.equal(model.generate(x, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0), ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_partial_rotary_function(dtype, unsqueeze_dim):
    """cos last dim (R) < head_dim: rotate the first R dims, pass the rest; vs transformers' own partial RoPE."""
    from transformers.models.qwen3_next.modeling_qwen3_next import apply_rotary_pos_emb as ref_rope

    from ascendc_ops.patching.rope import apply_rotary_pos_emb

    B, N, S, D, R = 2, 4, 8, 32, 16
    shape = (B, N, S, D) if unsqueeze_dim == 1 else (B, S, N, D)
    q = torch.randn(shape, dtype=dtype, requires_grad=True)
    k = torch.randn(shape, dtype=dtype, requires_grad=True)
    ang = (torch.arange(S)[None, :, None] + torch.tensor([0, 7])[:, None, None]) * torch.rand(R // 2)
    emb = torch.cat((ang, ang), -1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    outs = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim)
    refs = ref_rope(q, k, cos, sin, unsqueeze_dim)
    tol = dict(atol=1e-6, rtol=1e-5) if dtype == torch.float32 else dict(atol=2e-2, rtol=1e-2)
    for o, r in zip(outs, refs, strict=True):
        torch.testing.assert_close(o, r, **tol)
        assert torch.equal(o[..., R:], r[..., R:])  # the pass-through part is exact
    g = [torch.randn_like(o) for o in outs]
    got = torch.autograd.grad(outs, (q, k), g)
    want = torch.autograd.grad(refs, (q, k), g)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, **tol)


def test_rmsnorm_uses_module_epsilon():
    model = tiny("llama", rms_norm_eps=0.5)  # large eps: a hard-coded 1e-6 would differ visibly
    x = ids()
    ref = model(x).logits
    K.apply_kernel("fused_rmsnorm", model)
    torch.testing.assert_close(model(x).logits, ref, atol=1e-5, rtol=0)
    norm = model.model.norm
    norm.variance_epsilon = 2.0  # read at call time
    h = torch.randn(2, 3, 64)
    want = norm.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 2.0))
    torch.testing.assert_close(norm(h), want, atol=1e-6, rtol=1e-5)


def test_swiglu_skipped_when_hidden_act_not_silu(caplog):
    model = tiny("llama", hidden_act="gelu")
    x = ids()
    ref = model(x).logits
    report = K.apply_default_kernels(model)
    assert report.applied == ["fused_rope", "fused_rmsnorm", "fused_add_rmsnorm"]
    assert "silu" in report.skipped["fused_swiglu"] and "gelu" in report.skipped["fused_swiglu"]
    assert "forward" not in model.model.layers[0].mlp.__dict__
    torch.testing.assert_close(model(x).logits, ref, atol=1e-5, rtol=0)
    with caplog.at_level(logging.WARNING, logger="ascendc_ops.patching"):
        r = K.apply_kernel("fused_swiglu", tiny("llama", hidden_act="gelu"))
    assert r.applied == [] and "silu" in caplog.text


def test_swiglu_one_matmul_mode_grads_reach_original_params(monkeypatch):
    from ascendc_ops.patching import swiglu as ks

    model = tiny("mistral")
    x = ids()
    ref_logits, _, ref_grads = fwd_bwd(model, x)
    monkeypatch.setattr(ks, "GATE_UP_MODE", "matmul")
    K.apply_kernel("fused_swiglu", model)
    names = [n for n, _ in model.named_parameters()]
    logits, _, grads = fwd_bwd(model, x)
    assert [n for n, _ in model.named_parameters()] == names  # no new parameters: optimizer/state_dict unchanged
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=0)
    for n in ref_grads:
        torch.testing.assert_close(grads[n], ref_grads[n], atol=1e-5, rtol=1e-4, msg=n)


def _instance_state(model):
    return {name: dict(m.__dict__) for name, m in model.named_modules()}


def test_revert_restores_exactly_and_second_model_untouched():
    from transformers.models.llama import modeling_llama

    global_fn = modeling_llama.apply_rotary_pos_emb
    cls_forwards = {
        c: c.forward for c in (modeling_llama.LlamaAttention, modeling_llama.LlamaRMSNorm, modeling_llama.LlamaMLP)
    }
    a, b = tiny("llama", seed=0), tiny("llama", seed=1)
    x = ids()
    ref_a, ref_b = a(x).logits.detach(), b(x).logits.detach()
    before_a, before_b = _instance_state(a), _instance_state(b)
    K.apply_default_kernels(a)
    assert K.applied_kernels(a) == ALL and K.applied_kernels(b) == []
    assert "forward" in a.model.layers[0].self_attn.__dict__
    # the class, the module global and the other model are untouched
    assert modeling_llama.apply_rotary_pos_emb is global_fn
    assert all(c.forward is f for c, f in cls_forwards.items())
    assert _instance_state(b) == before_b
    assert torch.equal(b(x).logits, ref_b)
    # a model built after patching is untouched too
    c = tiny("llama", seed=1)
    assert not any("forward" in m.__dict__ for m in c.modules())
    assert K.revert_kernels(a) == ALL
    after = _instance_state(a)
    assert after.keys() == before_a.keys()
    for name in before_a:
        assert after[name].keys() == before_a[name].keys(), name
        assert all(after[name][k] is before_a[name][k] for k in before_a[name]), name
    assert torch.equal(a(x).logits, ref_a)  # bit-identical to the original behaviour
    # partial revert and re-apply
    K.apply_default_kernels(a, "fused_rmsnorm,fused_swiglu")
    assert K.revert_kernels(a, "fused_swiglu") == ["fused_swiglu"]
    assert K.applied_kernels(a) == ["fused_rmsnorm"]
    assert K.apply_default_kernels(a).skipped == {"fused_rmsnorm": "already applied to this model"}
    K.revert_kernels(a)
    assert torch.equal(a(x).logits, ref_a)


def test_include_kernels_forms_and_errors(caplog):
    model = tiny("qwen2")
    assert K.apply_default_kernels(model, None).applied == []
    assert K.apply_default_kernels(model, "fused_rope , fused_swiglu").applied == ["fused_rope", "fused_swiglu"]
    K.revert_kernels(model)
    assert K.apply_default_kernels(model, True).applied == ALL
    with pytest.raises(ValueError, match="unknown kernel id 'fused_nope'.*fused_rope"):
        K.apply_kernel("fused_nope", model)
    with pytest.raises(ValueError, match="unknown kernel id"):
        K.apply_default_kernels(tiny("qwen2"), "fused_rope,fused_nope")
    # fused_attention and fused_linear_cross_entropy would patch it too (list_kernels: what could apply), by id only
    by_id = ["fused_attention", "fused_linear_cross_entropy"]
    assert set(K.list_kernels()) >= set(ALL) and K.list_kernels(model) == [*ALL, *by_id]
    # a model with none of the parts: warning, nothing patched, each kernel saying what it looked for
    other = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, n_positions=32)
    )
    with caplog.at_level(logging.WARNING, logger="ascendc_ops.patching"):
        report = K.apply_default_kernels(other)
    assert report.applied == [] and set(report.skipped) == {k for k, kernel in K.KERNELS.items() if kernel.auto}
    assert "no attention module calling apply_rotary_pos_emb found in this gpt2 model" in report.skipped["fused_rope"]
    assert "gpt2" in caplog.text
    with caplog.at_level(logging.WARNING, logger="ascendc_ops.patching"):
        assert K.apply_kernel("fused_rmsnorm", other).applied == []
    assert not any("forward" in m.__dict__ for m in other.modules())


@pytest.mark.parametrize("model_type", ["llama", "qwen3"])
def test_torch_compile_fullgraph_train_step(model_type):
    torch._dynamo.reset()
    model = tiny(model_type)
    x = ids()
    ref_logits, ref_loss, ref_grads = fwd_bwd(model, x)
    K.apply_default_kernels(model)
    rec = CompileRecorder()
    compiled = torch.compile(model, fullgraph=True, backend=rec)  # fullgraph: any graph break is an error
    logits, loss, grads = fwd_bwd(compiled, x)
    assert len(rec.graphs) == 1
    ops = rec.ops()
    for op in ("custom.apply_rotary_pos_emb", "custom.rms_norm", "custom.swiglu", "custom.add_rms_norm"):
        assert any(o.startswith(op) for o in ops), (op, ops)
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=0)
    for n in ref_grads:
        torch.testing.assert_close(grads[n], ref_grads[n], atol=1e-5, rtol=1e-4, msg=n)
    torch._dynamo.reset()


@pytest.mark.slow
def test_torch_compile_inductor_default_backend():
    """The default torch.compile backend (inductor, C++ codegen on CPU; ~15 s) on a patched Qwen3."""
    torch._dynamo.reset()
    model = tiny("qwen3")
    x = ids()
    ref_logits, _, ref_grads = fwd_bwd(model, x)
    K.apply_default_kernels(model)
    logits, _, grads = fwd_bwd(torch.compile(model, fullgraph=True), x)
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=0)
    for n in ref_grads:
        torch.testing.assert_close(grads[n], ref_grads[n], atol=1e-5, rtol=1e-4, msg=n)
    torch._dynamo.reset()
