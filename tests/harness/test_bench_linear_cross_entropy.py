"""linear_cross_entropy in the harness: its verify suite (the quick one: both ops, every dtype), its bench entry's
bytes and FLOPs by hand, a bench row against HF's loss, and `estimate` at a T,H,V shape with the mix launch's AIC
and AIV apart."""

from __future__ import annotations

import io

import pytest
import torch

from ascendc_ops.harness.bench import ops as B
from ascendc_ops.harness.families import cross_entropy as CE
from ascendc_ops.harness.pipeline.estimate import estimate
from ascendc_ops.harness.verify import suite

SMALL = (130, 96, 1000)  # T, H, V: two token tasks, a vocabulary tail of 104 columns


def test_quick_suite_passes():
    cases = suite.load_cases(None, ops=["linear_cross_entropy", "linear_cross_entropy_grad"], quick=True)
    assert sorted({c.dtype for c in cases}) == ["bfloat16", "float16", "float32"] and len(cases) == 6
    out = io.StringIO()
    assert suite.run(cases, out=out) == 0, out.getvalue()
    assert "linear cross-entropy grad bound" in out.getvalue()  # the grads' own criterion judged them


def test_bytes_and_flops_by_hand():
    h, w, t = CE.lce_inputs(SMALL, torch.bfloat16, torch.Generator().manual_seed(0))
    assert (h.shape, w.shape, t.shape) == ((130, 96), (1000, 96), (130,)) and int(t.max()) < 1000
    hw = (130 + 1000) * 96 * 2
    # (read, written): the four fp32 statistics per token written forward, read back with the inputs backward
    assert CE.lce_bytes((h, w, t), None, "fwd") == (hw + 130 * 8, 130 * 16)
    assert CE.lce_bytes((h, w, t), None, "bwd") == (hw + 130 * 8 + 130 * 16, hw)
    one = 2 * 130 * 96 * 1000
    assert [CE.lce_flops((h, w, t), p) for p in ("fwd", "bwd", "full")] == [one, 3 * one, 4 * one]
    for bad in ((130, 96), (0, 96, 1000)):
        with pytest.raises(ValueError, match="T,H,V"):
            CE.check_lce_shape(bad)


def test_a_bench_row_against_hf():
    cfg = B.Config(ops=("linear_cross_entropy",), shapes=(SMALL,), dtypes=("bfloat16",), passes=("fwd", "bwd"),
                   target_s=0.02, min_reps=2, warmup=1, compile=False, progress=False, explain=False)  # fmt: skip
    rows = B.run(cfg, io.StringIO())
    assert [r["pass"] for r in rows] == ["fwd", "bwd"]
    for r in rows:
        assert r["mismatch"] == "" and r["ours_median"] > 0 and r["est_us_910b"] > 0  # same loss / dh as HF's
        assert 0 < r["roofline_pct_910b"] <= 100


@pytest.mark.parametrize("pass_, groups", [("fwd", 8), ("bwd", 16)])
def test_estimate_shows_the_mix_launch(tmp_path, pass_, groups):
    """The forward runs a task per 128 tokens and vocabulary split (2 x 4 splits of a block pair here), the backward
    one per 128 tokens and token split (2 x 4 splits of 2 blocks) and per 128 vocabulary rows (8); the summary gives
    the cube roofline and the AIC and AIV lines of the launch."""
    info = estimate("linear_cross_entropy", SMALL, "bfloat16", "910B", pass_, str(tmp_path))
    assert info["modelled"] and info["roofline"] in ("cube FLOP/s", "HBM")
    assert info["flops"] == {"fwd": 1, "bwd": 3}[pass_] * 2 * 130 * 96 * 1000
    (launch,) = info["launches"]
    assert launch["blocks"] == groups and launch["hbm_us"] > 0
    kinds = info["kinds"][launch["kernel"]]
    assert set(kinds) == {"AIC", "AIV"} and kinds["AIC"]["cores_used"] == groups
    assert kinds["AIV"]["cores_used"] == 2 * groups and kinds["AIC"]["pipes"]["M"] > 0
