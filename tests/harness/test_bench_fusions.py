"""The model suite's Qwen3 / Qwen3-MoE training steps by fusion level (harness/bench/hf_fusions.py): the launch counts
each level gives, and the table. A short sequence; the timed figures are not judged here."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
from ascendc_ops.harness.bench import hf_fusions as B  # noqa: E402

pytestmark = pytest.mark.slow  # ~35 s per family on 2 cores
PLAN = dict(batch=1, seq=16, steps=1)


@pytest.mark.parametrize("family", list(B.FAMILIES))
def test_levels_apply_their_kernels_and_save_launches(family):
    res = {level: B.worker(family, level, PLAN) for level in B.LEVELS}
    layers = B.COMMON["num_hidden_layers"]
    assert res["unpatched"]["applied"] == []
    assert set(res["previous"]["applied"]) <= set(B.PREVIOUS) and res["previous"]["applied"]
    assert "fused_add_rmsnorm" in res["all"]["applied"] and set(res["previous"]["applied"]) < set(res["all"]["applied"])
    # fused_add_rmsnorm: per layer one add + rms_norm pair forward and one rms_norm_grad + add backward fewer
    by = {level: r["by_op"] for level, r in res.items()}
    assert by["all"]["custom::add_rms_norm"] == by["all"]["custom::add_rms_norm_grad"] == layers
    assert res["previous"]["launches"] - res["all"]["launches"] == 2 * layers
    assert res["unpatched"]["launches"] > res["previous"]["launches"]
    # the same model and data: the losses agree to the fp32 relative threshold (docs/accuracy.md)
    assert all(
        abs(r["loss"] - res["unpatched"]["loss"]) <= 2**-13 * abs(res["unpatched"]["loss"]) for r in res.values()
    )
    text = B.table({(family, lv): r for lv, r in res.items()}, PLAN)
    assert text.count(f"| {family} |") == len(B.LEVELS)
