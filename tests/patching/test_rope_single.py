"""RoPE patching of the functions rotating ONE tensor, on ``custom::rotary_mul``: Gemma 4's (and Gemma 3n's)
``apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim)``, DeepSeek-V4's of the same signature (trailing dims, pair
tables, fp32, cast back), GPT-J's and CodeGen's ``apply_rotary_pos_emb(tensor, sin, cos)`` (rotate_every_two).

Each function: ours vs transformers' own, the output and x's grad, by the double benchmark of docs/accuracy.md
(golden = their function in float64, comparison = theirs in the test's dtype), the result dtype as theirs. Each
family: the coverage row (logits and every gradient vs the unpatched model, fp32) with fused_rope applied and its
rotary_mul run. A single-tensor function of another formula is refused with the probe's reason.
"""

from __future__ import annotations

import importlib

import pytest
import torch

transformers = pytest.importorskip("transformers")
from pinned import only_pinned  # noqa: E402

from ascendc_ops.patching import coverage, rope  # noqa: E402
from ascendc_ops.precision import check_ratio  # noqa: E402

pytestmark = only_pinned  # the families of the pinned transformers

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _theirs(family: str):
    return importlib.import_module(f"transformers.models.{family}.modeling_{family}").apply_rotary_pos_emb


def _inputs(unsqueeze_dim, rotary, tables, head_dim=24):
    gen = torch.Generator().manual_seed(0)
    B, N, S = 2, 3, 7
    x = torch.randn((B, N, S, head_dim) if unsqueeze_dim == 1 else (B, S, N, head_dim), generator=gen).double()
    pos = torch.arange(S, dtype=torch.float64)[None, :, None] + torch.tensor([0.0, 5.0])[:, None, None]
    freqs = pos * 10000.0 ** (-torch.arange(0, rotary, 2, dtype=torch.float64) / rotary)
    emb = torch.cat((freqs, freqs), -1) if tables == "full" else freqs  # half: each frequency once
    dy = torch.randn(x.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return x, emb.cos(), emb.sin(), dy


def _run(call, x, cos, sin, dim, dy, dtype, table_dtype):
    x = x.to(dtype).requires_grad_()
    (y,) = call(x, None, cos.to(table_dtype), sin.to(table_dtype), dim)
    (dx,) = torch.autograd.grad(y, x, dy.to(y.dtype))
    return y.detach().double(), dx.double(), y.dtype


def _assert_parity(family, ours, form, dtype, dim, rotary, tables, table_dtype=None):
    """Ours vs theirs; the leading ``head_dim - rotary`` dims (DeepSeek-V4's pass-through) copied exactly."""
    x, cos, sin, dy = _inputs(dim, rotary, tables)
    table_dtype = table_dtype or dtype
    theirs, ours = rope._call(_theirs(family), tables, form), rope._call(ours, tables, form)
    golden = _run(theirs, x, cos, sin, dim, dy, torch.float64, torch.float64)
    second = _run(theirs, x, cos, sin, dim, dy, dtype, table_dtype)
    mine = _run(ours, x, cos, sin, dim, dy, dtype, table_dtype)
    assert mine[2] == second[2]
    for what, a, b, g in zip(("y", "dx"), mine, second, golden, strict=False):
        check = check_ratio(a.numpy(), b.numpy(), g.numpy(), dtype)
        assert check.passed, (what, check.failures)
    passed = x.shape[-1] - rotary
    assert torch.equal(mine[0][..., :passed], second[0][..., :passed])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified", "gemma3n"])
def test_gemma_single_tensor(family, dtype, unsqueeze_dim):
    _assert_parity(family, rope.apply_rotary_pos_emb_one, "one", dtype, unsqueeze_dim, 24, "full")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_gemma_single_tensor_fp32_tables(dtype):
    """Mixed precision: eager promotes x * cos to fp32, so must ours."""
    _assert_parity("gemma4", rope.apply_rotary_pos_emb_one, "one", dtype, 2, 24, "full", torch.float32)


@pytest.mark.parametrize("table_dtype", [None, torch.float32])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_deepseek_v4_trailing_pairs(dtype, unsqueeze_dim, table_dtype):
    """Rotary over the trailing 16 of 24 dims (8-wide tables), in fp32, returned in x's dtype."""
    ours = rope.apply_rotary_pos_emb_one_trailing_pairs
    _assert_parity("deepseek_v4", ours, "one", dtype, unsqueeze_dim, 16, "half", table_dtype)


@pytest.mark.parametrize("table_dtype", [None, torch.float32])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("family", ["gptj", "codegen"])
def test_rotate_every_two(family, dtype, table_dtype):
    _assert_parity(family, rope.apply_rotary_pos_emb_sin_cos, "sin_cos", dtype, 2, 24, "half", table_dtype)


def test_other_single_tensor_formula_refused():
    """A single-tensor function our op does not compute (the rotation's sign flipped on one half only) is left
    alone, with the probe's reason for the closest formula."""

    def apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=1):
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        half = x.shape[-1] // 2
        return x * cos + torch.cat((x[..., half:], x[..., :half]), dim=-1) * sin

    variant, why = rope._verdict(apply_rotary_pos_emb, rope.GLOBAL_NAME)
    assert variant is None
    assert why.startswith("full rotary, BNSD: differs on the probe"), why


# (family, the variant the probe must pick): found by structure and probe, no model list
FAMILIES = [
    ("gemma4", rope.apply_rotary_pos_emb_one),
    ("gemma4_unified", rope.apply_rotary_pos_emb_one),
    ("deepseek_v4", rope.apply_rotary_pos_emb_one_trailing_pairs),
    ("gptj", rope.apply_rotary_pos_emb_sin_cos),
    ("codegen", rope.apply_rotary_pos_emb_sin_cos),
]


@pytest.mark.parametrize(("family", "variant"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_family_patched_and_run_with_parity(family, variant):
    chosen = rope._verdict(_theirs(family), rope.GLOBAL_NAME)[0].function
    assert getattr(chosen, "__wrapped__", chosen) is variant
    row = coverage.check_model_type(family, coverage.decoder_types()[family])
    assert row.status == "pass", row
    assert row.applied.get("fused_rope", 0) > 0 and "fused_rope" not in row.idle, row
    assert not any(k.startswith("fused_rope") for k in row.left), row.left
