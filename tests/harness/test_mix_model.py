"""The pipeline model of mix launches (pipeline/mix.py): the template mix kernel
(csrc/kernels/examples/mix_matmul_epilogue_example.cpp) recorded by the twin, its cross-core waits never
released before their set + the latency, its estimate between the larger of its AIC-only and AIV-only work
and their sum, its trace with both core kinds and the flag edges; per-kind core counts on hand-written
records; the CLI on the example."""

import json

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from ascendc_ops.__main__ import main
from ascendc_ops.harness.pipeline import load_platform, model_launch, model_launches
from ascendc_ops.harness.pipeline.estimate import EXAMPLES, record
from ascendc_ops.harness.pipeline.trace import chrome_trace

P910 = load_platform("910B")
LAT = P910.costs["cross_core_latency_cycles"]


@pytest.fixture(scope="module")
def mix_record():
    ex = EXAMPLES["mix_matmul_epilogue"]
    a, b, bias = ex.inputs()
    box = {}
    recs = record(lambda: box.setdefault("y", ex.call((a, b, bias))), P910)
    torch.testing.assert_close(box["y"].double(), a.double() @ b.double() * 0.5 + bias.double(), rtol=1e-5, atol=1e-4)
    assert [r["kernel"] for r in recs] == ["mix_matmul_epilogue_example"]
    return recs[0]


def test_waits_never_end_before_set_plus_latency(mix_record):
    m = model_launch(mix_record, P910, keep_events=True)
    assert [k for k in ("AIC", "AIV") if k in m.kinds] == ["AIC", "AIV"]
    assert m.kinds["AIC"]["cores"] == 24 and m.kinds["AIV"]["cores"] == 48
    assert m.kinds["AIC"]["cores_used"] == 1 and m.kinds["AIV"]["cores_used"] == 2
    assert len(m.flows) == 4  # C ready: AIC -> each AIV; C free: each AIV -> the AIC
    for _src, fire, _dst, release, _label in m.flows:
        assert release >= fire + LAT
    waits = {
        (c, s)
        for (c, _), tl in zip(m.placement, m.timelines, strict=True)
        for p, n, s, e, _ in tl.events
        if p == "X" and n.startswith("CrossCoreWaitFlag")
    }
    assert len(waits) == 3  # each AIV waits for C, the AIC for both AIVs
    # the AIC's last instruction comes after the AIVs' answers
    aic = next(tl for (c, _), tl in zip(m.placement, m.timelines, strict=True) if m.core_names[c].startswith("AIC"))
    assert aic.cycles >= max(r for *_, r, _ in m.flows)


def test_estimate_between_the_sum_free_bound_and_the_serialised_sum(mix_record):
    m = model_launch(mix_record, P910)
    kinds = [c["kind"] for c in mix_record["cores"]]
    alone = {}
    for k in ("AIC", "AIV"):  # each kind's work with its cross-core instructions taken out
        blocks = [
            [i for i in b if not i.get("cross")] for b, kk in zip(mix_record["blocks"], kinds, strict=True) if kk == k
        ]
        alone[k] = model_launch({"kernel": k, "block_dim": len(blocks), "blocks": blocks}, P910).cycles
    assert max(alone.values()) <= m.cycles <= sum(alone.values()) + 2 * LAT + 100


def test_trace_has_both_kinds_and_the_flag_edges(mix_record):
    model = model_launches([mix_record], P910, keep_events=True)
    trace = chrome_trace(model, P910.hz, {})
    procs = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert any(p.startswith("AIC") for p in procs) and any(p.startswith("AIV") for p in procs)
    flows = [e for e in trace["traceEvents"] if e.get("ph") in ("s", "f")]
    assert len(flows) == 8 and {e["id"] for e in flows if e["ph"] == "s"} == {e["id"] for e in flows if e["ph"] == "f"}
    json.dumps(trace)


def ins(pipe, op, **kw):
    return {
        "pipe": pipe,
        "op": op,
        "dtype": "float",
        "count": 0,
        "repeats": 0,
        "gm_read": 0,
        "gm_write": 0,
        "ub_read": [],
        "ub_write": [],
        "event": None,
        **kw,
    }


def copy_in(n):
    return ins("MTE2", "DataCopy", gm_read=n, count=n // 4, gm_read_ranges=[[0, n]], ub_write=[[0, n]])


def test_per_kind_core_counts_and_syncall():
    # MIX_AIV_1_0 on 48 AIVs: a SyncAll releases every core a latency after the slowest reached it
    slow = [copy_in(65536), ins("ALL", "SyncAll", cross={"mode": -1, "flag": -1}), copy_in(256)]
    fast = [copy_in(256), ins("ALL", "SyncAll", cross={"mode": -1, "flag": -1}), copy_in(256)]
    rec = {
        "kernel": "syncall",
        "block_dim": 48,
        "blocks": [slow] + [fast] * 47,
        "cores": [{"kind": "AIV", "name": f"AIV {i}"} for i in range(48)],
    }
    m = model_launch(rec, P910, keep_events=True)
    assert m.cores == 48 and m.cores_used == 48 and "AIC" not in m.kinds
    ends = [tl.cycles for tl in m.timelines]
    assert min(ends[1:]) > m.timelines[0].busy["MTE2"] + LAT  # the fast cores waited for the slow one
    # 49 AIVs with a SyncAll cannot all be resident
    rec49 = {**rec, "blocks": [fast] * 49, "cores": [{"kind": "AIV", "name": f"AIV {i}"} for i in range(49)]}
    with pytest.raises(ValueError, match="resident"):
        model_launch(rec49, P910)
    # MIX_AIC_1_1 groups without launch-wide sync go in waves on the 24 core groups
    aic = [copy_in(256), ins("FIX", "CrossCoreSetFlag", cross={"mode": 2, "flag": 0})]
    aiv = [ins("MTE2", "CrossCoreWaitFlag", cross={"mode": 2, "flag": 0}), copy_in(256)]
    rec11 = {
        "kernel": "mix11",
        "block_dim": 60,
        "blocks": [aic] * 30 + [aiv] * 30,
        "cores": [{"kind": "AIC", "name": ""}] * 30 + [{"kind": "AIV", "name": ""}] * 30,
    }
    m11 = model_launch(rec11, P910)
    assert m11.block_dim == 30 and m11.waves == 2 and m11.cores == 48 and m11.kinds["AIV"]["cores"] == 24


def test_a_mode2_round_waits_for_every_aiv():
    """AIV 0 sets its mode-2 flag twice at once, AIV 1 only after a long copy: the AIC's one wait is released
    by AIV 1's first set (a round needs both AIVs), not by AIV 0's second."""
    set1 = ins("MTE2", "CrossCoreSetFlag", cross={"mode": 2, "flag": 1})  # fires once MTE2's work is done
    aic = [ins("FIX", "CrossCoreWaitFlag", cross={"mode": 2, "flag": 1}), copy_in(256)]
    aiv_fast, aiv_slow = [set1, set1], [copy_in(1 << 20), set1, set1]
    wait_second = [ins("FIX", "CrossCoreWaitFlag", cross={"mode": 2, "flag": 1})]
    rec = {
        "kernel": "mix12",
        "block_dim": 1,
        "blocks": [aic + wait_second, aiv_fast, aiv_slow],
        "cores": [{"kind": "AIC", "name": "AIC 0"}, {"kind": "AIV", "name": "AIV 0"}, {"kind": "AIV", "name": "AIV 1"}],
    }
    m = model_launch(rec, P910, keep_events=True)
    slow_copy = m.timelines[2].busy["MTE2"]
    first = min(release for _s, _f, dst, release, _l in m.flows if m.core_names[dst].startswith("AIC"))
    assert first >= slow_copy + LAT


@pytest.mark.parametrize("command", ["estimate", "profile"])
def test_cli_runs_on_the_mix_example(tmp_path, capsys, command):
    assert main([command, "--example", "mix_matmul_epilogue", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mix_matmul_epilogue_example AIC: 1 of 24 cores" in out and "AIV: 2 of 48 cores" in out
