"""cann-bench's cross-entropy tasks in the preset: the import (level2 cross_entropy_loss with its measured times,
level4 linear_cross_entropy from bench_lab/kernel_bench with none), the mapping to our ops (channel-first logits
not run, int labels drawn over both ends of their range), cann-bench's golden semantics against our float64
reference, the judge on small cases of their form, the least work the model prices, and the bench row of a
linear_cross_entropy case with its backward launch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ascendc_ops.harness.cann_bench import cross_entropy as CE, data as D, preset as CB, report as R
from ascendc_ops.harness.families.cross_entropy import lce_flops
from ascendc_ops.harness.pipeline import calibration as M, estimate, load_platform, model_launches
from ascendc_ops.harness.verify import suite as verify

FACTS = D.load()
# tasks/metadata/910b2.json at the snapshot's commit: the cross_entropy_loss baselines below the cap
MEASURED = {2, 3, 5, 17}


def _case(task, cid):
    return next(c for c in FACTS["tasks"][task]["cases"] if c["case_id"] == cid)


def _lce(cid=1, reduction="mean", ignore=-100, labels=(0, 999), dtype="bfloat16", shape=(70, 96, 1000)):
    """A case of linear_cross_entropy's form at a twin-sized shape (T, H, V)."""
    t, h, v = shape
    return {"case_id": cid, "input_shape": [[t, h], [v, h], [t]], "dtype": [dtype, dtype, "int32"],
            "attrs": {"reduction": reduction, "ignore_index": ignore},
            "value_range": [[-1, 1], [-0.02, 0.02], list(labels)]}  # fmt: skip


def test_both_tasks_are_imported_from_their_sets():
    ce, lce = FACTS["tasks"]["cross_entropy_loss"], FACTS["tasks"]["linear_cross_entropy"]
    assert ce["level"] == "level2" and ce["files"]["times"] == "tasks/metadata/910b2.json"
    assert [c["case_id"] for c in ce["cases"]] == list(range(1, 21))
    assert {c["case_id"] for c in ce["cases"] if c["baseline_kind"] == "measured"} == MEASURED
    assert lce["level"] == "level4" and lce["operator"] == "LinearCrossEntropy"
    assert lce["files"]["cases"] == "bench_lab/kernel_bench/level4/linear_cross_entropy/cases.yaml"
    assert lce["files"]["times"] == "bench_lab/kernel_bench/metadata/910b2.json"
    assert len(lce["cases"]) == 20 and {c["baseline_kind"] for c in lce["cases"]} == {"missing"}
    vocabularies = {c["input_shape"][1][0] for c in lce["cases"]}
    assert vocabularies == {32000, 128256, 129280, 152064}  # LLaMA2, LLaMA3, DeepSeek-V3, Qwen2


def test_channel_first_cases_are_not_run_with_the_reason():
    cases, skipped = CB.verify_cases(FACTS, {"cross_entropy_loss": set()})
    not_run = {9, 11, 13, 14, 18, 19, 20}  # the 3-5D cases: classes in dim 1
    assert sorted(int(c.name.rsplit("_", 1)[1]) for c in cases) == sorted(set(range(1, 21)) - not_run)
    assert len(skipped) == len(not_run) and all("channel-first" in s and "Transpose" in s for s in skipped)
    assert set(FACTS["ours"]["cross_entropy_loss"]["not_run"]) == {str(i) for i in not_run}
    assert FACTS["ours"]["linear_cross_entropy"] == {"ours": CE.LOSS_OP, "semantics": CE.LCE_SEMANTICS,
                                                     "not_run": {}}  # fmt: skip


def test_cross_entropy_mapping():
    c = CB.to_case("cross_entropy_loss", _case("cross_entropy_loss", 17), "fixture")  # 4097 x 511 fp32, none, -1
    assert c.op == "cross_entropy_loss" and c.attrs == {"reduction": "none", "ignore_index": -1}
    assert [(t.name, t.dtype, t.shape) for t in c.outputs] == [
        ("loss", "float32", (4097,)), ("log_prob", "float32", (4097, 511)), ("zloss", "float32", (0,)),
        ("lse_for_zloss", "float32", (0,)),
    ]  # fmt: skip
    target = np.asarray(c.inputs[1].value)
    assert c.inputs[1].dtype == "int64" and target.min() == 0 and target.max() == 510  # randint: both ends
    mean = CB.to_case("cross_entropy_loss", _case("cross_entropy_loss", 7), "fixture")
    assert mean.outputs[0].shape == (1,) and mean.attrs["ignore_index"] == 0


def test_linear_cross_entropy_mapping():
    c = CB.to_case("linear_cross_entropy", _case("linear_cross_entropy", 14), "fixture")  # labels [0, 1], ignore 0
    assert c.op == CE.LOSS_OP and c.attrs == {"reduction": "mean", "ignore_index": 0}
    assert [(t.name, t.dtype, t.shape) for t in c.inputs] == [
        ("hidden", "bfloat16", (1024, 3584)), ("weight", "bfloat16", (152064, 3584)), ("target", "int64", (1024,))
    ]  # fmt: skip
    assert [t.name for t in c.outputs] == ["loss", "logits_max", "sum_exp", "target_logit", "logit_sum"]
    assert set(np.unique(np.asarray(c.inputs[2].value))) == {0.0, 1.0}  # about half the tokens ignored


@pytest.mark.parametrize("reduction, ignore, labels", [("mean", -100, (0, 999)), ("sum", 0, (0, 1))])
def test_golden_is_cann_bench_semantics(reduction, ignore, labels):
    """Our float64 loss equals cann-bench's golden formula (matmul, F.cross_entropy) run in float64, and its
    statistics those of the same logits."""
    c = CB.to_case("linear_cross_entropy", _lce(reduction=reduction, ignore=ignore, labels=labels), "fixture")
    t = {k: v.double() if v.is_floating_point() else v for k, v in R.make_tensors(c).items()}
    x = t["hidden"] @ t["weight"].T
    by_hand = F.cross_entropy(x, t["target"], reduction=reduction, ignore_index=ignore)
    ours = CE.golden_loss({k: v.numpy() for k, v in t.items()}, c.attrs)
    np.testing.assert_allclose(ours[0], [by_hand.item()], rtol=1e-12)
    picked = x.gather(1, t["target"][:, None])[:, 0]
    stats = (x.amax(1), torch.exp(x - x.amax(1, keepdim=True)).sum(1), picked, x.sum(1))
    for a, b in zip(ours[1:], stats, strict=True):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_small_cases_pass_cann_bench_rule(dtype):
    c = CB.to_case("linear_cross_entropy", _lce(dtype=dtype, reduction="sum"), "fixture")
    records = verify.run_case(c, "auto")
    assert [r["output"] for r in records] == ["loss", "logits_max", "sum_exp", "target_logit", "logit_sum"]
    assert all(r["passed"] and r["judged_by"] == "cann-bench" for r in records), records


def test_cross_entropy_takes_the_float32_witness():
    """Case 12's form (2 classes, logits +-1000, bf16) at 20011 rows: the bf16 control's log_softmax misses MARE on
    more than 0.1% of log_prob (log-probabilities near 0), so without the witness the rule blames the golden."""
    form = {**_case("cross_entropy_loss", 12), "input_shape": [[20011, 2], [20011]]}
    c = CB.to_case("cross_entropy_loss", form, "fixture")
    assert all(r["passed"] for r in verify.run_case(c, "auto"))
    c.witness = None
    log_prob = verify.run_case(c, "auto")[1]
    assert not log_prob["passed"] and "the control misses MARE" in log_prob["failures"][0]


def _records_with(c, wrong: int) -> list[dict]:
    """verify's records of case `c` with our output `wrong` 1% off: above fp32's MARE 10 x 2^-13, where the control
    has no such error."""
    spec = CB.spec_of(c.op)
    run = spec.run

    def off(t, a):
        outs = list(run(t, a))
        outs[wrong] = outs[wrong] * 1.01
        return tuple(outs)

    try:
        object.__setattr__(spec, "run", off)
        return verify.run_case(c, "auto")
    finally:
        object.__setattr__(spec, "run", run)


def test_a_wrong_loss_fails():
    c = CB.to_case("linear_cross_entropy", _lce(dtype="float32"), "fixture")
    records = _records_with(c, 0)
    assert not records[0]["passed"] and all(r["passed"] for r in records[1:])
    row = R.judge({}, records)
    assert row["accuracy"] is False and row["failures"][0].startswith("loss: ") and row["extra_failures"] == []


def test_only_the_task_output_is_the_task_verdict():
    """cann-bench's LinearCrossEntropy defines one output, the loss (its proto.yaml and golden.py): our statistics
    are judged by its rule but apart, so a wrong logit_sum is reported and leaves the case's verdict to the loss."""
    c = CB.to_case("linear_cross_entropy", _lce(dtype="float32"), "fixture")
    records = _records_with(c, 4)
    assert [r["task_output"] for r in records] == [True, False, False, False, False]
    assert records[0]["passed"] and not records[4]["passed"]
    row = R.judge({}, records)
    assert row["accuracy"] is True and row["failures"] == [] and row["default_rule"] is True
    assert len(row["extra_failures"]) == 1 and row["extra_failures"][0].startswith("logit_sum: ")


def test_least_work():
    ce = M.builtin_work("cross_entropy_loss", _case("cross_entropy_loss", 5))  # 4096 x 16384 fp32, none
    assert ce.bytes == 4096 * 16384 * 4 + 4096 * 8 + 4096 * 4 and ce.written == 4096 * 4 and ce.flops == 0
    assert M.builtin_work("cross_entropy_loss", _case("cross_entropy_loss", 3)).written == 2  # mean: one bf16
    lce = M.builtin_work("linear_cross_entropy", _case("linear_cross_entropy", 5))  # 1024 x 3584 x 152064 bf16
    assert lce.flops == 2 * 1024 * 3584 * 152064 and lce.cube and lce.written == 4
    assert lce.bytes == (1024 + 152064) * 3584 * 2 + 1024 * 4 + 4
    shapes = [torch.empty(s, device="meta") for s in _case("linear_cross_entropy", 5)["input_shape"]]
    assert lce_flops(shapes, "bwd") == 3 * lce.flops  # the backward's least work, by the family's count


def test_bench_row_of_a_linear_cross_entropy_case():
    """The forward's estimate, its share of the cube peak, and the backward launch's estimate, from one row."""
    plat = load_platform("910B", calibrated=True)
    case = _lce(shape=(256, 512, 1000))
    facts = {"source": FACTS["source"], "tasks": {"linear_cross_entropy": {**FACTS["tasks"]["linear_cross_entropy"],
                                                                           "cases": [case]}}}  # fmt: skip
    row = R.bench_row("linear_cross_entropy", {**case, "baseline_perf_us": None, "t_hw_us": None,
                                               "baseline_kind": "missing"}, facts, plat, False)  # fmt: skip
    assert row["est_us"] > 0 and row["speedup"] is None and row["hap"] is None
    cube_us = 2 * 256 * 512 * 1000 / plat.cube_peak_flops("bfloat16") * 1e6
    assert row["roofline"]["of"] == "cube" and row["roofline"]["floor_us"] == pytest.approx(cube_us)
    assert row["roofline"]["pct"] == pytest.approx(100 * cube_us / row["est_us"])
    bwd = row["backward"]
    assert bwd["est_us"] > row["est_us"] and bwd["cube_us"] == pytest.approx(3 * cube_us)
    assert bwd["pct"] == pytest.approx(100 * bwd["cube_us"] / bwd["est_us"])
    table = R.table([row])
    assert "| bwd 910B est us |" in table and f"{bwd['est_us']:.1f}, binds {bwd['bound']}" in table


def test_cross_entropy_control_is_cann_bench_golden_in_the_dtype():
    c = CB.to_case("cross_entropy_loss", _case("cross_entropy_loss", 7), "fixture")  # fp16, ignore_index 0
    t = R.make_tensors(c)
    spec = CB.spec_of(c.op)
    control = c.control(c, spec, t, spec.second(t, c.attrs))
    golden = F.cross_entropy(t["input"], t["target"], ignore_index=0)  # golden.py: in the input's dtype
    assert control[0].dtype == torch.float16 and torch.equal(control[0].reshape(()), golden)


@pytest.mark.parametrize("n, ran", [(1, [0]), (2, [0, 1]), (3, [0, 1, 2]), (6, [0, 1, 1, 1, 1, 5])])
def test_each_forward_launch_has_a_stand_in_of_its_plan(n, ran):
    assert CE.stand_ins(n) == ran


def test_the_forward_from_its_launches_alone_is_the_whole_forward():
    """7 x 1536 x 40000 bf16 takes two launches (the weight is past the L2 budget): each run alone is modelled as
    in the op's chain (the second folding into the statistics of no logit instead of the first's), and the sum is
    the op's estimate, launch by launch."""
    plat = load_platform("910B", calibrated=True)
    g = torch.Generator().manual_seed(3)
    t = {"hidden": torch.randn(7, 1536, generator=g).bfloat16(),
         "weight": (torch.randn(40000, 1536, generator=g) / 40).bfloat16(),
         "target": torch.randint(0, 40000, (7,), generator=g)}  # fmt: skip
    whole = model_launches(
        estimate.record_packed(lambda: torch.ops.custom.linear_cross_entropy(*t.values()), plat), plat
    )
    alone = CE.forward_model(t, plat)
    assert len(whole.launches) == len(alone.launches) == 2
    for a, b in zip(alone.launches, whole.launches, strict=True):
        assert a.est_us == pytest.approx(b.est_us, rel=1e-9) and a.gm_bytes == b.gm_bytes
    assert alone.est_us == pytest.approx(whole.est_us, rel=1e-9)


def test_the_backward_from_its_launches_alone_is_the_whole_backward():
    """7 x 1536 x 40000 bf16: the backward's three launches (first, middle, last: grad_hidden's sums started, added
    to, cast) each run alone are modelled as in the op's chain, launch by launch."""
    plat = load_platform("910B", calibrated=True)
    g = torch.Generator().manual_seed(4)
    t = {"hidden": torch.randn(7, 1536, generator=g).bfloat16(),
         "weight": (torch.randn(40000, 1536, generator=g) / 40).bfloat16(),
         "target": torch.randint(0, 40000, (7,), generator=g)}  # fmt: skip
    args = CE.backward_inputs(t, {"ignore_index": -100, "reduction": "mean"})
    whole = model_launches(
        estimate.record_packed(lambda: torch.ops.custom.linear_cross_entropy_grad(*args), plat), plat
    )
    alone = CE.backward_model(args, plat)
    assert len(whole.launches) == len(alone.launches) == 3
    for a, b in zip(alone.launches, whole.launches, strict=True):
        assert a.est_us == pytest.approx(b.est_us, rel=1e-9) and a.gm_bytes == b.gm_bytes
    assert alone.est_us == pytest.approx(whole.est_us, rel=1e-9)


def test_token_lse_is_torch_logsumexp():
    g = torch.Generator().manual_seed(5)
    h, w = torch.randn(9, 32, generator=g).bfloat16(), torch.randn(1000, 32, generator=g).bfloat16()
    whole = torch.logsumexp(h.double() @ w.double().T, dim=1)
    torch.testing.assert_close(CE.token_lse(h, w, rows=300).double(), whole, rtol=1e-6, atol=1e-6)
