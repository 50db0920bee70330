"""fused_attention: HF attention layers on custom::fusion_attention through transformers' attention interface.

Inference parity against the unpatched model (logits by the fp32 double benchmark, coverage._judge: golden = the
unpatched model in float64) for Llama, Qwen2 (GQA) and Mistral with a sliding window shorter than the sequence;
the op running once per layer; greedy generation with a KV cache (tokens identical), a left-padded batch, packed
sequences (position_ids restarting: HF's block mask; a flattening collator's cu_seq_lens: TND), user 4-D float
masks, bf16, torch.compile(fullgraph=True); Gemma 2's softcapping; what is refused (a bias mask or a mask of another
shape at call time, on HF's sdpa) and revert. Training: gradient parity (every layer's backward on
custom::fusion_attention_grad) and 20 AdamW steps in lockstep with the unpatched model."""

from __future__ import annotations

import copy
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from ascendc_ops.patching import attention as A, coverage  # noqa: E402
from test_patching import ALL, fwd_bwd, ids, max_rel, tiny  # noqa: E402
from training import Calls, CompileRecorder, assert_fp32_step, lockstep  # noqa: E402

KERNEL = "fused_attention"
FAMILIES = {"llama": {}, "qwen2": {}, "mistral": {"sliding_window": 5}}


def build(family, **over):
    return tiny(family, **{**FAMILIES[family], **over}).eval()


def patched(model):
    report = K.apply_kernel(KERNEL, model)
    assert report.applied == [KERNEL], report
    return model


def logits(model, x, **kw):
    with torch.no_grad():
        return model(x, **kw).logits.double()


def assert_parity(ours, ref, gold, where=(...,)):
    ok, why = coverage._judge(*(t[where].numpy() for t in (ours, ref, gold)))
    assert ok, why


@pytest.mark.parametrize("family", list(FAMILIES))
def test_logits_parity_and_op_per_layer(family):
    model = build(family)
    x = ids(seq=12)
    gold = logits(copy.deepcopy(model).double(), x)
    ref = logits(model, x)
    patched(model)
    A.FALLBACKS.clear()
    with Calls() as c:
        ours = logits(model, x)
    assert c.calls["custom::fusion_attention"] == model.config.num_hidden_layers and not A.FALLBACKS, c.calls
    assert_parity(ours, ref, gold)


@pytest.mark.parametrize("family", ["llama", "mistral"])
def test_bf16_logits(family):
    """bf16 models, the op in bf16 (P in bf16, fp32 accumulation): test_patching's bf16 bound (Liger-Kernel's)."""
    model = build(family, dtype=torch.bfloat16)
    x = ids(seq=12)
    ref = logits(model, x)
    with Calls() as c:
        ours = logits(patched(model), x)
    assert c.calls["custom::fusion_attention"] == model.config.num_hidden_layers
    assert max_rel(ours, ref) <= 3e-2


def test_a_mask_of_another_shape_runs_sdpa():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 4, 16, generator=gen) for _ in range(3))
    wide = torch.ones(1, 1, 4, 6, dtype=torch.bool)  # more key columns than keys
    A.FALLBACKS.clear()
    with pytest.raises(RuntimeError):  # sdpa refuses it too: never our op on a mask it would misread
        A.fused_attention_forward(torch.nn.Module(), q, k, v, wide, scaling=0.25)
    assert list(A.FALLBACKS) == ["a mask of shape (1, 1, 4, 6)"]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_left_padded_batch(family):
    model = build(family)
    x = ids(batch=3, seq=10)
    mask = torch.ones_like(x)
    mask[1, :3] = 0
    mask[2, :7] = 0
    gold = logits(copy.deepcopy(model).double(), x, attention_mask=mask)
    ref = logits(model, x, attention_mask=mask)
    ours = logits(patched(model), x, attention_mask=mask)
    real = mask.bool()  # padded query rows see no key: sdpa and our op give 0 there, eager an average
    assert_parity(ours, ref, gold, (real,))


@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "left_padded"])
@pytest.mark.parametrize("cache", ["dynamic", "static"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_greedy_generation_with_cache(family, cache, padded):
    """Unpadded: HF passes no mask (prefill: sdpa's top-left is_causal, also into a static cache longer than the
    prompt; decode: one query, no mask); left-padded: the prefill and every decode step carry a bool mask."""
    model = build(family)
    x = ids(batch=2, seq=6)
    mask = torch.ones_like(x)
    if padded:
        mask[1, :2] = 0
    kw = dict(max_new_tokens=10, do_sample=False, pad_token_id=0, attention_mask=mask, cache_implementation=cache)
    with torch.no_grad():
        ref = model.generate(x, **kw)
        ours = patched(model).generate(x, **kw)
    assert torch.equal(ours, ref)


def test_chunked_prefill_against_a_cache():
    """Sq > 1 queries after cached keys: HF's mask is bottom-right aligned and reaches us as a bool mask."""
    model = build("qwen2")
    x = ids(batch=1, seq=12)
    ref = logits(model, x)
    patched(model)
    with torch.no_grad():
        out = model(x[:, :5], use_cache=True)
        second = model(x[:, 5:], past_key_values=out.past_key_values, use_cache=True).logits.double()
    torch.testing.assert_close(second, ref[:, 5:], atol=1e-5, rtol=1e-4)


def _packed_inputs(lengths):
    x = ids(batch=1, seq=sum(lengths), seed=3)
    pos = torch.cat([torch.arange(n) for n in lengths]).unsqueeze(0)
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    return x, pos, cu


@pytest.mark.parametrize("collator_kwargs", [False, True], ids=["position_ids", "cu_seq_lens"])
def test_packed_sequences(collator_kwargs):
    lengths = [5, 3, 8]
    model = build("llama")
    x, pos, cu = _packed_inputs(lengths)
    alone = torch.cat([logits(model, s) for s in x.split(lengths, dim=1)], dim=1)  # each sequence by itself
    kw = {"position_ids": pos, "use_cache": False}  # HF looks for packing only without a cache
    if collator_kwargs:
        kw.update(cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=max(lengths), max_length_k=max(lengths))
    patched(model)
    with Calls() as c:
        ours = logits(model, x, **kw)
    assert c.calls["custom::fusion_attention"] == model.config.num_hidden_layers
    torch.testing.assert_close(ours, alone, atol=1e-5, rtol=1e-4)


def test_cu_seq_lens_run_tnd():
    lengths = [4, 9]
    x, pos, cu = _packed_inputs(lengths)
    seen = []
    model = patched(build("llama"))
    kw = dict(use_cache=False, position_ids=pos, cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=9, max_length_k=9)
    with pytest.MonkeyPatch.context() as mp:
        _spy_args(mp, seen)
        logits(model, x, **kw)
    assert [a[0] for a in seen] == ["TND"] * model.config.num_hidden_layers
    assert seen[0][5:] == ([4, 13], [4, 13], 3)


def _spy_args(mp, seen):
    real = torch.ops.custom.fusion_attention.default

    def spy(*args, **kw):  # kw: softcap
        seen.append(args[4:])
        return real(*args, **kw)

    mp.setattr(torch.ops.custom.fusion_attention, "default", spy)


def test_sliding_window_band():
    """Mistral's window of 5 over 12 tokens: the mask and the band pre_tockens 4 / next_tockens 0 together."""
    model = patched(build("mistral"))
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        _spy_args(mp, seen)
        logits(model, ids(seq=12), use_cache=False)
    assert [a[3:5] for a in seen] == [(4, 0)] * 2 and all(a[1] is not None for a in seen), seen


def test_band_only_where_the_mask_agrees():
    """A sliding_window kwarg whose mask does not mask outside the window (a plain causal mask): no band."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8, 16, generator=gen) for _ in range(3))
    causal = torch.ones(8, 8, dtype=torch.bool).tril().expand(1, 1, 8, 8)
    module = torch.nn.Module()
    module.is_causal = True
    ours, _ = A.fused_attention_forward(module, q, k, v, causal, scaling=0.25, sliding_window=3)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal, scale=0.25)
    torch.testing.assert_close(ours, ref.transpose(1, 2), atol=1e-5, rtol=1e-5)


def test_user_float_masks():
    """A prepared 4-D additive mask of 0 / -inf runs on our op; one carrying a bias falls back to sdpa."""
    model = build("llama")
    x = ids(batch=2, seq=8)
    causal = torch.full((8, 8), float("-inf")).triu(1)
    mask4 = causal.expand(2, 1, 8, 8).clone()
    ref = logits(model, x, attention_mask=mask4)
    patched(model)
    A.FALLBACKS.clear()
    torch.testing.assert_close(logits(model, x, attention_mask=mask4), ref, atol=1e-5, rtol=1e-4)
    assert not A.FALLBACKS
    biased = mask4 + 0.5 * torch.tril(torch.ones(8, 8))
    ours_b = logits(model, x, attention_mask=biased)
    K.revert_kernels(model)
    ref_b = logits(model, x, attention_mask=biased)
    assert torch.equal(ours_b, ref_b)
    assert list(A.FALLBACKS) == ["a float mask with values other than 0 and -inf (a bias, not a mask)"]


def assert_training_parity(model) -> dict:
    """Logits and every parameter's gradient of the patched model against the unpatched one (float64 golden),
    every layer's forward and backward on our ops, no fallback; returns the gradients."""
    x = ids(seq=12)
    gold_logits, gold_grads = coverage._fwd_bwd(coverage.golden_model(model), x)
    ref_logits, ref_grads = coverage._fwd_bwd(model, x)
    assert K.apply_kernel(KERNEL, model).applied == [KERNEL]
    A.FALLBACKS.clear()
    with Calls() as c:
        ours_logits, grads = coverage._fwd_bwd(model, x)
    layers = model.config.num_hidden_layers
    assert c.calls["custom::fusion_attention"] == layers and c.calls["custom::fusion_attention_grad"] == layers
    assert not A.FALLBACKS, A.FALLBACKS
    ok, why = coverage._judge(ours_logits, ref_logits, gold_logits)
    assert ok, why
    assert grads.keys() == ref_grads.keys()
    assert not coverage._grad_failures(grads, ref_grads, gold_grads)
    return grads


@pytest.mark.parametrize("family", list(FAMILIES))
def test_gradient_parity(family):
    assert_training_parity(tiny(family, **FAMILIES[family]))


def test_twenty_training_steps_lockstep():
    """20 AdamW steps of the unpatched model; at each, the patched copy's loss and gradients match (fp32 bounds
    of test_convergence)."""
    ref, ours = tiny("qwen2"), tiny("qwen2")
    K.apply_kernel(KERNEL, ours)
    data = torch.randint(0, 128, (4, 2, 16), generator=torch.Generator().manual_seed(1))

    def compare(x):
        got, want = fwd_bwd(ours, x), fwd_bwd(ref, x)
        assert_fp32_step(got, want)
        return want[1].item()

    losses = lockstep(ref, ours, data, compare)
    assert losses[-1] < losses[0] - 0.5, losses


def test_torch_compile_fullgraph_inference():
    torch._dynamo.reset()
    model = build("qwen2")
    x = ids(seq=12)
    ref = logits(model, x)
    report = K.apply_default_kernels(model, include_kernels=[*ALL, KERNEL])  # with the other kernels
    assert report.applied == [*ALL, KERNEL], report
    rec = CompileRecorder()
    with torch.no_grad():
        out = torch.compile(model, fullgraph=True, backend=rec)(x).logits.double()  # a graph break is an error
    ops = rec.ops()
    assert len(rec.graphs) == 1, len(rec.graphs)
    for op in ("custom.fusion_attention", "custom.apply_rotary_pos_emb", "custom.rms_norm", "custom.add_rms_norm"):
        assert any(o.startswith(op) for o in ops), (op, sorted(ops))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    torch._dynamo.reset()


def test_gemma2_softcapping_runs_in_the_kernel():
    """Gemma 2 caps its attention scores (attn_logit_softcapping, small here so tanh bends them): every layer on
    our op with its softcap, logits and every gradient against the unpatched model (float64 golden)."""
    cfg = transformers.Gemma2Config(
        vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=64, attn_logit_softcapping=0.5,
    )  # fmt: skip
    cfg._attn_implementation = "eager"  # the reference: transformers 5.8's default, sdpa, ignores softcap
    torch.manual_seed(0)
    assert_training_parity(transformers.Gemma2ForCausalLM(cfg))


def _gpt_oss(seed=0):
    cfg = transformers.GptOssConfig(
        vocab_size=128, hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=5,
        max_position_embeddings=64, layer_types=["sliding_attention", "full_attention"],
    )  # fmt: skip
    torch.manual_seed(seed)
    model = transformers.GptOssForCausalLM(cfg)
    with torch.no_grad():  # sinks of both signs and sizes, so each head's weight on its sink differs
        for layer in model.model.layers:
            layer.self_attn.sinks.copy_(torch.tensor([-2.0, 0.0, 1.0, 3.0]))
    return model


def test_gpt_oss_sinks_run_in_the_kernel():
    """gpt-oss passes its sinks as s_aux: every layer (sliding and full) on our op with them, logits and every
    gradient (the sinks' too) against the unpatched model (float64 golden)."""
    grads = assert_training_parity(_gpt_oss())
    assert any("sinks" in name for name in grads)


def test_a_sink_call_that_falls_back_runs_the_models_eager():
    """sdpa ignores s_aux: a gpt-oss call we do not take (dropout > 0 here) runs the model's own eager attention,
    with sdpa's boolean / is_causal mask made additive."""
    module = _gpt_oss().model.layers[0].self_attn.eval()
    gen = torch.Generator().manual_seed(3)
    q, k, v = (
        torch.randn(1, 4, 6, 16, generator=gen),
        torch.randn(1, 2, 6, 16, generator=gen),
        torch.randn(1, 2, 6, 16, generator=gen),
    )
    eager = sys.modules[type(module).__module__].eager_attention_forward
    causal = torch.zeros(6, 6).masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), torch.finfo(torch.float32).min)
    want = eager(module, q, k, v, causal, dropout=0.0, scaling=0.25)[0]
    A.FALLBACKS.clear()
    got = A.fused_attention_forward(module, q, k, v, None, dropout=0.5, scaling=0.25, s_aux=module.sinks)[0]
    assert A.FALLBACKS["dropout=0.5"] == 1
    torch.testing.assert_close(got, want)


def test_not_in_auto_and_revert_restores_the_previous_implementation():
    model = build("llama")
    model.config._attn_implementation = "eager"
    assert KERNEL not in K.apply_default_kernels(model).applied
    K.revert_kernels(model)
    report = K.apply_default_kernels(model, include_kernels=KERNEL)
    assert report.applied == [KERNEL] and report.patched_modules[KERNEL] == 2, report
    assert model.config._attn_implementation == A.ATTN_IMPL
    assert K.revert_kernels(model) == [KERNEL]
    assert model.config._attn_implementation == "eager"
    assert K.apply_default_kernels(model, include_kernels=KERNEL, use_fused_attention=False).applied == []
