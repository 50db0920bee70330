"""No built-in kernel cann-bench measured on the 910B2 runs faster than the calibrated model's least work for it
(harness/pipeline/calibration.py: one start plus its bytes at HBM or its FLOPs at the cube's peak, the L2
write-back and cold): every measured case of the tasks we compete on (RmsNorm, SwiGlu, RoPE, GroupedMatmul,
however many kernels its baseline ran: more kernels only add time) and of the simple streaming tasks the
figures are fitted on, and the attention tasks' FusedInferAttentionScore (mha, gqa: q + k + v + out bytes,
4 B Nq Sq Skv D FLOPs halved by causal, on the cube; the cube's peak or HBM, whichever binds). A case below
its floor is listed in EXCEPTIONS with how far and why, or the test fails."""

from __future__ import annotations

import pytest

from ascendc_ops.harness.cann_bench import data as D
from ascendc_ops.harness.pipeline import calibration as M, load_platform

CAL = load_platform("910B", calibrated=True)
# case -> (largest model / measured - 1 allowed, why). Each entry must still be below its floor.
EXCEPTIONS = {
    "maximum:16": (
        0.06,
        "held out: 20.62 us measured against a 21.76 us floor (5.5%); its 24.3 MB of reads imply 1.33 TB/s against "
        "the 1.255 TB/s envelope of the calibration cases. Its least work is exact (two fp32 inputs of one shape, "
        "nothing broadcast, read twice or written in place; the output the size of one input, in the L2); the "
        "one property of its own is its data, all zeros (cann-bench scripts/baseline/inputs.py: a [0, 0] range), "
        "and a data-dependent HBM rate is not documented. The excess is within cann-bench's own case-to-case "
        "scatter (test_the_exception_is_within_the_measurements_scatter): the held-out error of the HBM rate",
    ),
    "mha:15": (
        0.19,
        "decode, B 60, Nq = Nkv 16, Skv 512, D 256, fp16: 345.29 us measured against a 408.1 us floor, HBM-bound "
        "(504 MB: K and V read once, which no kernel can skip). 1.46 TB/s over its whole time, against the "
        "calibrated 1.255 TB/s, a lower envelope fitted on vector-core streaming kernels (the floor tasks), and "
        "below the 1.6 TB/s prior (platforms/ascend910b.json). FusedInferAttentionScore's K and V loads feed the "
        "cube (L1), with 512-byte rows per head at D 256: MHA 13, the same bytes at D 128, runs 494.09 us "
        "(1.02 TB/s; test_d256_decode_reads_faster_than_d128). The model has no measured HBM rate for such "
        "loads: the case questions the model's HBM rate, not the least work",
    ),
}
# Pairs of floor-task cases of the same kernel, dtype and start-bound size (bytes within 2%): their measured
# times differ by as much as the exception's excess, so cann-bench's times scatter by that much between cases.
SCATTER_PAIRS = (("sigmoid", 1, 7), ("gelu", 1, 7), ("maximum", 1, 7))


def measured_cases():
    facts = D.load()
    for group in ("tasks", "floor_tasks"):
        for task, t in facts[group].items():
            for c in t["cases"]:
                if c["baseline_kind"] == "measured":
                    yield f"{task}:{c['case_id']}", M.builtin_work(task, c), c["baseline_perf_us"]


def test_every_measured_case_has_a_least_work():
    cases = list(measured_cases())
    assert len(cases) > 100 and all(w is not None for _, w, _ in cases)
    assert {n.split(":")[0] for n, _, _ in cases} >= {"rms_norm", "swi_glu", "apply_rotary_pos_emb", "grouped_matmul",
                                                      "sigmoid", "gelu", "exp", "maximum", "mha", "gqa"}  # fmt: skip
    attention = [n for n, _, _ in cases if n.split(":")[0] in D.ATTENTION_TASKS]
    assert len(attention) == 24  # MHA 7-18, GQA 4, 6, 8-17: the rest of their 40 cases are caps


@pytest.mark.parametrize("name,work,measured", list(measured_cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_no_builtin_beats_the_floor(name, work, measured):
    over = M.predict(work, CAL) / measured - 1  # > 0: the built-in ran faster than the model's least work
    allowed, why = EXCEPTIONS.get(name, (M.ROUNDING, ""))
    assert over <= allowed, f"{name}: {measured} us measured, floor {M.predict(work, CAL):.2f} us ({100 * over:+.1f}%)"
    if name in EXCEPTIONS:
        assert over > M.ROUNDING, f"{name} is no longer below its floor: drop it from EXCEPTIONS ({why[:40]}...)"


def test_in_place_rope_touches_no_lines_beyond_its_reads():
    """RoPE 11 (fp32, 378 MB read and written) would be below its floor with distinct outputs: its outputs
    overwrite query and key, so the 199 MB it touches fit the L2 and none is written back inside the launch."""
    facts = D.load()
    case = next(c for c in facts["tasks"]["apply_rotary_pos_emb"]["cases"] if c["case_id"] == 11)
    work = M.builtin_work("apply_rotary_pos_emb", case)
    assert work.in_place and M.traffic(work, CAL).fits
    distinct = M.Work(work.bytes, 0, work.dtype, False, work.written)
    assert M.predict(distinct, CAL) > case["baseline_perf_us"] > M.predict(work, CAL)


def test_the_exception_is_within_the_measurements_scatter():
    """Maximum 16's 5.5% under its floor is no larger than the spread of cann-bench's measured times between
    cases whose least work is within 2% (Sigmoid 1 [1024, 1024] and 7 [1009, 1021] fp16: 5.30 and 5.02 us)."""
    facts = D.load()["floor_tasks"]
    spread = []
    for task, a, b in SCATTER_PAIRS:
        ca, cb = (next(c for c in facts[task]["cases"] if c["case_id"] == i) for i in (a, b))
        wa, wb = M.builtin_work(task, ca), M.builtin_work(task, cb)
        assert ca["dtype"] == cb["dtype"] and abs(wa.bytes / wb.bytes - 1) < 0.02
        spread.append(
            max(ca["baseline_perf_us"], cb["baseline_perf_us"]) / min(ca["baseline_perf_us"], cb["baseline_perf_us"])
            - 1
        )
    case = next(c for c in facts["maximum"]["cases"] if c["case_id"] == 16)
    over = M.predict(M.builtin_work("maximum", case), CAL) / case["baseline_perf_us"] - 1
    assert over <= max(spread), (over, spread)


def test_attention_floors_bind_on_the_cube_or_hbm():
    """Prefill attention is priced by the cube's peak, decode by HBM: both terms are live in the floor test."""
    binds = set()
    for name, work, _ in measured_cases():
        if name.split(":")[0] in D.ATTENTION_TASKS:
            t = M.terms(work, CAL)
            binds.add(max(M.WORK_TERMS, key=t.get))
            assert work.cube and work.flops > 0
    assert binds == {"cube", "HBM"}, binds


def test_d256_decode_reads_faster_than_d128():
    """MHA 15's exception: the built-in reads the same 504 MB at D 256 (MHA 15) in 30% less time than at D 128
    (MHA 13): its HBM rate depends on the row length, the model's (fitted on streaming kernels) does not."""
    cases = {c["case_id"]: c for c in D.load()["tasks"]["mha"]["cases"]}
    w13, w15 = (M.builtin_work("mha", cases[i]) for i in (13, 15))
    assert w13.bytes == w15.bytes and cases[15]["input_shape"][0][-1] == 256
    assert cases[13]["baseline_perf_us"] / cases[15]["baseline_perf_us"] > 1.4
