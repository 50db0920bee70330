"""The explanation of each measured cann-bench case below 1.0x (harness/cann_bench/explain.py): the classifier
on synthetic figures (each class and both sides of each boundary), the band from the held-out rows, the
text on synthetic rows, and one default platform for estimate, profile, the ops bench and the preset."""

from __future__ import annotations

import json

import pytest

from ascendc_ops import __main__ as cli
from ascendc_ops.harness import runner
from ascendc_ops.harness.bench import ops as bench
from ascendc_ops.harness.cann_bench import explain as E
from ascendc_ops.harness.pipeline import calibration as M, is_calibrated, load_platform, model_platform
from ascendc_ops.harness.pipeline.estimate import model_columns

CAL = load_platform("910B", calibrated=True)
TOL = 0.3


SLACK = 0.02


@pytest.mark.parametrize(
    ("est", "bound", "least", "base", "cls"),
    [
        (100.0, "HBM", 100.0, 100.0 / 1.3, E.TIE),  # ours at the floor, the floor exactly the band above the built-in
        (100.0, "HBM", 100.0, 100.0 / 1.3 - 0.01, E.BEYOND),  # just past the band: the model is questioned
        (150.0, "V", 100.0, 100.0 / 1.3 - 0.01, E.BEYOND),  # whatever ours does: no kernel ties it in this model
        (102.0, "HBM", 100.0, 90.0, E.TIE),  # the slack above the least work still counts as the floor
        (102.01, "HBM", 100.0, 90.0, E.ABOVE),  # past it, but even the least work is slower than the built-in
        (102.01, "HBM", 100.0, 100.0, E.MORE_WORK),  # past it, and the least work would reach 1.0x
        (129.0, "HBM", 100.0, 120.0, E.MORE_WORK),  # within the band, but the band is not the slack
        (8.77, "launch overhead", 8.6, 7.0, E.TIE),
        (8.78, "launch overhead", 8.6, 7.0, E.ABOVE),
        (8.78, "launch overhead", 8.6, 8.7, E.MORE_WORK),
        (9.0, "launch overhead", 8.6, 6.5, E.BEYOND),
        (101.0, "V", 100.0, 100.0, E.MORE_WORK),  # a pipe binds: a kernel deficit however close
        (101.0, "V", 100.0, 99.9, E.ABOVE),  # ... unless the least work is already slower than the built-in
        (101.0, "latency/sync (busiest pipe MTE2 40% busy)", 100.0, 100.0, E.MORE_WORK),
        (49.9, "cube", 49.0, 45.0, E.TIE),
        (49.9, "L2", 49.0, 45.0, E.TIE),
    ],
)
def test_classify(est, bound, least, base, cls):
    assert E.classify(est, bound, least, base, TOL, SLACK) == cls


def test_grouped_matmul_15_shape_is_more_work_not_a_tie():
    """The case the old rule called a tie: least work 63% of ours, within the model-vs-measurement band (75%)
    but far past the slack an ideal stream of its bytes needs."""
    least, est, base = 24.0, 38.1, 31.08
    slack = E.stream_slack(int(20.9e6), CAL)
    assert slack < 0.01 and least * (1 + slack) < est <= least * (1 + 0.75)  # the old rule's tie
    assert E.classify(est, "HBM", least, base, 0.75, slack) == E.MORE_WORK
    assert E.classify(least * (1 + slack), "HBM", least, base, 0.75, slack) == E.TIE


def _check_row(task, cid, bound, held, err):
    return {"task": task, "case_id": cid, "bound": bound, "set": "held out" if held else "calibration",
            "calibrated_err": err, "prior_err": 2 * err}  # fmt: skip


def test_band_is_the_most_a_held_out_case_of_the_bound_beat_the_floor():
    rows = [_check_row("rms_norm", 2, "HBM", True, 0.2), _check_row("rms_norm", 4, "HBM", True, -0.25),
            _check_row("rms_norm", 5, "HBM", False, 0.9), _check_row("swi_glu", 6, "launch", True, 0.1),
            {**_check_row("sigmoid", 4, "HBM", True, 0.22), "set": "held out (> L2)"}]  # fmt: skip
    assert E.band(rows, "HBM", "calibrated_err") == 0.22  # the calibration row's 90% is not a held-out error
    assert E.band(rows, "launch", "prior_err") == 0.2
    assert E.band(rows, "cube", "calibrated_err") == 0.22  # no held-out cube row: all held-out rows
    assert E.band(rows[1:2], "HBM", "calibrated_err") == 0.0  # slower than the floor: no model error


def test_model_error_and_the_tie():
    """The model's error is the most any held-out built-in beat the floor, whatever its bound; a speedup within it
    either way is a tie."""
    rows = [_check_row("rms_norm", 2, "HBM", True, 0.05), _check_row("swi_glu", 6, "launch", True, 0.1),
            _check_row("rms_norm", 5, "HBM", False, 0.9)]  # fmt: skip
    assert E.model_error(rows, "calibrated_err") == 0.1 and E.model_error(rows[2:], "calibrated_err") == 0.0
    assert E.verdict(1.1, 0.1) == E.verdict(1 / 1.1, 0.1) == E.verdict(1.0, 0.0) == E.TIE_MARK
    assert E.verdict(1.1001, 0.1) == E.FASTER and E.verdict(1 / 1.1 - 1e-4, 0.1) == E.SLOWER


def _facts(cases):
    return {"tasks": {t: {"cases": [c for c in cases if c["t"] == t]} for t in {c["t"] for c in cases}}}


def _row(task, cid, est, bound, base, pipes=None, kind="measured"):
    return {"task": task, "case_id": cid, "est_us": est, "bound": bound, "pipes": pipes or {}, "baseline_us": base,
            "baseline_kind": kind, "speedup": base / est}  # fmt: skip


def test_explanations_on_synthetic_rows():
    big = {"t": "rms_norm", "case_id": 5, "input_shape": [[4096, 8192], [8192]], "dtype": ["float32", "float32"],
           "attrs": {}}  # fmt: skip
    tiny = {"t": "grouped_matmul", "case_id": 18, "input_shape": [[200, 64], [4, 64, 128]],
            "dtype": ["bfloat16", "bfloat16"], "attrs": {}}  # fmt: skip
    least_big = M.predict(M.builtin_work("rms_norm", big), CAL)
    least_tiny = M.predict(M.builtin_work("grouped_matmul", tiny), CAL)
    rope = {"t": "apply_rotary_pos_emb", "case_id": 7, "input_shape": [[13, 511, 13, 128]] * 2 + [[511, 64]] * 2,
            "dtype": ["float16"] * 4, "attrs": {}, "note": "baseline_kernels: ConcatD×2 + RotaryMul×3"}  # fmt: skip
    rope_work = M.builtin_work("apply_rotary_pos_emb", rope)
    assert rope_work.bytes == 4 * 13 * 511 * 13 * 128 * 2 + 2 * 511 * 64 * 2  # q, k read and written; cos, sin read
    least_rope = M.predict(rope_work, CAL)
    check = [_check_row("rms_norm", 5, "HBM", False, 0.44), _check_row("rms_norm", 4, "HBM", True, -0.3),
             _check_row("grouped_matmul", 18, "launch", True, 0.25), _check_row("rms_norm", 20, "mixed", True, 0.1),
             _check_row("rms_norm", 2, "HBM", True, 0.1)]  # fmt: skip
    rows = [
        _row("rms_norm", 5, least_big, "HBM", least_big / 1.5, {"V": 0.27, "MTE2": 0.5}),  # built-in beyond the floor
        _row("grouped_matmul", 18, least_tiny, "launch overhead", least_tiny / 1.5),
        _row("rms_norm", 20, 2 * least_big, "scalar", least_big, {"S": 0.66, "V": 0.2}),
        _row("rms_norm", 2, 200.0, "HBM", 210.0),  # ahead: no explanation
        _row("rms_norm", 3, 200.0, "V", 100.0, kind="cap"),  # a cap is no measurement: none either
        _row("apply_rotary_pos_emb", 7, 2 * least_rope, "HBM", least_rope),  # not in the check: one kernel's work
        _row("layer_norm", 9, 20.0, "V", 10.0),  # no work model: said so
    ]
    facts = _facts(
        [
            big,
            tiny,
            {**big, "case_id": 20},
            rope,
            {"t": "layer_norm", "case_id": 9, "input_shape": [[4, 8]], "dtype": ["float16"]},
        ]
    )
    expl = {e["case_id"]: e for e in E.explanations(rows, check, facts, CAL, "calibrated_err")}
    assert sorted(expl) == [5, 7, 9, 18, 20]
    assert expl[5]["class"] == E.BEYOND and "TB/s over its whole time" in expl[5]["text"]
    assert "band 10%" in expl[5]["text"] and "100% of floor" in expl[5]["text"]
    assert expl[18]["class"] == E.BEYOND and "below the model's launch" in expl[18]["text"]
    assert (
        expl[20]["class"] == E.MORE_WORK
        and "binds scalar" in expl[20]["text"]
        and "2.00x the least" in expl[20]["text"]
    )
    assert expl[7]["class"] == E.MORE_WORK and "its baseline ran 5 kernels, the least work is one's" in expl[7]["text"]
    assert expl[9]["class"] is None and "no least-work model" in expl[9]["text"]
    out = E.lines(list(expl.values()))
    assert out[0].startswith("below 1.0x on a measured baseline: 5 case(s)") and len(out) == 6


def test_one_default_platform_and_both_spellings(tmp_path, capsys, monkeypatch):
    assert is_calibrated(model_platform("910B")) and not is_calibrated(model_platform("910B", calibrated=False))
    assert not is_calibrated(model_platform("310P"))  # no calibration for that chip: its file's values
    runs = {}
    for flag in ([], ["--uncalibrated"]):
        args = ["estimate", "rms_norm", "--shape", "8,64", "--dtype", "float32", "--json", "--out", str(tmp_path)]
        assert cli.main(args + flag) == 0
        runs[bool(flag)] = json.loads(capsys.readouterr().out)
    assert runs[False]["calibrated"] and not runs[True]["calibrated"]
    assert runs[False]["est_us"] > runs[True]["est_us"]  # the fitted launch is the larger one
    for flag, word in (([], "calibrated"), (["--uncalibrated"], "uncalibrated")):
        profile = ["profile", "rms_norm", "--shape", "8,64", "--dtype", "float32", "--out", str(tmp_path)]
        assert cli.main(profile + flag) == 0
        assert f"910B model, {word} (" in capsys.readouterr().out
    # the ops bench: the flag reaches its Config, and its 910B columns follow it
    seen = []
    monkeypatch.setattr(bench, "run", lambda cfg, out=None: seen.append(cfg.calibrated))
    for flag in ([], ["--uncalibrated"]):
        assert cli.main(["bench", "--op", "rms_norm", "--shape", "8,64", "--no-progress", *flag]) == 0
    assert seen == [True, False]
    inputs = runner.make_inputs("rms_norm", (8, 64), "float32")[1]
    cal, prior = (model_columns("rms_norm", inputs, "fwd", calibrated=c)["est_us_910b"] for c in (True, False))
    assert cal > prior
