"""`ascendc-ops bench`'s attention rows: a default shape as quick as the other families' rows with the training
shape one option away, the bytes and FLOPs per pass, the 910B estimate from the mix-launch model, and the
backward rows run only once the op has an autograd formula (skipped with the reason before)."""

from __future__ import annotations

import dataclasses
import io

import pytest
import torch

from ascendc_ops.harness.bench import ops as B
from ascendc_ops.harness.families import attention as A, attention_variants as V
from ascendc_ops.harness.pipeline.estimate import model_columns

SMALL = (1, 32, 2, 1, 32)  # B, S, N, NKV, D: a few ms on the twin


def has_autograd(op: str) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op, "Autograd")


def test_default_shape_is_small_and_the_training_shape_is_an_option_away():
    default = B.cases(B.Config(ops=("fusion_attention", "fusion_attention_sdpa")))
    assert [c[1] for c in default] == [A.DEFAULT_SHAPE] * 2
    b, s, n, nkv, d = A.DEFAULT_SHAPE
    assert s <= 256 and n * s * s <= 8 * 256 * 256  # the S x S work that made a row take seconds per call
    preset = B.cases(B.Config(ops=("fusion_attention",), presets=("llama3-8b",), seq=1024))
    assert preset == [("fusion_attention", A.TRAINING_SHAPE, "llama3-8b")]
    assert B.cases(B.Config(ops=("fusion_attention",), shapes=(A.TRAINING_SHAPE,)))[0][1] == A.TRAINING_SHAPE


def test_bytes_and_flops_per_pass():
    """fwd: Q, K, V read, O written; bwd: Q, K, V, O, dO read, dQ, dK, dV written; causal halves every S x S
    product: 2 of them forward, 5 backward."""
    q, k, v, mask = A.attention_inputs((2, 16, 4, 2, 8), torch.bfloat16, torch.Generator().manual_seed(0))
    qb, kb = 2 * 16 * 4 * 8 * 2, 2 * 16 * 2 * 8 * 2
    ins = (q, k, v, mask)
    assert A.attention_bytes(ins, None, "fwd") == (qb + 2 * kb, qb)  # (read, written)
    assert A.attention_bytes(ins, None, "bwd") == (3 * qb + 2 * kb, qb + 2 * kb)
    assert A.attention_bytes(ins, None, "full").total == 6 * qb + 6 * kb
    one = 2 * 4 * 16 * 16 * 8  # B N S^2 D: one product's 2 B N S^2 D FLOPs, halved
    assert [A.attention_flops(ins, p) for p in ("fwd", "bwd", "full")] == [2 * one, 5 * one, 7 * one]


def test_the_910b_column_is_the_mix_model_estimate():
    ins = A.attention_inputs(SMALL, torch.bfloat16, torch.Generator().manual_seed(0))
    cols = model_columns("fusion_attention", ins, "fwd")
    assert cols["est_us_910b"] is not None and cols["est_us_910b"] > 0
    assert 0 < cols["roofline_pct_910b"] <= 100


@pytest.fixture
def fwd_only_op(monkeypatch):
    """fusion_attention's bench entry pointed at an op defined here with a CPU kernel and no autograd."""
    lib = torch.library.Library("agbench_test", "DEF")
    lib.define("fwd_only(Tensor x) -> Tensor")
    lib.impl("fwd_only", lambda x: x.clone(), "CPU")
    entry = dataclasses.replace(B.OPS["fusion_attention"], autograd_op="agbench_test::fwd_only")
    monkeypatch.setitem(B.OPS, "fusion_attention", entry)
    yield lib
    lib._destroy()


def test_backward_rows_wait_for_the_autograd_formula(fwd_only_op):
    assert B.not_runnable("fusion_attention", "fwd") == ""
    why = B.not_runnable("fusion_attention", "bwd")
    assert why == "agbench_test::fwd_only has no autograd formula in this build"
    assert B.not_runnable("fusion_attention", "full") == why
    assert B.not_runnable("rms_norm", "bwd") == ""  # registered with its formula
    torch.library.register_autograd("agbench_test::fwd_only", lambda ctx, g: g, lib=fwd_only_op)
    assert B.not_runnable("fusion_attention", "bwd") == ""


def test_a_run_of_only_skipped_rows_says_why(fwd_only_op):
    out = io.StringIO()
    cfg = B.Config(ops=("fusion_attention",), shapes=(SMALL,), passes=("bwd", "full"), progress=False)
    assert B.run(cfg, out) == []
    text = out.getvalue()
    for p in ("bwd", "full"):
        assert f"- fusion_attention {p}: not run: agbench_test::fwd_only has no autograd formula" in text


@pytest.mark.skipif(
    not has_autograd(A.AUTOGRAD_OP), reason=f"{A.AUTOGRAD_OP} has no autograd formula yet (its backward kernel)"
)
def test_backward_row_against_eager_and_sdpa():
    """dq through our op, HF eager's and SDPA's autograd: agreeing outputs, peak memory of each, a 910B estimate."""
    cfg = B.Config(
        ops=("fusion_attention", "fusion_attention_sdpa"),
        shapes=(SMALL,),
        dtypes=("float32",),
        passes=("bwd",),
        target_s=0.05,
        min_reps=2,
        warmup=1,
        compile=False,
        progress=False,
        explain=False,
    )
    rows = B.run(cfg, io.StringIO())
    assert [(r["op"], r["pass"]) for r in rows] == [("fusion_attention", "bwd"), ("fusion_attention_sdpa", "bwd")]
    for r in rows:
        assert r["mismatch"] == "" and r["ours_peak_mb"] is not None and r["torch_peak_mb"] is not None
        assert r["est_us_910b"] is not None


def test_the_variants_read_their_mask_or_sinks_more():
    """fusion_attention_dropout reads the packed mask (a bit a score) in each pass; fusion_attention_sink its N
    logits, and its backward writes their gradient."""
    gen = torch.Generator().manual_seed(0)
    shape = (2, 16, 4, 2, 8)
    drop = V.dropout_inputs(shape, torch.bfloat16, gen)
    base = A.attention_bytes(drop[:4], None, "bwd")
    assert drop[4].dtype == torch.uint8 and drop[4].numel() >= 2 * 4 * 16 * 16 // 8
    assert V.variant_bytes(drop, None, "bwd") == (base.read + drop[4].nbytes, base.written)
    sink = V.sink_inputs(shape, torch.bfloat16, gen)
    assert sink[4].shape == (4,) and V.variant_bytes(sink, None, "bwd") == (base.read + 16, base.written + 16)


@pytest.mark.skipif(not has_autograd(A.AUTOGRAD_OP), reason=f"{A.AUTOGRAD_OP} has no autograd formula")
def test_dropout_and_sink_rows_agree_with_hfs_eager_attention():
    """The variants' rows, forward and backward in fp32: ours and HF's eager attention with the same keep matrix
    (or sinks) agree as the bench requires (its fp32 tolerance), with a 910B estimate."""
    cfg = B.Config(ops=tuple(V.BENCH), shapes=(SMALL,), dtypes=("float32",), passes=("fwd", "bwd"), target_s=0.05,
                   min_reps=2, warmup=1, compile=False, progress=False, explain=False)  # fmt: skip
    rows = B.run(cfg, io.StringIO())
    assert [(r["op"], r["pass"]) for r in rows] == [(op, p) for op in V.BENCH for p in ("fwd", "bwd")]
    assert all(r["mismatch"] == "" and r["est_us_910b"] is not None for r in rows)
