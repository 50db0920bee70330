"""The model check (harness/pipeline/calibration.py): the built-ins' least work by hand, the bound rule, the fit
recovering known parameters from synthetic times, the held-out cases never moving the fit, the committed
calibration file being a fresh fit of our snapshot, and the tables' columns."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

from ascendc_ops.harness.cann_bench import data as D, report as R
from ascendc_ops.harness.pipeline import calibration as M, l2_check as L, load_platform

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


def _synthetic_facts(launch_us: float, hbm: float) -> dict:
    """Launch-bound and HBM-bound cases of both parities whose times the model with (launch_us, hbm) gives
    exactly."""
    truth = PRIOR.with_values({"launch_us": launch_us, "hbm_bytes_per_s": hbm})
    cases = []
    for cid, rows in enumerate([4, 6, 8, 10, 400_000, 600_000, 900_000, 1_200_000, 2_000_000], start=1):
        c = _case(cid, [[rows, 64], [64]], ["float32", "float32"], 0.0)
        c["baseline_perf_us"] = M.predict(M.builtin_work("rms_norm", c), truth)
        cases.append(c)
    cases.append(_case(99, [[2, 64], [64]], ["float32"] * 2, 3.0, kind="cap"))  # no measurement: left out
    cases.append(_case(97, [[2, 64], [64]], ["float32"] * 2, 3.0, note="baseline_kernels: A×1 + B×1"))
    return {"source": {}, "tasks": {"rms_norm": {"cases": cases}}}


def test_fit_recovers_known_parameters():
    facts = _synthetic_facts(6.5, 1.25e12)
    cases, left = M.check_cases(facts)
    assert len(cases) == 9 and len(left) == 2 and "cap" in left[0] and "2 kernels" in left[1]
    fit = M.calibrate(cases, PRIOR)
    assert fit["launch_us"]["value"] == pytest.approx(6.5, rel=1e-6)
    assert fit["hbm_bytes_per_s"]["value"] == pytest.approx(1.25e12, rel=1e-6)
    assert fit["launch_us"]["cases"] == ["rms_norm:1", "rms_norm:3"]  # odd ids only
    assert fit["hbm_bytes_per_s"]["cases"] == ["rms_norm:5", "rms_norm:7", "rms_norm:9"]


def test_held_out_cases_never_move_the_fit():
    facts = _synthetic_facts(6.5, 1.25e12)
    fit = M.calibrate(M.check_cases(facts)[0], PRIOR)
    moved = copy.deepcopy(facts)
    for c in moved["tasks"]["rms_norm"]["cases"]:
        if M.held_out(c["case_id"]):
            c["baseline_perf_us"] *= 3.0
    assert M.calibrate(M.check_cases(moved)[0], PRIOR) == fit
    moved["tasks"]["rms_norm"]["cases"][4]["baseline_perf_us"] *= 3.0  # case 5: a calibration case
    assert M.calibrate(M.check_cases(moved)[0], PRIOR)["hbm_bytes_per_s"]["value"] < 0.9e12
    rows = M.rows(facts, PRIOR, PRIOR.with_values({k: fit[k]["value"] for k in M.FITTED}))
    assert {r["set"] for r in rows if r["case_id"] % 2 == 0} == {"held out"}
    assert max(abs(r["calibrated_err"]) for r in rows) < 1e-6  # synthetic: the model is exact


def test_committed_calibration_is_a_fresh_fit_of_the_snapshot():
    spec = importlib.util.spec_from_file_location("calibrate_platform", ROOT / "tools" / "calibrate_platform.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--check"]) == 0
    committed = json.loads(M.calibration_path("910B").read_text())
    assert M.same_calibration(committed, M.calibration_doc(D.load(), PRIOR, L.decide(D.load(), PRIOR)))
    cal = load_platform("910B", calibrated=True)
    assert cal.hbm_bytes_per_s == committed["values"]["hbm_bytes_per_s"]["value"]
    assert cal.costs["launch_us"] == committed["values"]["launch_us"]["value"]
    assert "fitted" in cal.sources["launch_us"] and "d59d44ca" in cal.sources["hbm_bytes_per_s"]
    assert cal.rates == PRIOR.rates and cal.cube_peak_flops("float16") == PRIOR.cube_peak_flops("float16")
    fit = M.calibrate(M.check_cases(D.load())[0], PRIOR)
    by_row = {(r["bound"], r["set"]): [] for r in M.rows(D.load(), PRIOR, cal)}
    for r in M.rows(D.load(), PRIOR, cal):
        by_row[(r["bound"], r["set"])].append(f"{r['task']}:{r['case_id']}")
    assert by_row[("HBM", "calibration")] == fit["hbm_bytes_per_s"]["cases"]  # the table's bound is the fit's
    assert by_row[("launch", "calibration")] == fit["launch_us"]["cases"]
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
