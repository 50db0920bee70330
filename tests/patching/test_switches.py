"""The switches users expect: LLaMA-Factory's kernel ids as aliases of ours, and turning single fusions off
(ASCENDC_OPS_DISABLE, disable_kernels=, openMind-style use_fused_*=False), each skip reported with its switch."""

from __future__ import annotations

import inspect
import logging

import pytest
import torch
from torch import nn

pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from test_moe_models import tiny_moe  # noqa: E402
from test_patching import ALL, fwd_bwd, ids, tiny  # noqa: E402

LLAMA_FACTORY = {  # LLaMA-Factory's KernelPlugin ids (its v1 kernels/ops/*) -> ours
    "npu_fused_rmsnorm": "fused_rmsnorm",
    "npu_fused_swiglu": "fused_swiglu",
    "npu_fused_rope": "fused_rope",
    "npu_fused_moe": "fused_moe",
}


@pytest.fixture(autouse=True)
def no_env_switch(monkeypatch):
    monkeypatch.delenv(K.DISABLE_ENV, raising=False)


def _patched_state(model):
    return {n: "forward" in m.__dict__ for n, m in model.named_modules()}


@pytest.mark.parametrize("alias", [a for a in LLAMA_FACTORY if a != "npu_fused_moe"])
def test_alias_applies_the_same_kernel(alias):
    ours = LLAMA_FACTORY[alias]
    assert K.ALIASES[alias] == ours and K.canonical_id(alias) == ours
    a, b = tiny("qwen3"), tiny("qwen3")
    x = ids()
    ref = fwd_bwd(a, x)
    ra, rb = K.apply_kernel(alias, a), K.apply_kernel(ours, b)
    assert ra.applied == rb.applied == [ours] and ra.patched_modules == rb.patched_modules
    assert K.applied_kernels(a) == [ours] and _patched_state(a) == _patched_state(b)
    logits, loss, grads = fwd_bwd(a, x)
    assert torch.equal(logits, fwd_bwd(b, x)[0])  # the same kernel: the same bits
    assert (logits - ref[0]).abs().max().item() <= 1e-5 and abs(loss - ref[1]).item() <= 1e-5
    assert K.apply_kernel(ours, a).skipped == {ours: "already applied to this model"}
    assert K.revert_kernels(a, alias) == [ours] and K.applied_kernels(a) == []


def test_moe_alias_and_include_kernels_mixed():
    model = tiny_moe("qwen3_moe")
    report = K.apply_default_kernels(model, "npu_fused_moe, npu_fused_rope ,fused_rope,npu_fused_rmsnorm")
    assert report.applied == ["fused_moe", "fused_rope", "fused_rmsnorm"] and not report.skipped  # each once
    assert K.applied_kernels(model) == report.applied
    with pytest.raises(ValueError, match=r"unknown kernel id 'npu_fused_nope'.*npu_fused_rope -> fused_rope"):
        K.apply_kernel("npu_fused_nope", model)


def test_env_switch_skips_with_reason(monkeypatch, caplog):
    monkeypatch.setenv(K.DISABLE_ENV, "fused_rope, npu_fused_moe")
    model = tiny_moe("qwen3_moe")
    x = ids()
    with caplog.at_level(logging.WARNING, logger="ascendc_ops.patching"):
        report = K.apply_default_kernels(model)
    assert report.applied == ["fused_rmsnorm", "fused_swiglu", "fused_add_rmsnorm"]
    why = f"disabled by {K.DISABLE_ENV}=fused_rope,npu_fused_moe"
    assert report.skipped == {"fused_rope": why, "fused_moe": why}
    assert why in str(report)
    assert model.config._experts_implementation == "eager"  # fused_moe not applied
    assert not any("forward" in m.__dict__ for m in (model.model.layers[0].self_attn, model.model.layers[1].self_attn))
    # an explicit apply_kernel is turned off too, with a warning that names the switch
    with caplog.at_level(logging.WARNING, logger="ascendc_ops.patching"):
        assert K.apply_kernel("fused_rope", model).skipped == {"fused_rope": why}
    assert K.DISABLE_ENV in caplog.text
    model(x, labels=x).loss.backward()  # the partly patched model still runs
    monkeypatch.setenv(K.DISABLE_ENV, "")  # read at each call
    assert K.apply_default_kernels(model).applied == ["fused_rope", "fused_moe"]


def test_argument_and_use_flags_skip_with_reason():
    report = K.apply_default_kernels(tiny("llama"), disable_kernels=["npu_fused_swiglu"])
    assert report.applied == ["fused_rope", "fused_rmsnorm", "fused_add_rmsnorm"]
    assert report.skipped == {"fused_swiglu": "disabled by disable_kernels=npu_fused_swiglu"}
    report = K.apply_default_kernels(tiny("llama"), use_fused_rms_norm=False, use_fused_rope=True)
    assert report.applied == ["fused_rope", "fused_swiglu", "fused_add_rmsnorm"]
    assert report.skipped == {"fused_rmsnorm": "disabled by use_fused_rms_norm=False"}
    report = K.apply_default_kernels(tiny("llama"), use_fused_add_rms_norm=False)
    assert report.applied == ["fused_rope", "fused_rmsnorm", "fused_swiglu"]
    assert report.skipped == {"fused_add_rmsnorm": "disabled by use_fused_add_rms_norm=False"}
    # a switch beats include_kernels; nothing disabled: everything as before
    report = K.apply_default_kernels(tiny("llama"), "fused_rope,fused_swiglu", disable_kernels="fused_rope")
    assert report.applied == ["fused_swiglu"] and "disable_kernels=fused_rope" in report.skipped["fused_rope"]
    assert K.apply_default_kernels(tiny("llama"), disable_kernels="").applied == ALL


def test_bad_switches_fail_before_patching(monkeypatch):
    model = tiny("llama")
    with pytest.raises(ValueError, match="disable_kernels=fused_nope: unknown kernel id 'fused_nope'"):
        K.apply_default_kernels(model, disable_kernels="fused_nope")
    monkeypatch.setenv(K.DISABLE_ENV, "rope")
    with pytest.raises(ValueError, match=f"{K.DISABLE_ENV}=rope: unknown kernel id 'rope'"):
        K.apply_kernel("fused_rmsnorm", model)
    assert K.applied_kernels(model) == []


def test_keyword_switches_are_the_registrys():
    """apply_default_kernels' keyword parameters are the registry's switches, in its order, each one working;
    LLaMA-Factory's ids are the registry's aliases."""
    assert K.ALIASES == LLAMA_FACTORY
    params = inspect.signature(K.apply_default_kernels).parameters
    written = ["model", "include_kernels", "disable_kernels"]
    assert list(params) == written + [k.switch for k in K.KERNELS.values() if k.switch]
    assert list(K.USE_FLAGS) == list(params)[len(written) :]
    assert {"use_fused_rope", "use_fused_rms_norm", "use_fused_swiglu", "use_fused_moe"} <= set(params)  # openMind's
    for kernel in K.KERNELS.values():
        assert params[kernel.switch].kind is inspect.Parameter.KEYWORD_ONLY and params[kernel.switch].default is None
        report = K.apply_default_kernels(nn.Linear(2, 2), kernel.id, **{kernel.switch: False})
        assert report.skipped == {kernel.id: f"disabled by {kernel.switch}=False"}
    with pytest.raises(TypeError, match="unexpected keyword argument 'use_fused_nope'.*use_fused_rope"):
        K.apply_default_kernels(nn.Linear(2, 2), use_fused_nope=False)


def test_a_registered_kernel_brings_its_alias_and_switch():
    def find(model):
        return K.Found(looked_for="nothing")

    kernel = K.Kernel("fused_nothing", ("cpu-twin",), find, lambda m, t: [], alias="npu_nothing", switch="use_nothing")
    K.register_kernel(kernel)
    try:
        assert inspect.signature(K.apply_default_kernels).parameters["use_nothing"].default is None
        assert K.canonical_id("npu_nothing") == "fused_nothing"
        report = K.apply_default_kernels(tiny("llama"), use_nothing=False)
        assert report.applied == ALL and report.skipped == {"fused_nothing": "disabled by use_nothing=False"}
        with pytest.raises(ValueError, match="'use_fused_rope' already names kernel 'fused_rope'"):
            K.register_kernel(K.Kernel("fused_other", ("cpu-twin",), find, kernel.patch, switch="use_fused_rope"))
        with pytest.raises(ValueError, match="'npu_fused_rope' is both an id and an alias"):
            K.register_kernel(K.Kernel("npu_fused_rope", ("cpu-twin",), find, kernel.patch))
    finally:
        assert K.unregister_kernel("npu_nothing") is kernel
    assert "use_nothing" not in inspect.signature(K.apply_default_kernels).parameters
    assert "npu_nothing" not in K.ALIASES and "fused_nothing" not in K.KERNELS and "fused_other" not in K.KERNELS
