"""flash_attention_score_grad_enhance's TND sink rows (cann-bench's golden: sink_num x 64 key / value rows every
sequence attends to) through two launches of our fusion_attention_grad (harness/cann_bench/attention_sink_rows.py):
the statistics' relayout, the merged forward and the gradients against the float64 golden over the joined keys, the
kernel's error bounds, and the model's time of both launches and the steps between them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ascendc_ops.harness.cann_bench import (
    attention_grad_enhance as E,
    attention_sink_rows as S,
    preset as CB,
    report as R,
)
from ascendc_ops.harness.pipeline import estimate, load_platform, model_launches
from ascendc_ops.harness.verify import suite as verify
from ascendc_ops.ops.attention_reference import fusion_attention_reference

make_tensors = R.make_tensors


def _small(dtype="float32", mode=4, lens=(20, 40, 36), sink_num=1):
    """A case of the task's TND sink form at a twin-sized shape: 4 query heads over 2, D 32 + rope 16, Dv 32."""
    t = sum(lens)
    return {"case_id": 99, "dtype": [dtype] * 6, "value_range": [[-1, 1]] * 6,
            "input_shape": [[t, 4, 32], [t, 2, 32], [t, 2, 32], [t, 4, 32], [t, 4, 16], [t, 2, 16]],
            "attrs": {"head_num": 4, "input_layout": "TND", "scale": 0.1, "scale_value": 0.1, "keep_prob": 1.0,
                      "pre_tokens": 7, "next_tokens": 0, "actual_seq_qlen": list(lens),
                      "actual_seq_kvlen": list(lens), "sparse_mode": mode, "sink_num": sink_num}}  # fmt: skip


def test_a_sink_case_is_our_grad_with_the_rows_in_front():
    c = CB.to_case(E.TASK, _small(), "fixture")
    assert c.op == S.OP and c.attrs["sink_rows"] == 64 and c.attrs["actual_seq_kvlen"] == [20, 60, 96]
    assert [(t.name, t.shape) for t in c.inputs[:3]] == [("query", (96, 4, 48)), ("key", (160, 2, 48)),
                                                         ("value", (160, 2, 32))]  # fmt: skip
    assert CB.to_case(E.TASK, _small(sink_num=0), "fixture").op == E.OP


def test_the_statistics_relayout_round_trips():
    ends, n = [3, 7, 12], 2
    rows = torch.arange(24.0).reshape(12, 2)
    blocks = S.blocks_of(rows, ends, n)
    assert blocks.shape == (12, 2, 8) and torch.equal(S.rows_of(blocks, ends, n), rows)
    flat = blocks.reshape(-1, 8)[:, 0]  # sequence 1 (rows 3-6): its block from 3 x 2, head 0's rows then head 1's
    assert flat[6] == rows[3, 0] and flat[9] == rows[6, 0] and flat[10] == rows[3, 1]


def test_the_merged_forward_is_softmax_over_the_joined_keys():
    case = CB.to_case(E.TASK, _small(), "fixture")
    t = make_tensors(case)
    o, m, s = S.merged_forward(t["query"], t["key"], t["value"], t["atten_mask"].bool(), case.attrs)
    for i, (q, k, v, _, _, _, _, keep) in enumerate(
        S.joined_sequences({**t, "attention_in": o, "softmax_max": m, "softmax_sum": s, "dy": o}, case.attrs)
    ):
        mask = (~keep).numpy()[None]
        ref, rmax, rsum = fusion_attention_reference(*(x.double().numpy()[None] for x in (q, k, v)), 4, "BNSD", mask,
                                                     0.1)  # fmt: skip
        ends = case.attrs["actual_seq_qlen"]
        lo = ([0, *ends])[i]
        np.testing.assert_allclose(o[lo : ends[i]].permute(1, 0, 2).numpy(), ref[0], atol=2e-6)
        np.testing.assert_allclose(S.rows_of(m, ends, 4)[lo : ends[i]].T.numpy(), rmax[0, ..., 0], atol=2e-6)
        np.testing.assert_allclose(S.rows_of(s, ends, 4)[lo : ends[i]].T.numpy(), rsum[0, ..., 0], rtol=2e-6)


@pytest.mark.parametrize("mode", [2, 3, 4])
def test_fp32_gradients_pass_against_the_float64_golden(mode):
    """Both rules: cann-bench's (its float32 golden the control) and this project's default."""
    records = verify.run_case(CB.to_case(E.TASK, _small(mode=mode), "fixture"), "auto")
    assert [(r["output"], r["passed"], r["default_verdict"]["passed"]) for r in records] == [
        ("dq", True, True),
        ("dk", True, True),
        ("dv", True, True),
    ]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_gradients_are_within_the_kernels_bounds(dtype):
    """The attention grad's own criterion (attention_grad_standard.check_cancelling with the kernel's error bounds
    per sequence, a sink row's bound the sum over its sequences) on the two launches' dq, dk, dv."""
    case = CB.to_case(E.TASK, _small(dtype), "fixture")
    t = make_tensors(case)
    ours = S.run(t, case.attrs)
    gold = S.golden({k: v.double().numpy() for k, v in t.items()}, case.attrs)
    checks = S.check(t, case.attrs, ours, S.torch_backward(t, case.attrs), gold)
    assert [c.passed for c in checks] == [True] * 3, [c.failures for c in checks]
    wrong = (ours[0], ours[1] * 1.05, ours[2])  # the check can fail: dk 5% off
    assert not S.check(t, case.attrs, wrong, S.torch_backward(t, case.attrs), gold)[1].passed


def test_the_model_times_both_launches_and_the_steps_between():
    plat = load_platform("910B", calibrated=True)
    case = CB.to_case(E.TASK, _small("bfloat16"), "fixture")
    t = make_tensors(case)
    model = model_launches(estimate.record_packed(lambda: S.run(t, case.attrs), plat), plat)
    assert len(model.launches) == 2
    between = S.between_launches_us(t, case.attrs, plat)
    assert 2 * plat.launch_us(plat.vector_cores, False) < between
    assert R.estimate_case(case, plat)["est_us"] == pytest.approx(model.est_us + between)
