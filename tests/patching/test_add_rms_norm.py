"""fused_add_rmsnorm: the decoder layers' residual add + post-attention RMSNorm on custom::add_rms_norm.

Per family (the dense and MoE ones tests/patching builds): one layer patched per decoder layer, the op running once
per layer forward and its grad once per layer backward, and fp32 logits and every gradient passing the double
benchmark (coverage._judge: golden = the unpatched model in float64, comparison = it in fp32). The probe refusing
a (1 + w) norm, the plain steps under a hooked norm or mixed dtypes, gradient checkpointing kept, revert."""

from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from ascendc_ops.patching import add_rms_norm as A, coverage  # noqa: E402
from test_moe_models import MOE, tiny_moe  # noqa: E402
from test_patching import CONFIGS, ids, tiny  # noqa: E402
from test_structural import OffsetRMSNorm  # noqa: E402
from training import Calls  # noqa: E402

KERNEL = "fused_add_rmsnorm"


def build(family):
    return tiny(family) if family in CONFIGS else tiny_moe(family)


@pytest.mark.parametrize("family", list(CONFIGS) + list(MOE))
def test_parity_per_family(family):
    model = build(family)
    layers = model.config.num_hidden_layers
    x = ids(seq=12)
    gold = copy.deepcopy(model).double()
    gold_logits, gold_grads = coverage._fwd_bwd(gold, x)
    ref_logits, ref_grads = coverage._fwd_bwd(model, x)
    report = K.apply_kernel(KERNEL, model)
    assert report.applied == [KERNEL] and report.patched_modules[KERNEL] == layers, report
    assert all("forward" in layer.__dict__ for layer in model.model.layers)
    with Calls() as c:
        logits, grads = coverage._fwd_bwd(model, x)
    assert c.calls["custom::add_rms_norm"] == layers and c.calls["custom::add_rms_norm_grad"] == layers, c.calls
    ok, why = coverage._judge(logits, ref_logits, gold_logits)
    assert ok, why
    assert grads.keys() == ref_grads.keys()
    assert not coverage._grad_failures(grads, ref_grads, gold_grads)


def test_with_every_kernel_the_op_replaces_adds_and_norms():
    """Composed with fused_rmsnorm: per layer forward one add and one rms_norm fewer (the post-attention pair)."""
    x = ids()
    counts = {}
    for kernels in ("fused_rmsnorm", "fused_rmsnorm,fused_add_rmsnorm"):
        model = tiny("qwen3")
        K.apply_default_kernels(model, kernels)
        with Calls() as c, torch.no_grad():
            model(x)
        counts[kernels] = c.calls
    before, after = counts.values()
    layers = 2
    assert after["custom::add_rms_norm"] == layers
    assert before["custom::rms_norm"] - after["custom::rms_norm"] == layers
    assert before["aten::add"] - after["aten::add"] == layers


def test_probe_refuses_offset_norm():
    """A (1 + w) post-attention norm: the triple looks right, the probe disagrees, the layer is left as it is."""
    model = tiny("llama")
    for layer in model.model.layers:
        with torch.no_grad():
            odd = OffsetRMSNorm(64)
            odd.weight.normal_(0, 0.1)
        layer.post_attention_layernorm = odd
    x = ids()
    ref = model(x).logits
    report = K.apply_kernel(KERNEL, model)
    assert report.applied == [] and KERNEL in report.skipped
    assert "post_attention_layernorm" in report.skipped[KERNEL]
    assert "differs on the probe" in report.skipped[KERNEL], report
    assert not any("forward" in layer.__dict__ for layer in model.model.layers)
    torch.testing.assert_close(model(x).logits, ref, atol=0, rtol=0)


def test_hooked_norm_and_mixed_dtypes_take_the_plain_steps():
    model = tiny("llama")
    K.apply_kernel(KERNEL, model)
    layer = model.model.layers[0]
    seen = []
    handle = layer.post_attention_layernorm.register_forward_hook(lambda m, i, o: seen.append(o))
    x = ids()
    with Calls() as c, torch.no_grad():
        model(x)
    handle.remove()
    assert len(seen) == 1 and c.calls["custom::add_rms_norm"] == 1  # layer 1 fused, layer 0 ran its hook
    norm = layer.post_attention_layernorm
    r, h = torch.randn(2, 3, 64), torch.randn(2, 3, 64, dtype=torch.bfloat16)
    with Calls() as c:
        y, s = A.add_rms_norm_pair(norm, r, h)
    assert not c.calls["custom::add_rms_norm"]
    torch.testing.assert_close(s, r + h, atol=0, rtol=0)
    torch.testing.assert_close(y, norm(r + h), atol=0, rtol=0)


def test_gradient_checkpointing_kept():
    """The rewritten forward runs inside HF's checkpointing wrapper, re-created around it."""
    x = ids()
    ref = tiny("qwen3")
    ref.gradient_checkpointing_enable()
    ref.train()
    ref(x, labels=x).loss.backward()
    model = tiny("qwen3")
    model.gradient_checkpointing_enable()
    model.train()
    K.apply_kernel(KERNEL, model)
    calls = []
    for layer in model.model.layers:
        fn = layer._gradient_checkpointing_func
        layer._gradient_checkpointing_func = lambda *a, fn=fn, **kw: calls.append(1) or fn(*a, **kw)
    with Calls() as c:
        model(x, labels=x).loss.backward()
    assert len(calls) == 2  # both layers checkpointed
    assert c.calls["custom::add_rms_norm"] == 2 * 2  # forward, then its recomputation in the backward
    for (n, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4, msg=n)


def test_revert_restores_the_layers():
    model = tiny("qwen3")
    before = [dict(layer.__dict__) for layer in model.model.layers]
    K.apply_kernel(KERNEL, model)
    assert K.revert_kernels(model) == [KERNEL]
    for layer, d in zip(model.model.layers, before, strict=True):
        assert layer.__dict__.keys() == d.keys() and all(layer.__dict__[k] is d[k] for k in d)
