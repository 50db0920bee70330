"""cann-bench's TileLang lab flash_attention (bench_lab/tilelang_ascend_bench/flash_attention) in the
preset: imported from a lab without levels with its measured 910B2 times, every case mapped to fusion_attention
as mha's are, its float32 golden as the control (no witness), small real cases judged by cann-bench's rule,
and the least work priced as mha's."""

from __future__ import annotations

import math

import torch

from ascendc_ops.harness.cann_bench import attention as A, data as D, preset as CB, report as R
from ascendc_ops.harness.cann_bench.judge import controls, witnesses
from ascendc_ops.harness.pipeline import calibration as M
from ascendc_ops.harness.verify import suite as verify

FACTS = D.load()
TASK = "flash_attention"


def _case(cid):
    return next(c for c in D.all_tasks(FACTS)[TASK]["cases"] if c["case_id"] == cid)


def test_imported_from_the_tilelang_lab_with_measured_times():
    t = FACTS["preset_tasks"][TASK]
    assert t["set"] == "bench_lab/tilelang_ascend_bench" and t["level"] is None
    assert t["files"]["cases"] == "bench_lab/tilelang_ascend_bench/flash_attention/cases.yaml"
    assert t["files"]["times"] == "bench_lab/tilelang_ascend_bench/metadata/910b2.json"
    assert [c["case_id"] for c in t["cases"]] == list(range(1, 21))
    assert {c["baseline_kind"] for c in t["cases"]} == {"measured"}
    assert {c["input_shape"][0][-1] for c in t["cases"]} == {128, 256, 512}  # D
    assert not any(A.is_causal(c) for c in t["cases"]) and TASK not in FACTS["tasks"]


def test_every_case_maps_to_fusion_attention():
    cases, skipped = CB.verify_cases(FACTS, {TASK: set()})
    assert len(cases) == 20 and skipped == [] and FACTS["ours"][TASK]["not_run"] == {}
    c = cases[6]  # case 7: [4, 512, 32, 512] fp16
    assert c.op == A.OP and c.attrs == {"head_num": 32, "input_layout": "BSND", "scale": 1.0 / math.sqrt(512)}
    assert [t.name for t in c.inputs] == ["query", "key", "value"] and c.meta["task"] == TASK


def test_control_is_the_float32_golden():
    """TileLang's golden widens q, k, v to float32 and rounds y once: that is the control, with no witness."""
    c = CB.to_case(TASK, _case(17), "fixture")
    t = R.make_tensors(c)
    control = controls(c, CB.spec_of(c.op), t, None)
    wide = A.cann_bench_golden({k: v.float() for k, v in t.items()}, c.attrs)
    assert torch.equal(control[0], wide[0].half()) and witnesses(c, t) is None


def test_decode_case_passes_cann_benchs_rule():
    records = verify.run_case(CB.to_case(TASK, _case(17), CB.source_of(FACTS, TASK)), "auto")  # S 1 x Skv 128
    assert [r["output"] for r in records] == ["attention_out", "softmax_max", "softmax_sum"]
    assert all(r["judged_by"] == "cann-bench" and r["passed"] for r in records), [r["failures"] for r in records]


def test_the_float32_control_fails_our_16_bit_output_where_mhas_passes_it():
    """Case 19 (fp16, S 64 x 64): against TileLang's float32 golden as the control (no errors of its own) our
    output, whose P is fp16 for the cube as FlashAttention's, has small-value and cancellation errors the rule
    counts against none, so it fails; the same output passes mha's rule (control in the dtype, fp32 witness)."""
    case = CB.to_case(TASK, _case(19), "fixture")
    out = verify.run_case(case, "auto")[0]
    assert out["output"] == "attention_out" and not out["passed"]
    assert all(f.endswith("> 2 x the control's 0") for f in out["failures"]), out["failures"]
    case.meta["task"] = "mha"
    assert all(r["passed"] for r in verify.run_case(case, "auto"))


def test_least_work_as_mhas():
    c = _case(7)
    assert A.builtin_work(TASK, c) == M.builtin_work("mha", c)
    assert A.builtin_work(TASK, c).flops == 4 * 4 * 32 * 512 * 512 * 512
