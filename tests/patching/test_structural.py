"""Patching by structure: the eight families the name list used to cover get exactly the same modules patched;
new families are patched with parity (ascendc_ops.patching.coverage, the docs/records/coverage.md rows), (1 + w) norms
(Gemma's) with custom.gemma_rms_norm; parts that look right but compute something else (epsilon outside the root, a
gated norm, a gelu MLP) are left by the probe with the reason; the coverage tool's table."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

transformers = pytest.importorskip("transformers")
import ascendc_ops.patching as K  # noqa: E402
from ascendc_ops.patching import coverage, rms_norm as patching_norm  # noqa: E402
from ascendc_ops.patching.rope import GLOBAL_NAME  # noqa: E402
from test_moe_models import APPLIED, MOE, tiny_moe  # noqa: E402
from test_patching import ALL, CONFIGS, fwd_bwd, ids, tiny  # noqa: E402


def _name_rule_parts(model) -> dict[str, set[str]]:
    """The modules the name-based rules patched: *RMSNorm classes (not Gemma), MLPs with
    gate_proj/up_proj/down_proj/act_fn, attention classes whose forward calls apply_rotary_pos_emb."""
    parts = {"fused_rmsnorm": set(), "fused_swiglu": set(), "fused_rope": set()}
    for name, m in model.named_modules():
        cls = type(m).__name__
        if cls.endswith("RMSNorm") and "Gemma" not in cls:
            parts["fused_rmsnorm"].add(name)
        if all(hasattr(m, a) for a in ("gate_proj", "up_proj", "down_proj", "act_fn")):
            parts["fused_swiglu"].add(name)
        if GLOBAL_NAME in getattr(getattr(type(m).forward, "__code__", None), "co_names", ()):
            parts["fused_rope"].add(name)
    return {k: v for k, v in parts.items() if v}


def _patched(model, kernel_id) -> set[str]:
    owners = {id(r.owner) for r in getattr(model, K.base.STATE_ATTR)[kernel_id] if r.name == "forward"}
    return {name for name, m in model.named_modules() if id(m) in owners}


@pytest.mark.parametrize("family", list(CONFIGS) + list(MOE))
def test_known_families_patched_exactly_as_by_name(family):
    model = tiny(family) if family in CONFIGS else tiny_moe(family)
    expected = _name_rule_parts(model)
    report = K.apply_default_kernels(model)
    assert report.applied == (ALL if family in CONFIGS else APPLIED[family]), report
    assert not report.skipped and not report.left, report
    for kernel_id, names in expected.items():
        assert _patched(model, kernel_id) == names, kernel_id
    if family in MOE:
        assert K.moe.routed_modules(model) == model.config.num_hidden_layers - (family == "qwen3_moe")


# (model type, the kernels that must apply and run, {kernel: text its "left" reason must contain} for parts it
# must leave). DeepSeek-V3's default rope_interleave=True calls apply_rotary_pos_emb_interleave: patched too.
NEW_FAMILIES = [
    (
        "qwen3_next",
        ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_moe", "fused_gated_rmsnorm"],
        {"fused_add_rmsnorm": "differs on the probe"},
    ),
    (
        "qwen3_5_text",
        ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_gated_rmsnorm"],
        {"fused_add_rmsnorm": "differs on the probe"},
    ),
    ("gemma", ["fused_rope", "fused_rmsnorm"], {"fused_swiglu": "gelu", "fused_add_rmsnorm": "differs on the probe"}),
    ("gemma2", ["fused_rope", "fused_rmsnorm"], {"fused_swiglu": "gelu", "fused_add_rmsnorm": "differs on the probe"}),
    (
        "gemma3_text",
        ["fused_rope", "fused_rmsnorm"],
        {"fused_swiglu": "gelu", "fused_add_rmsnorm": "differs on the probe"},
    ),
    ("glm4", ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_add_rmsnorm"], {}),
    ("granite", ["fused_rope", "fused_rmsnorm", "fused_swiglu"], {}),
    ("phi3", ["fused_rope", "fused_rmsnorm", "fused_swiglu"], {}),
    ("olmo2", ["fused_rope", "fused_rmsnorm", "fused_swiglu"], {}),
    ("deepseek_v3", ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_moe", "fused_add_rmsnorm"], {}),
    ("glm4_moe", ["fused_rope", "fused_rmsnorm", "fused_swiglu", "fused_moe", "fused_add_rmsnorm"], {}),
]


@pytest.mark.parametrize(("model_type", "applied", "left"), NEW_FAMILIES, ids=[f[0] for f in NEW_FAMILIES])
def test_new_family_patched_with_parity(model_type, applied, left):
    row = coverage.check_model_type(model_type, coverage.decoder_types()[model_type])
    assert row.status == "pass", row
    ran = [k for k in row.applied if k not in row.idle]
    assert ran == applied, row
    assert row.idle == [], row
    assert all(n > 0 for n in row.applied.values()), row
    for kernel_id, text in left.items():
        reasons = " ".join(why for k, why in row.left.items() if k.startswith(kernel_id))
        assert text in reasons, (kernel_id, row.left)


class OffsetRMSNorm(nn.Module):
    """Looks like an RMSNorm (weight, variance_epsilon) but scales by (1 + weight), as Gemma's."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d))
        self.variance_epsilon = eps

    def forward(self, x):
        return (1 + self.weight) * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)


class EpsOutsideRMSNorm(OffsetRMSNorm):
    """weight * x / (sqrt(mean(x^2)) + eps): the epsilon outside the root."""

    def forward(self, x):
        return self.weight * x / (x.pow(2).mean(-1, keepdim=True).sqrt() + self.variance_epsilon)


class ResidualGatedRMSNorm(OffsetRMSNorm):
    """Inputs besides a gate (fused_gated_rmsnorm takes ``forward(hidden_states, gate)`` only)."""

    def forward(self, x, gate=None, residual=None):
        x = x if residual is None else x + residual
        y = self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return y if gate is None else y * torch.nn.functional.silu(gate)


@pytest.mark.parametrize(
    ("cls", "reason"),
    [
        (EpsOutsideRMSNorm, "differs on the probe"),
        (ResidualGatedRMSNorm, "takes more than the hidden states (gate, residual)"),
    ],
)
def test_mismatching_norm_left_with_reason(cls, reason):
    model = tiny("llama")
    with torch.no_grad():
        odd = cls(64, eps=1e-2)  # a large eps: its place in the formula matters on every row
        odd.weight.copy_(torch.randn(64) * 0.1 + 1)
    model.model.norm = odd
    x = ids()
    ref = fwd_bwd(model, x)
    report = K.apply_default_kernels(model)
    assert report.applied == ALL
    assert reason in report.left["fused_rmsnorm"][cls.__name__], report
    assert cls.__name__ in str(report)
    assert "forward" not in odd.__dict__
    assert report.patched_modules["fused_rmsnorm"] == 2 * 2  # the layers' two norms each
    logits, loss, grads = fwd_bwd(model, x)
    assert (logits - ref[0]).abs().max().item() <= 1e-5
    for n in ref[2]:
        torch.testing.assert_close(grads[n], ref[2][n], atol=1e-5, rtol=1e-4, msg=n)


def test_offset_norm_patched_with_gemma_op():
    """A (1 + w) norm of any name is patched by the probe's second variant, onto custom.gemma_rms_norm."""
    model = tiny("llama")
    with torch.no_grad():
        odd = OffsetRMSNorm(64, eps=1e-2)
        odd.weight.copy_(torch.randn(64) * 0.1)
    model.model.norm = odd
    x = ids()
    ref = fwd_bwd(model, x)
    report = K.apply_default_kernels(model)
    assert report.applied == ALL and "fused_rmsnorm" not in report.left, report
    assert report.patched_modules["fused_rmsnorm"] == 2 * 2 + 1
    assert odd.forward.__func__ is patching_norm.gemma_rms_norm_forward
    with coverage._CustomOpCalls() as ops:
        logits, loss, grads = fwd_bwd(model, x)
    assert ops.calls["gemma_rms_norm"] == 1 and ops.calls["gemma_rms_norm_grad"] == 1, ops.calls
    assert (logits - ref[0]).abs().max().item() <= 1e-5
    for n in ref[2]:
        torch.testing.assert_close(grads[n], ref[2][n], atol=1e-5, rtol=1e-4, msg=n)


def test_gelu_mlp_left_by_probe():
    """hidden_act is not read: the probe sees a gelu gate and leaves the MLP, saying which activation."""
    report = K.apply_default_kernels(tiny("llama", hidden_act="gelu"))
    assert report.applied == ["fused_rope", "fused_rmsnorm", "fused_add_rmsnorm"]
    assert "differs on the probe" in report.skipped["fused_swiglu"] and "gelu" in report.skipped["fused_swiglu"]


def test_coverage_rows_for_a_handful():
    """The table's rows: a dense and a MoE family pass with kernels applied, GPT-OSS's clamped experts are left
    with their reason; a composite (vision + text) config is shrunk part by part and runs on text alone, and a
    multimodal type whose causal LM is its text model gets the text sub-config."""
    types = coverage.decoder_types()
    names = ("llama", "mixtral", "gpt_oss", "gemma3", "qwen3_5")
    rows = {t: coverage.check_model_type(t, types[t]) for t in names}
    assert rows["llama"].status == "pass" and list(rows["llama"].applied) == ALL
    assert rows["mixtral"].status == "pass" and "fused_moe" in rows["mixtral"].applied
    assert rows["gpt_oss"].status == "pass" and "fused_moe" not in rows["gpt_oss"].applied
    assert "interleaved" in rows["gpt_oss"].left["fused_moe"], rows["gpt_oss"].left
    assert rows["llama"].attention.startswith("pass (2) "), rows["llama"].attention
    assert rows["gpt_oss"].attention.startswith("pass (2) "), rows["gpt_oss"].attention  # its sinks as the op's sink
    for t in ("llama", "mixtral", "gemma3"):  # gemma3: a multimodal class's LM head and loss
        cell = rows[t].linear_ce
        own_loss = "self.loss_function" not in inspect.getsource(getattr(transformers, rows[t].model_class).forward)
        if t == "gemma3" and own_loss:  # older transformers (5.8): Gemma 3's forward computes its cross-entropy itself
            assert "without self.loss_function" in cell, rows[t]
            continue
        assert cell.startswith("pass (1) ") and cell.endswith(f"grads {rows[t].grads}"), rows[t]
    assert rows["gemma3"].model_class == "Gemma3ForConditionalGeneration"
    assert rows["gemma3"].status == "pass" and "fused_rope" in rows["gemma3"].applied, rows["gemma3"]
    assert rows["qwen3_5"].status == "pass" and "fused_swiglu" in rows["qwen3_5"].applied, rows["qwen3_5"]


def _doc_rows(text: str) -> dict[str, tuple[str, str, str]]:
    """docs/records/coverage.md's table: model type -> (result, applied, fused_attention's and
    fused_linear_cross_entropy's verdicts or "-")."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 9 and cells[2] in ("pass", "FAIL", "skipped"):
            rows[cells[0]] = (cells[2], cells[3], cells[7].split(" ")[0], cells[8].split(" ")[0])
    return rows


COVERAGE_SHARDS = 8  # the table's types in eight tests, so pytest-xdist spreads the minutes over its workers (four left
# one shard of about a minute alone at the end of the run on 2 cores, 2026-12-02)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(COVERAGE_SHARDS))
def test_every_decoder_family_and_the_committed_table(tmp_path, shard):
    """The whole table (about 3 minutes on one core, in eight shards): no family fails parity once patched, and
    docs/records/coverage.md says what a fresh run says (results, applied kernels, the opt-in kernels' verdicts: it
    is generated, not edited) for every decoder type, no more and no fewer."""
    tools = Path(__file__).resolve().parents[2] / "tools"
    if not (tools / "patch_coverage.py").exists():  # tools/wheel_check.sh runs a copy of tests/ alone
        pytest.skip("needs the checkout's tools/ and docs/ (the committed table)")
    sys.path.insert(0, str(tools))
    import patch_coverage

    committed = _doc_rows((patch_coverage.ROOT / "docs" / "records" / "coverage.md").read_text())
    types = sorted(coverage.decoder_types())
    assert sorted(committed) == types, "docs/records/coverage.md lists other types: run tools/patch_coverage.py"
    mine = types[shard::COVERAGE_SHARDS]
    out = tmp_path / "coverage.md"
    assert patch_coverage.main(["--types", ",".join(mine), "--out", str(out)]) == 0
    fresh = _doc_rows(out.read_text())
    assert fresh == {t: committed[t] for t in mine}, "docs/records/coverage.md is stale: run tools/patch_coverage.py"


@pytest.mark.parametrize("family", ["llama", "phi3", "qwen3_moe"])
def test_probe_parameters_are_probe_width(monkeypatch, family):
    """The probes' random parameters are HIDDEN x INTERMEDIATE wide whatever the model's sizes (a full-size
    float64 copy of a large model's MLP or experts would take gigabytes), and still find the parts."""
    from ascendc_ops.patching import probe

    made, original = [], probe.random_params
    monkeypatch.setattr(probe, "random_params", lambda *a, **kw: made.append(original(*a, **kw)) or made[-1])
    if family == "qwen3_moe":
        model = tiny_moe(family, hidden_size=256, moe_intermediate_size=160, intermediate_size=320)
    elif family == "phi3":
        model = coverage.tiny_model("phi3", coverage.decoder_types()["phi3"])  # fused gate_up_proj
    else:
        model = tiny(family, hidden_size=256, intermediate_size=320)
    report = K.apply_default_kernels(model)
    assert {"fused_rmsnorm", "fused_swiglu"} <= set(report.applied) and not report.left, report
    assert family != "qwen3_moe" or "fused_moe" in report.applied
    matrices = [t for params in made for t in params.values() if t.dim() >= 2]
    assert matrices and all(max(t.shape[-2:]) <= 2 * probe.INTERMEDIATE for t in matrices), [t.shape for t in matrices]
