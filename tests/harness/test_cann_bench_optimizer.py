"""cann-bench's optimizer tasks in the preset: the import (level2 apply_adam_w, level1 foreach_norm with their
times, foreach_norm's capped baselines with the measurement before the cap), the mapping to our ops (16-bit
AdamW states as the fp32 values they equal, norm orders our op lacks not run), cann-bench's golden formulas
against the preset's control, the judge on small cases of their form (special values included), the least work
the model prices and the bench row's % of the HBM roofline."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ascendc_ops.harness.cann_bench import data as D, optimizer as O, preset as CB, report as R
from ascendc_ops.harness.cann_bench.judge import controls
from ascendc_ops.harness.pipeline import calibration as M, load_platform
from ascendc_ops.harness.verify import suite as verify

FACTS = D.load()
TASKS = D.all_tasks(FACTS)
NOT_RUN_NORMS = {5: 3.0, 6: 1.5, 7: 1.5, 8: 4.0, 13: 5.0, 17: -1.0, 19: 3.0, 20: 2.5}  # cases.yaml's scalar


def _case(task, cid):
    return next(c for c in TASKS[task]["cases"] if c["case_id"] == cid)


def _adam(dtype="bfloat16", shape=(37, 129), ranges=((-3, 3), (-3, 3), (-0.3, 0.3), (0, 0.3)), **attrs):
    """A case of apply_adam_w's form at a twin-sized shape."""
    a = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.1, "epsilon": 1e-8, "maximize": False} | attrs
    return {"case_id": 1, "input_shape": [list(shape)] * 4, "dtype": [dtype] * 4, "attrs": a,
            "value_range": [list(r) for r in ranges]}  # fmt: skip


def _norm(p, shapes=((33, 65), (1001,)), dtype="float16", value_range=(-2, 2)):
    return {"case_id": 1, "input_shape": [[list(s) for s in shapes]], "dtype": [dtype], "attrs": {"scalar": p},
            "value_range": list(value_range)}  # fmt: skip


def test_both_tasks_are_imported_with_their_times():
    adam, norm = TASKS["apply_adam_w"], TASKS["foreach_norm"]
    assert adam["level"] == "level2" and norm["level"] == "level1" and "apply_adam_w" not in FACTS["tasks"]
    assert [c["case_id"] for c in adam["cases"]] == list(range(1, 21)) == [c["case_id"] for c in norm["cases"]]
    assert {c["baseline_kind"] for c in adam["cases"]} == {"measured"}  # every ApplyAdamW time below its cap
    capped = {c["case_id"]: c for c in norm["cases"] if c["baseline_kind"] == "cap"}
    assert set(capped) == {1, 4, 6, 7, 10}
    # cann-bench dd6486f capped them; its parent holds the measurements (case 4: 195.38 us, published 43.7)
    assert capped[4]["baseline_perf_us"] == 43.7 and capped[4]["precap"]["us"] == 195.38
    assert all(c["precap"]["capped_by"].startswith("dd6486f") for c in capped.values())


def test_mapping_and_the_cases_not_run():
    cases, skipped = CB.verify_cases(FACTS, {"apply_adam_w": set(), "foreach_norm": set()})
    assert len(cases) == 18 + 12 and len(skipped) == 2 + len(NOT_RUN_NORMS)
    assert [s.split(":")[0] for s in skipped[:2]] == ["cann_bench_apply_adam_w_10", "cann_bench_apply_adam_w_20"]
    assert all("maximize" in s for s in skipped[:2])
    for line, (cid, p) in zip(skipped[2:], NOT_RUN_NORMS.items(), strict=True):
        assert line.startswith(f"cann_bench_foreach_norm_{cid}: norm order scalar={p:g}")
    assert set(FACTS["ours"]["foreach_norm"]["not_run"]) == {str(i) for i in NOT_RUN_NORMS}
    assert set(FACTS["ours"]["apply_adam_w"]["not_run"]) == {"10", "20"}
    c = CB.to_case("apply_adam_w", _case("apply_adam_w", 9), "fixture")  # bf16, beta1 0, maximize false
    assert c.attrs == {"lr": 0.01, "beta1": 0.0, "beta2": 0.5, "weight_decay": 0.5, "eps": 1e-8, "step": 1.0,
                       "amsgrad": False, "maximize": False}  # fmt: skip
    n = CB.to_case("foreach_norm", _case("foreach_norm", 12), "fixture")  # inf norm of [-inf, inf] data
    x = np.asarray(n.inputs[0].value)
    assert n.attrs == {"scalar": math.inf} and np.isinf(x).sum() == 2 * (x.size // 20)
    assert CB.largest(_case("foreach_norm", 20)) == 2 * 3 * 17 * 1024 * 101  # a list's largest tensor


def _cann_bench_adam(t: dict, a: dict, maximize: bool) -> torch.Tensor:
    """cann-bench's golden.py for ApplyAdamW (step 1), written here from it: fp32, maximize adds the update."""
    var, grad, m, v = (t[k].float() for k in ("var", "grad", "m", "v"))
    m1, v1 = a["beta1"] * m + (1 - a["beta1"]) * grad, a["beta2"] * v + (1 - a["beta2"]) * grad * grad
    update = (m1 / (1 - a["beta1"])) / ((v1 / (1 - a["beta2"])).sqrt() + a["eps"]) + var * a["weight_decay"]
    return var + a["lr"] * update if maximize else var - a["lr"] * update


def test_controls_are_cann_bench_goldens():
    """The preset's control (our ops' PyTorch computations on inputs widened to fp32, rounded once) is
    cann-bench's golden.py: written here from it, for a bf16 AdamW step and a fp16 1-norm list; with maximize
    the two differ (why cases 10 and 20 are not run)."""
    spec = CB.spec_of("apply_adam_w")
    c = CB.to_case("apply_adam_w", _adam(), "fixture")
    t = R.make_tensors(c)
    y = controls(c, spec, t, None)[0]
    golden = _cann_bench_adam(t, c.attrs, False)
    assert y.dtype == torch.bfloat16 and torch.equal(y, golden.to(torch.bfloat16))
    up = CB.to_case("apply_adam_w", _adam(), "fixture")
    up.attrs = up.attrs | {"maximize": True}  # ours, torch.optim.AdamW's maximize, against cann-bench's
    ours = spec.second({k: v.float() for k, v in t.items()}, up.attrs)[0]
    theirs = _cann_bench_adam(t, up.attrs, True)
    assert (ours - theirs).abs().max() > 0.01 and O.adam_unsupported({"attrs": {"maximize": True}})
    n = CB.to_case("foreach_norm", _norm(1.0), "fixture")
    tn = R.make_tensors(n)
    got = controls(n, CB.spec_of("foreach_norm"), tn, None)
    want = [torch.norm(tn[k].float(), p=1.0).to(torch.float16) for k in ("x0", "x1")]
    assert [g.item() for g in got] == [w.item() for w in want]


@pytest.mark.parametrize(
    "case",
    [
        _adam(),  # bf16 states drawn in bf16
        _adam("float16", ranges=((-1000, 1000), (-1000, 1000), (-100, 100), (0, 100)), lr=0.1),
        _adam("float32", ranges=((-math.inf, math.inf), (-math.inf, math.inf), (-1, 1), (0, 1)), weight_decay=0.0),
        _adam("float32", ranges=((math.nan, math.nan),) * 4, epsilon=0.0),
        _norm(1.0),
        _norm(2.0, dtype="bfloat16"),
        _norm(math.inf, dtype="float32", value_range=(-math.inf, math.inf)),
        _norm(2.0, shapes=((3, 7, 13, 41), (5,), (0,)), dtype="float32", value_range=(-88, 88)),
    ],
    ids=["adam-bf16", "adam-fp16-wide", "adam-inf", "adam-nan", "norm1-fp16", "norm2-bf16", "norminf-inf", "norm2-3"],
)
def test_small_cases_pass_cann_bench_rule(case):
    task = "apply_adam_w" if "lr" in case["attrs"] else "foreach_norm"
    records = verify.run_case(CB.to_case(task, case, "fixture"), "auto")
    names = [r["output"] for r in records]
    assert names == (
        ["y", "m", "v"] if task == "apply_adam_w" else [f"y{i}" for i in range(len(case["input_shape"][0]))]
    )
    assert all(r["passed"] for r in records), [r["failures"] for r in records if not r["passed"]]
    assert {r["judged_by"] for r in records} == {"cann-bench"}


def test_least_work_by_hand():
    """npu_apply_adam_w reads var, grad, m, v and writes var, m, v in place; torch._foreach_norm reads the list
    and writes one norm per tensor."""
    w = O.builtin_work("apply_adam_w", _case("apply_adam_w", 2))  # fp16 2048 x 2048
    e = 2048 * 2048
    assert (w.bytes, w.written, w.in_place, w.flops, w.cube) == (4 * 2 * e + 3 * 2 * e, 3 * 2 * e, True, 0, False)
    w = O.builtin_work("foreach_norm", _case("foreach_norm", 2))  # 3 fp32 tensors of 2048 x 2048
    assert (w.bytes, w.written, w.in_place) == (3 * 4 * e + 3 * 4, 12, False)
    assert M.builtin_work("apply_adam_w", _case("apply_adam_w", 2)) is None  # outside the model check


def test_bench_row_prices_the_hbm_roofline():
    plat = load_platform("910B", calibrated=True)
    row = R.bench_row("apply_adam_w", _adam() | {"baseline_perf_us": 40.0, "baseline_kind": "measured",
                                                 "t_hw_us": 2.0}, FACTS, plat, accuracy=False)  # fmt: skip
    floor = M.terms(O.builtin_work("apply_adam_w", _adam()), plat)["HBM"]
    assert row["est_us"] > 0 and row["roofline"]["of"] == "HBM" and row["roofline"]["floor_us"] == pytest.approx(floor)
    assert (
        row["roofline"]["pct"] == pytest.approx(100 * floor / row["est_us"]) and row["speedup"] == 40.0 / row["est_us"]
    )
