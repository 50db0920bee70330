"""The measurements before the cap: cann-bench's dd6486f capped each published baseline at
max(10 t_hw, 10 us); the importer reads the measurement each capped case had before from the times file's
history, and the report counts those cases apart from the measured ones (table cell, summary line, the
explanations of the ones below 1.0x)."""

from __future__ import annotations

import pytest

from ascendc_ops.harness.cann_bench import data as D, explain as E, report as R

FACTS = D.load()
ROWS = {"rms_norm": 15, "swi_glu": 9}  # published 23.3 / 19.43 us, measured 1146.06 / 228.19 before the cap


def _case(task, cid):
    return next(c for c in D.all_tasks(FACTS)[task]["cases"] if c["case_id"] == cid)


def test_every_capped_case_with_a_history_holds_its_measurement():
    capped = [c for g in ("tasks", "preset_tasks", "floor_tasks") for t in FACTS[g].values() for c in t["cases"]
              if c["baseline_kind"] == "cap"]  # fmt: skip
    with_pre = [c for c in capped if "precap" in c]
    assert len(with_pre) == 67 and len(capped) == 67  # at this commit every capped case was measured before
    for c in with_pre:
        pre = c["precap"]
        assert pre["kind"] == D.PRECAP_KIND and pre["capped_by"].startswith("dd6486f")
        assert pre["us"] > D.cap_us(c["t_hw_us"]) == pytest.approx(c["baseline_perf_us"], abs=D.CAP_TOLERANCE_US)
    assert _case("rms_norm", 15)["precap"]["us"] == 1146.06
    assert all("precap" not in c for t in FACTS["tasks"].values() for c in t["cases"] if c["baseline_kind"] != "cap")


def _row(task, cid, est_us):
    c = _case(task, cid)
    row = {"task": task, "case_id": cid, "shapes": c["input_shape"], "dtype": c["dtype"][0], "attrs": c["attrs"],
           "baseline_us": c["baseline_perf_us"], "baseline_kind": c["baseline_kind"], "t_hw_us": c["t_hw_us"],
           "precap": c.get("precap"), "not_run": None, "est_us": est_us, "bound": "HBM", "pipes": {},
           "hbm_floor_us": None, "accuracy": True}  # fmt: skip
    return R.score(row)


def test_report_counts_the_pre_cap_cases_apart():
    rows = [_row("rms_norm", 15, 2000.0), _row("swi_glu", 9, 100.0), _row("rms_norm", 1, 10.0)]
    assert rows[0]["precap_speedup"] == pytest.approx(1146.06 / 2000) and rows[2].get("precap_speedup") is None
    table = R.table(rows)
    assert "cap; measured before the cap: 1146.06 us (dd6486f)" in table and "; 0.57x pre-cap" in table
    lines = R.summary(rows, FACTS, "ours")
    assert "measured baselines: ours >= 1.0x on 1 / 1" in "\n".join(lines)  # rms_norm 1 only
    assert any(line.startswith("measured before the cap") and "capped by dd6486f): ours >= 1.0x on 1 / 2" in line
               for line in lines)  # fmt: skip
    check = R.check_rows(FACTS)
    plat = R.model_platform(R.PLATFORM, True)
    expl = E.explanations(rows, check, FACTS, plat, "calibrated_err")
    assert [(e["task"], e["case_id"], e["pre_cap"]) for e in expl] == [("rms_norm", 15, True)]
    assert "against its measured before the cap (dd6486f)" in expl[0]["text"] and expl[0]["class"] == E.MORE_WORK
    text = "\n".join(E.lines(expl))
    assert "below 1.0x on a measured baseline: 0 case(s)" in text
    assert "below 1.0x on the measurement before the cap (counted apart): 1 case(s)" in text
