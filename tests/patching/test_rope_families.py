"""RoPE patching beyond HF's plain ``apply_rotary_pos_emb``: GLM's pair rotation over half-split tables (GLM,
GLM-4, Helium), Ernie 4.5's (the same at the tables' fp32 precision, returned in q's dtype, as Cohere's and
OLMo 2's functions return theirs), GPT-OSS's half-width tables, NanoChat's negated rotation, DeepSeek-V2's and
Llama 4's complex freqs_cis, DeepSeek-V3's ``apply_rotary_pos_emb_interleave`` (and the families copying it).

Each function: ours vs transformers' own, outputs and the grads of q and k, by the double benchmark of
docs/accuracy.md (golden = their function in float64, comparison = theirs in the test's dtype). Each family:
the coverage row (logits and every gradient vs the unpatched model, fp32) with fused_rope applied and run.
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


def _theirs(family: str, name: str):
    return getattr(importlib.import_module(f"transformers.models.{family}.modeling_{family}"), name)


def _inputs(dtype, unsqueeze_dim, rotary, head_dim=24, tables="full", table_dtype=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    B, N, NK, S = 2, 4, 2, 7  # GQA: fewer key heads
    shape = (lambda n: (B, n, S, head_dim)) if unsqueeze_dim == 1 else (lambda n: (B, S, n, head_dim))
    q = torch.randn(shape(N), generator=gen, dtype=torch.float64)
    k = torch.randn(shape(NK), generator=gen, dtype=torch.float64)
    pos = torch.arange(S, dtype=torch.float64)[None, :, None] + torch.tensor([0.0, 5.0])[:, None, None]
    freqs = pos * 10000.0 ** (-torch.arange(0, rotary, 2, dtype=torch.float64) / rotary)
    emb = torch.cat((freqs, freqs), -1) if tables == "full" else freqs  # half, complex: each once
    cos, sin = emb.cos(), emb.sin()
    return q, k, cos, sin, table_dtype or dtype


def _run(call, q, k, cos, sin, unsqueeze_dim, dtype, table_dtype, grads):
    """The outputs of call(q, k, cos, sin, unsqueeze_dim) and the grads of q, k for the output cotangents
    ``grads``, all as float64."""
    q, k = (t.to(dtype).requires_grad_() for t in (q, k))
    outs = call(q, k, cos.to(table_dtype), sin.to(table_dtype), unsqueeze_dim)
    dq, dk = torch.autograd.grad(outs, (q, k), [g.to(o.dtype) for g, o in zip(grads, outs, strict=True)])
    return [t.detach().double() for t in (*outs, dq, dk)], [o.dtype for o in outs]


def _assert_parity(theirs, ours, dtype, unsqueeze_dim, rotary, tables="full", table_dtype=None):
    q, k, cos, sin, table_dtype = _inputs(dtype, unsqueeze_dim, rotary, tables=tables, table_dtype=table_dtype)
    gen = torch.Generator().manual_seed(1)
    grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64) for t in (q, k)]
    theirs, ours = rope._call(theirs, tables), rope._call(ours, tables)
    golden, _ = _run(theirs, q, k, cos, sin, unsqueeze_dim, torch.float64, torch.float64, grads)
    second, their_dtypes = _run(theirs, q, k, cos, sin, unsqueeze_dim, dtype, table_dtype, grads)
    mine, my_dtypes = _run(ours, q, k, cos, sin, unsqueeze_dim, dtype, table_dtype, grads)
    assert my_dtypes == their_dtypes
    for what, a, b, g in zip(("q", "k", "dq", "dk"), mine, second, golden, strict=True):
        check = check_ratio(a.numpy(), b.numpy(), g.numpy(), dtype)
        assert check.passed, (what, check.failures)
        # the pass-through dims (partial rotary) are copied: exact
        if rotary < a.shape[-1] and what in ("q", "k"):
            assert torch.equal(a[..., rotary:], b[..., rotary:]), what


DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize(("family", "rotary"), [("glm", 12), ("glm4", 24), ("helium", 24)])
def test_glm_pairs(family, rotary, dtype, unsqueeze_dim):
    """GLM's repeat_interleave'd half-split tables + pair rotate_half: interleave mode over pair tables; GLM's
    partial rotary (half the head) passes the rest through."""
    _assert_parity(
        _theirs(family, "apply_rotary_pos_emb"), rope.apply_rotary_pos_emb_pairs, dtype, unsqueeze_dim, rotary
    )


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("family", ["ernie4_5", "ernie4_5_moe", "cohere", "olmo2"])
def test_functions_casting_back(family, dtype, unsqueeze_dim):
    """Ernie 4.5 keeps its tables in fp32 and rotates bf16 q, k in fp32, returning bf16 (Cohere and OLMo 2 cast
    back the same way): ours too (the op in fp32, cast back); GLM's function, without the cast, returns fp32
    there, as eager promotion does, and so does our drop-in for it."""
    theirs = _theirs(family, "apply_rotary_pos_emb")
    ours = rope._verdict(theirs, rope.GLOBAL_NAME)[0].function
    assert hasattr(ours, "__wrapped__")  # rope._cast_back's form
    _assert_parity(theirs, ours, dtype, unsqueeze_dim, 24, table_dtype=torch.float32)
    _assert_parity(theirs, ours, dtype, unsqueeze_dim, 24)  # tables in q's dtype
    glm = _theirs("glm4", "apply_rotary_pos_emb")
    _assert_parity(glm, rope.apply_rotary_pos_emb_pairs, dtype, unsqueeze_dim, 24, table_dtype=torch.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_gpt_oss_half_width_tables(dtype, unsqueeze_dim):
    theirs = _theirs("gpt_oss", "apply_rotary_pos_emb")
    _assert_parity(theirs, rope.apply_rotary_pos_emb_half_tables, dtype, unsqueeze_dim, 24, tables="half")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
def test_nanochat_negated_rotation(dtype, unsqueeze_dim):
    theirs = _theirs("nanochat", "apply_rotary_pos_emb")
    _assert_parity(theirs, rope.apply_rotary_pos_emb_negated, dtype, unsqueeze_dim, 24)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("unsqueeze_dim", [1, 2])
@pytest.mark.parametrize("family", ["deepseek_v3", "mistral_large4"])
def test_deepseek_interleave(family, dtype, unsqueeze_dim):
    """DeepSeek-V3's apply_rotary_pos_emb_interleave: pairs rotated, written out as halves."""
    theirs = _theirs(family, rope.INTERLEAVE_NAME)
    ours, _ = rope._verdict(theirs, rope.INTERLEAVE_NAME)
    assert ours is not None
    _assert_parity(theirs, ours.function, dtype, unsqueeze_dim, 24)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("family", "unsqueeze_dim"), [("deepseek_v2", 1), ("llama4", 2)])
def test_complex_freqs_cis(family, unsqueeze_dim, dtype):
    """DeepSeek-V2's and Llama 4's apply_rotary_emb: q's pairs as complex numbers times freqs_cis (complex64
    tables, computed in fp32, returned in q's dtype); the layout is the function's own."""
    theirs = _theirs(family, rope.COMPLEX_NAME)
    ours, _ = rope._verdict(theirs, rope.COMPLEX_NAME)
    assert ours is not None and ours.layouts == (("BNSD",) if unsqueeze_dim == 1 else ("BSND",))
    _assert_parity(theirs, ours.function, dtype, unsqueeze_dim, 24, tables="complex", table_dtype=torch.float32)


def test_deepseek_interleave_without_key():
    """Mistral-Large-4's indexer rotates q alone (k=None)."""
    theirs = _theirs("mistral_large4", rope.INTERLEAVE_NAME)
    q, _, cos, sin, _ = _inputs(torch.float32, 1, 24)
    golden, none = theirs(q, None, cos, sin)
    second, _ = theirs(q.float(), None, cos.float(), sin.float())
    got, also_none = rope.apply_rotary_pos_emb_deinterleave_k_optional(q.float(), None, cos.float(), sin.float())
    assert none is None and also_none is None
    check = check_ratio(got.double().numpy(), second.double().numpy(), golden.numpy(), torch.float32)
    assert check.passed, check.failures


# (family, the part the probe must pick, the variant's formula): found by structure and probe, no model list
FAMILIES = [
    ("glm", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_pairs),
    ("glm4", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_pairs),
    ("helium", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_pairs),
    ("ernie4_5", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_pairs),  # returned in q's dtype
    ("ernie4_5_moe", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_pairs),
    ("gpt_oss", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_half_tables),
    ("nanochat", "apply_rotary_pos_emb", rope.apply_rotary_pos_emb_negated),
    ("deepseek_v2", rope.COMPLEX_NAME, rope.apply_rotary_emb_bnsd),
    ("llama4_text", rope.COMPLEX_NAME, rope.apply_rotary_emb_bsnd),
    ("deepseek_v3", rope.INTERLEAVE_NAME, rope.apply_rotary_pos_emb_deinterleave),
    ("glm4_moe_lite", rope.INTERLEAVE_NAME, rope.apply_rotary_pos_emb_deinterleave),
]


@pytest.mark.parametrize(("family", "name", "variant"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_family_patched_and_run_with_parity(family, name, variant):
    module = family.removesuffix("_text")
    chosen = rope._verdict(_theirs(module, name), name)[0].function
    assert getattr(chosen, "__wrapped__", chosen) is variant
    row = coverage.check_model_type(family, coverage.decoder_types()[family])
    assert row.status == "pass", row
    assert row.applied.get("fused_rope", 0) > 0 and "fused_rope" not in row.idle, row
    assert not any(k.startswith("fused_rope") for k in row.left), row.left
