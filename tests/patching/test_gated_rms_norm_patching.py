"""fused_gated_rmsnorm: HF's gated RMSNorm modules (``norm(x) * silu(gate)``) patched by structure and probe.

Per family (tiny random models of the pinned transformers): inference logits on custom::gated_rms_norm and
training gradients against the unpatched model (the fp32 double benchmark, golden = the unpatched model in
float64); the families whose gated norm computes something else are refused with the probe's reason (sigmoid
gates, the gate before a per-group norm); negative controls on hand-made modules; gate=None and odd gates on the
class forward; bf16 against the float64 golden for the roundings that differ (Falcon-H1's strict fp32 norm).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

pytest.importorskip("transformers")
from pinned import only_pinned  # noqa: E402

import ascendc_ops.patching as K  # noqa: E402
from ascendc_ops.patching import coverage, gated_rms_norm as gated  # noqa: E402
from ascendc_ops.precision import check_mere_mare, check_ratio  # noqa: E402
from test_patching import ALL, tiny  # noqa: E402

pytestmark = only_pinned  # the families of the pinned transformers

KERNEL = "fused_gated_rmsnorm"


@pytest.fixture(autouse=True)
def no_env_switch(monkeypatch):
    monkeypatch.delenv(K.DISABLE_ENV, raising=False)


def family_model(model_type: str, **config):
    """coverage's tiny model of the type (shrunk defaults, random norm weights), with config overrides."""
    import transformers

    cfg = coverage.tiny_config(model_type)
    for k, v in config.items():
        setattr(cfg, k, v)
    torch.manual_seed(coverage.SEED)
    model = getattr(transformers, coverage.decoder_types()[model_type])(cfg).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.train(False)


def gated_norms(model) -> list[nn.Module]:
    return [m for m in model.modules() if gated.is_gated_candidate(m)]


def _logits(model, x):
    with torch.no_grad():
        return model(input_ids=x, use_cache=False).logits.double().numpy()


def _train(model, x):
    model.zero_grad(set_to_none=True)
    model(input_ids=x, labels=x, use_cache=False).loss.backward()
    return {n: p.grad.double().numpy().copy() for n, p in model.named_parameters() if p.grad is not None}


PATCHED = [
    ("qwen3_next", {}),
    ("qwen3_5_text", {}),
    ("qwen3_5_moe_text", {}),
    ("olmo_hybrid", {}),
]


@pytest.mark.parametrize(("model_type", "config"), PATCHED, ids=[p[0] for p in PATCHED])
def test_family_patched_with_parity(model_type, config):
    model = family_model(model_type, **config)
    norms = gated_norms(model)
    assert norms, "the family lost its gated norms"
    x = torch.randint(3, coverage.VOCAB, (coverage.BATCH, coverage.SEQ), generator=torch.Generator().manual_seed(1))
    gold = copy.deepcopy(model).double()
    if hasattr(gold, "set_experts_implementation"):
        gold.set_experts_implementation("eager")
    gold_logits, ref_logits = _logits(gold, x), _logits(model, x)
    gold_grads, ref_grads = _train(gold, x), _train(model, x)

    report = K.apply_kernel(KERNEL, model)
    assert report.applied == [KERNEL] and report.patched_modules[KERNEL] == len(norms), report
    assert all(m.forward.__func__ is gated.gated_rms_norm_forward for m in norms)
    with coverage._CustomOpCalls() as ops:
        logits = _logits(model, x)
    assert ops.calls["gated_rms_norm"] >= len(norms), ops.calls  # every layer's norm, in inference
    ok, why = coverage._judge(logits, ref_logits, gold_logits)
    assert ok, why
    with coverage._CustomOpCalls() as ops:
        grads = _train(model, x)
    assert ops.calls["gated_rms_norm"], ops.calls  # training runs the op too (its backward)
    assert grads.keys() == ref_grads.keys()
    assert not coverage._grad_failures(grads, ref_grads, gold_grads)
    assert K.revert_kernels(model) == [KERNEL] and not any("forward" in m.__dict__ for m in norms)


# (model type, config overrides, what the refusal must name): the probe decides, the attribute explains.
REFUSED = [
    ("kimi_linear", {}, "activation='sigmoid'"),
    ("bailing_hybrid", {}, "activation='sigmoid'"),
    ("bamba", {}, "differs on the probe"),  # the gate multiplies x before the norm
    ("nemotron_h", {}, "differs on the probe"),
    ("granitemoehybrid", {}, "differs on the probe"),
    ("falcon_h1", {"mamba_rms_norm": True}, "is less accurate than its roundings in bfloat16"),  # strict fp32
    ("falcon_h1", {"mamba_rms_norm": True, "mamba_norm_before_gate": False}, "norm_before_gate=False"),
    ("falcon_h1", {"mamba_rms_norm": True, "mamba_n_groups": 2}, "n_groups=2"),
]


@pytest.mark.parametrize(("model_type", "config", "reason"), REFUSED, ids=[f"{r[0]}-{r[2]}" for r in REFUSED])
def test_family_refused_with_reason(model_type, config, reason):
    model = family_model(model_type, **config)
    norms = gated_norms(model)
    assert norms
    report = K.apply_kernel(KERNEL, model)
    assert report.applied == [] and not any("forward" in m.__dict__ for m in norms), report
    why = report.skipped[KERNEL]
    assert type(norms[0]).__name__ in why and gated.FORMULA in why and reason in why, why
    full = K.apply_default_kernels(model)  # and no other kernel takes them
    assert not any("forward" in m.__dict__ for m in norms), full


def assert_fp32_parity(ours, norm, *args):
    """ours against the unpatched module: the fp32 double benchmark, golden = the module in float64."""
    gold = copy.deepcopy(norm).double()
    with torch.no_grad():
        golden = type(gold).forward(gold, *(a.double() for a in args)).numpy()
        second = type(norm).forward(norm, *args).numpy()
    check = check_ratio(ours.detach().numpy(), second, golden, "float32")
    assert check.passed, check.failures


class Holder(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.norm = norm


# Gated norms of families whose tiny model does not build from shrunk defaults (docs/records/coverage.md says why): the
# module alone, width 64. (model type, class, constructor kwargs, None = patched, else what the refusal names)
MODULES = [
    ("qwen4_exp", "Qwen4ExpTextRMSNormGated", {}, None),
    ("qwen4_exp", "Qwen4ExpTextRMSNormGated", {"activation": "sigmoid"}, "activation='sigmoid'"),
    ("glm5_next", "Glm5NextTextRMSNormGated", {}, "activation='sigmoid'"),
    ("mamba2", "MambaRMSNormGated", {"group_size": 64}, "differs on the probe"),  # the gate before the norm
    ("mamba2", "MambaRMSNormGated", {"group_size": 32}, "group_size=32"),
    ("zamba2", "Zamba2RMSNormGated", {"group_size": 64}, "differs on the probe"),
]


@pytest.mark.parametrize(("model_type", "cls", "kwargs", "reason"), MODULES, ids=[f"{m[1]}-{m[3]}" for m in MODULES])
def test_family_module(model_type, cls, kwargs, reason):
    import importlib

    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    holder = Holder(getattr(module, cls)(64, eps=1e-2, **kwargs))
    with torch.no_grad():
        holder.norm.weight.add_(0.3 * torch.randn(64))
    report = K.apply_kernel(KERNEL, holder)
    if reason is not None:
        assert report.applied == [] and "forward" not in holder.norm.__dict__, report
        assert f"{cls}: not {gated.FORMULA}" in report.skipped[KERNEL] and reason in report.skipped[KERNEL], report
        return
    assert report.applied == [KERNEL], report
    x, z = torch.randn(7, 64), 3 * torch.randn(7, 64)
    with torch.no_grad(), coverage._CustomOpCalls() as ops:
        ours = holder.norm(x, z)
    assert ops.calls["gated_rms_norm"] == 1
    assert_fp32_parity(ours, holder.norm, x, z)


class GatedNorm(nn.Module):
    """Qwen3-Next's formula with an optional gate (gate=None: the plain norm)."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.variance_epsilon = eps

    def _norm(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(x.dtype)

    def forward(self, hidden_states, gate=None):
        y = self._norm(hidden_states)
        return y.to(hidden_states.dtype) if gate is None else (y * F.silu(gate.float())).to(hidden_states.dtype)


class SigmoidGatedNorm(GatedNorm):
    def forward(self, hidden_states, gate=None):
        return (self._norm(hidden_states) * torch.sigmoid(gate.float())).to(hidden_states.dtype)


class GroupGatedNorm(GatedNorm):
    """Norm per group of half the width, gate after: a group norm with the right gate."""

    def forward(self, hidden_states, gate=None):
        *lead, d = hidden_states.shape
        h = hidden_states.float().view(*lead, 2, d // 2)
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)).view(*lead, d)
        return (self.weight * h * F.silu(gate.float())).to(hidden_states.dtype)


class GateFirstNorm(GatedNorm):
    def forward(self, hidden_states, gate=None):
        return self._norm(hidden_states * F.silu(gate)).to(hidden_states.dtype)


@pytest.mark.parametrize("cls", [SigmoidGatedNorm, GroupGatedNorm, GateFirstNorm])
def test_probe_refuses_other_formulas(cls):
    """Negative controls: the same structure, another formula: left, and the reason is the probe's."""
    holder = Holder(cls(64, eps=1e-2))
    report = K.apply_kernel(KERNEL, holder)
    assert report.applied == [] and "forward" not in holder.norm.__dict__
    assert f"{cls.__name__}: not {gated.FORMULA}: differs on the probe" in report.skipped[KERNEL], report


def test_gate_none_and_odd_gates_run_the_class_forward():
    holder = Holder(GatedNorm(64, eps=1e-2))
    norm = holder.norm
    x, z = torch.randn(5, 64), torch.randn(5, 64)
    plain, fp64_gate = norm(x), norm(x, z.double())
    assert K.apply_kernel(KERNEL, holder).applied == [KERNEL]
    with torch.no_grad(), coverage._CustomOpCalls() as ops:
        assert torch.equal(norm(x), plain.detach())  # gate=None: the module's own plain norm
        assert torch.equal(norm(x, None), plain.detach())
        assert torch.equal(norm(x, z.double()), fp64_gate.detach())  # a gate of another dtype
        assert ops.calls["gated_rms_norm"] == 0
        ours = norm(x, z)
        assert ops.calls["gated_rms_norm"] == 1
    assert_fp32_parity(ours, norm, x, z)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_narrow_dtypes_against_the_golden(dtype):
    """In bf16/fp16 the op rounds as HF's Qwen3-Next does (x * rstd, then a narrow weight * h): the patched norm gives
    HF's bits and meets the dtype's standard. Falcon-H1's norm computes the same formula in fp32 and rounds once:
    the op's roundings there (our function called directly, the probe bypassed) fail the bf16 standard where
    Falcon's own result passes it - the measured reason its probe refuses it."""
    from transformers.models.falcon_h1.modeling_falcon_h1 import FalconH1RMSNormGated
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRMSNormGated

    gen = torch.Generator().manual_seed(3)
    x, z = torch.randn(83, 128, generator=gen), 3 * torch.randn(83, 128, generator=gen)
    weight = 1 + 0.3 * torch.randn(128, generator=gen)
    x, z, weight = x.to(dtype), z.to(dtype), weight.to(dtype)  # the golden's inputs: exactly these values
    results = {}
    for cls in (Qwen3NextRMSNormGated, FalconH1RMSNormGated):
        norm = cls(128, eps=1e-6).double()
        with torch.no_grad():
            norm.weight.copy_(weight)
            golden = norm(x.double(), z.double()).numpy()
            norm.to(dtype)
            theirs = norm(x, z)
            ours = gated.gated_rms_norm(norm, x, z, norm.variance_epsilon)
        checks = [
            check_mere_mare(r.float().numpy(), golden, str(dtype), second=theirs.float().numpy())
            for r in (ours, theirs)
        ]
        results[cls] = (torch.equal(ours, theirs), checks[0], checks[1])
    same, ours_check, theirs_check = results[Qwen3NextRMSNormGated]
    assert same and ours_check.passed, ours_check.failures
    holder = Holder(Qwen3NextRMSNormGated(128).to(dtype))
    assert K.apply_kernel(KERNEL, holder).applied == [KERNEL]
    same, ours_check, theirs_check = results[FalconH1RMSNormGated]
    assert not same and theirs_check.passed, theirs_check.failures
    # fp16 (3 more mantissa bits) passes on this input; bf16's ErrorCount is where the extra roundings show
    assert ours_check.passed == (dtype == torch.float16), ours_check.failures


def test_switches_and_llama_untouched():
    """use_fused_gated_rms_norm=False and ASCENDC_OPS_DISABLE turn it off with the switch named; a model without
    gated norms gets exactly what it got before (the kernel is absent, not a skip)."""
    model = family_model("qwen3_next")
    report = K.apply_default_kernels(model, use_fused_gated_rms_norm=False)
    assert report.skipped[KERNEL] == "disabled by use_fused_gated_rms_norm=False"
    assert not any("forward" in m.__dict__ for m in gated_norms(model))
    K.revert_kernels(model)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(K.DISABLE_ENV, KERNEL)
        assert K.apply_default_kernels(model).skipped[KERNEL] == f"disabled by {K.DISABLE_ENV}={KERNEL}"
    K.revert_kernels(model)
    assert KERNEL in K.apply_default_kernels(model).applied
    llama = K.apply_default_kernels(tiny("llama"))
    assert llama.applied == ALL and not llama.skipped, llama


def test_compiled_inference_calls_the_op():
    from training import CompileRecorder

    holder = Holder(GatedNorm(64, eps=1e-2))
    x, z = torch.randn(2, 7, 64), torch.randn(2, 7, 64)
    K.apply_kernel(KERNEL, holder)
    rec = CompileRecorder()
    with torch.no_grad():
        out = torch.compile(holder.norm, backend=rec, fullgraph=True)(x, z)
    assert any("gated_rms_norm" in op for op in rec.ops()), rec.ops()
    assert_fp32_parity(out, holder.norm, x, z)
