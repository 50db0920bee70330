"""The model check (harness/pipeline/calibration.py): the built-ins' least work by hand, the bound rule, the
lower-envelope fit recovering known parameters from synthetic times, the held-out and checked cases never
moving the fit, the committed calibration file being a fresh fit of our snapshot, no measured built-in faster
than the model's least work for it, and the tables' columns."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ascendc_ops.harness.cann_bench import data as D, report as R
from ascendc_ops.harness.pipeline import calibration as M, load_platform

ROOT = Path(__file__).resolve().parents[2]
PRIOR = load_platform("910B")


def _case(cid, shapes, dtypes, us, attrs=None, kind="measured", note="baseline_kernels: X×1"):
    return {"case_id": cid, "input_shape": shapes, "dtype": dtypes, "attrs": attrs or {}, "note": note,
            "baseline_perf_us": us, "baseline_kind": kind}  # fmt: skip


def test_builtin_work_by_hand():
    rms = M.builtin_work("rms_norm", _case(1, [[4, 8], [8]], ["float16", "float16"], 1.0))
    assert (rms.bytes, rms.flops, rms.cube) == (64 + 16 + 64 + 4 * 4, 0, False)  # x, gamma; y, rstd fp32 per row
    rms4d = M.builtin_work("rms_norm", _case(1, [[2, 3, 5, 8], [5, 8]], ["float", "float"], 1.0))
    assert rms4d.bytes == 960 + 160 + 960 + 4 * 6  # gamma over the last two dims: 6 rows
    swi = M.builtin_work("swi_glu", _case(1, [[6, 4]], ["bfloat16"], 1.0, {"dim": 0}))
    assert swi.bytes == 48 + 24
    gmm = _case(1, [[8, 4], [2, 4, 6], [2, 6]], ["float16"] * 3, 1.0, {"transpose_weight": False})
    w = M.builtin_work("grouped_matmul", gmm)
    assert (w.bytes, w.flops, w.cube) == (64 + 96 + 24 + 8 * 6 * 2, 2 * 8 * 4 * 6, True)
    gmm_t = _case(1, [[8, 4], [2, 6, 4]], ["float32"] * 2, 1.0, {"transpose_weight": True})
    assert M.builtin_work("grouped_matmul", gmm_t).flops == 2 * 8 * 4 * 6  # N from weight[1] when transposed
    rope = _case(1, [[1, 3, 2, 8], [1, 3, 1, 8], [3, 4], [3, 4]], ["float16"] * 4, 1.0)
    assert M.builtin_work("apply_rotary_pos_emb", rope).bytes == (48 + 24 + 12 + 12) * 2 + (48 + 24) * 2  # q, k
    assert M.builtin_work("layer_norm", gmm) is None
    assert (rms.written, swi.written, w.written) == (64 + 16, 24, 8 * 6 * 2)  # what the L2 holds back
    mx = M.builtin_work("maximum", _case(1, [[3, 1, 8], [5, 8]], ["float32"] * 2, 1.0))  # broadcast: [3, 5, 8]
    assert (mx.read, mx.written, mx.cube) == (96 + 160, 3 * 5 * 8 * 4, False)
    assert M.builtin_work("sigmoid", _case(1, [[4, 8]], ["bfloat16"], 1.0)).bytes == 64 + 64


def test_kernel_count_from_the_note():
    assert M.kernels({"note": "M-fp16 | baseline_kernels: RmsNorm×1"}) == 1
    assert M.kernels({"note": "x | baseline_kernels: ConcatD×2 + BroadcastTo×2 + ApplyRotaryPosEmb×1"}) == 5
    assert M.kernels({"note": "no list"}) == 0 and M.kernels({"note": None}) == 0


def test_terms_and_bound():
    big = M.Work(bytes=int(PRIOR.hbm_bytes_per_s * 100e-6), flops=0, dtype="float16", cube=False)  # 100 us
    t = M.terms(big, PRIOR)
    assert t["HBM"] == pytest.approx(100.0) and t["launch"] == pytest.approx(PRIOR.launch_us(48))
    assert M.predict(big, PRIOR) == pytest.approx(100.0 + PRIOR.launch_us(48))
    assert M.bound(big, PRIOR, 10.0) == "HBM" and M.bound(big, PRIOR, 30.0) == "mixed"  # 100 < 4 x 30
    tiny = M.Work(bytes=1000, flops=0, dtype="float16", cube=False)
    assert M.bound(tiny, PRIOR, 10.0) == "launch"
    gemm = M.Work(bytes=1000, flops=int(PRIOR.cube_peak_flops("float16") * 80e-6), dtype="float16", cube=True)
    assert M.terms(gemm, PRIOR)["cube"] == pytest.approx(80.0) and M.bound(gemm, PRIOR, 10.0) == "cube"
    assert M.terms(gemm, PRIOR)["launch"] == pytest.approx(PRIOR.launch_us(24))  # the cube's cores start


TRUTH = {"launch_us": 2.5, "cube_launch_us": 6.0, "hbm_bytes_per_s": 1.25e12}


def _synthetic_facts(slow: float = 1.0) -> dict:
    """Floor-task cases at the model's least work under TRUTH (odd ids), even ids and a case larger than the
    L2 `slow` times that, GroupedMatmul cases at their floor, a checked built-in 3x slower, and two cases the
    check leaves out."""
    truth = PRIOR.with_values(TRUTH)
    sig, gmm, rms = [], [], []
    for cid, n in enumerate([1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 23, 1 << 24, 60 << 20], start=1):
        c = _case(cid, [[n]], ["float32"], 0.0)
        held = cid % 2 == 0 or cid == 8
        c["baseline_perf_us"] = M.predict(M.builtin_work("sigmoid", c), truth) * (slow if held else 1)
        sig.append(c)
    for cid, (m, k, n) in enumerate([(16, 32, 32), (32, 64, 64), (2048, 2048, 2048)], start=1):
        c = _case(cid, [[m, k], [2, k, n]], ["float16"] * 2, 0.0, {"transpose_weight": False})
        c["baseline_perf_us"] = M.predict(M.builtin_work("grouped_matmul", c), truth) * (slow if cid == 3 else 1)
        gmm.append(c)
    r = _case(1, [[4096, 1024], [1024]], ["float16"] * 2, 0.0)
    r["baseline_perf_us"] = 3 * M.predict(M.builtin_work("rms_norm", r), truth)
    rms += [r, _case(99, [[2, 64], [64]], ["float32"] * 2, 3.0, kind="cap")]  # no measurement: left out
    rms.append(_case(97, [[2, 64], [64]], ["float32"] * 2, 3.0, note="baseline_kernels: A×1 + B×1"))
    return {"source": {}, "tasks": {"rms_norm": {"cases": rms}, "grouped_matmul": {"cases": gmm}},
            "floor_tasks": {"sigmoid": {"cases": sig}}}  # fmt: skip


def test_fit_recovers_known_parameters():
    cases, left = M.check_cases(_synthetic_facts())
    assert len(cases) == 12 and len(left) == 2 and "cap" in left[0] and "2 kernels" in left[1]
    fit = M.calibrate(cases, PRIOR)
    for k, v in TRUTH.items():
        assert fit[k]["value"] == pytest.approx(v, rel=1e-6)
    assert fit["launch_us"]["cases"] == ["sigmoid:1", "sigmoid:3", "sigmoid:5", "sigmoid:7"]  # odd ids, fit the L2
    assert fit["cube_launch_us"]["cases"] == ["grouped_matmul:1", "grouped_matmul:2"]  # the start-bound ones


def test_the_envelope_is_under_every_point():
    pts = [(0.0, 3.0, 1.0), (1.0, 4.0, 1.0), (2.0, 5.5, 1.0), (3.0, 6.0, 1.0), (0.5, 9.0, 1.0)]
    a, b = M.lower_envelope(pts)
    assert all(a + b * x <= t + 1e-12 for x, t, _ in pts)
    assert (a, b) == pytest.approx((3.0, 1.0))  # through the two points whose line leaves the least gap


def test_held_out_and_checked_cases_never_move_the_fit():
    fit = M.calibrate(M.check_cases(_synthetic_facts())[0], PRIOR)
    assert M.calibrate(M.check_cases(_synthetic_facts(slow=3.0))[0], PRIOR) == fit
    assert M.calibrate(M.check_cases(_synthetic_facts(slow=0.5))[0], PRIOR) == fit  # even faster than the fit
    moved = _synthetic_facts()
    moved["floor_tasks"]["sigmoid"]["cases"][6]["baseline_perf_us"] *= 0.8  # case 7: a calibration case
    assert M.calibrate(M.check_cases(moved)[0], PRIOR)["hbm_bytes_per_s"]["value"] > 1.3e12
    facts = _synthetic_facts()
    rows = M.rows(facts, PRIOR, PRIOR.with_values({k: fit[k]["value"] for k in M.FITTED}))
    sets = {f"{r['task']}:{r['case_id']}": r["set"] for r in rows}
    assert sets["sigmoid:2"] == "held out" and sets["sigmoid:7"] == "calibration"
    assert sets["sigmoid:8"] == "held out (> L2)" and sets["rms_norm:1"] == "checked"
    assert sets["grouped_matmul:3"] == "held out"
    assert max(abs(r["calibrated_err"]) for r in rows if r["task"] != "rms_norm") < 1e-6  # synthetic: exact
    assert M.below_floor(rows) == []


def test_committed_calibration_is_a_fresh_fit_of_the_snapshot():
    spec = importlib.util.spec_from_file_location("calibrate_platform", ROOT / "tools" / "calibrate_platform.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0
    committed = json.loads(M.calibration_path("910B").read_text())
    assert M.same_calibration(committed, M.calibration_doc(D.load(), PRIOR))
    cal = load_platform("910B", calibrated=True)
    assert cal.hbm_bytes_per_s == committed["values"]["hbm_bytes_per_s"]["value"]
    assert cal.costs["launch_us"] == committed["values"]["launch_us"]["value"]
    assert cal.costs["cube_launch_us"] == committed["values"]["cube_launch_us"]["value"]
    assert not cal.l2_warm
    assert "fitted" in cal.sources["launch_us"] and "d59d44ca" in cal.sources["hbm_bytes_per_s"]
    assert cal.rates == PRIOR.rates and cal.cube_peak_flops("float16") == PRIOR.cube_peak_flops("float16")
    fit = M.calibrate(M.check_cases(D.load())[0], PRIOR)
    by_row = {(r["bound"], r["set"]): [] for r in M.rows(D.load(), PRIOR, cal)}
    for r in M.rows(D.load(), PRIOR, cal):
        by_row[(r["bound"], r["set"])].append(f"{r['task']}:{r['case_id']}")
    calibration = sorted(n for (_, st), ns in by_row.items() if st == "calibration" for n in ns)
    assert calibration == sorted(fit["launch_us"]["cases"] + fit["cube_launch_us"]["cases"])  # the table's set
    assert all(not n.startswith(("rms_norm", "swi_glu", "apply_rotary")) for n in calibration)  # not fitted on rivals
    with pytest.raises(ValueError, match="no calibration"):
        load_platform("310P", calibrated=True)


def test_check_table_and_summary_columns(capsys):
    rows = R.print_model_check(D.load(), True, None)
    out = capsys.readouterr().out
    head = out.split("\n")[2]
    for col in ("built-in bound", "set", "measured us", "model us (prior)", "error (prior)", "error (calibrated)"):
        assert col in head
    assert len(rows) == sum(line.startswith("| ") for line in out.splitlines()) - 1
    assert "HBM, held out" in out and "launch, held out" in out
    assert "hicann/cann-bench @ d59d44ca" in out and "run on " in out and "calibrated:" in out
