"""The host profile (`ascendc-ops profile`): a consumer of the twin's instruction record that
times each Ascend C API on the host. Its call counts must be the record's own, its times add up."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import torch

import ascendc_ops
from ascendc_ops.harness.bench.host_profile import aggregate, host_profile
from ascendc_ops.harness.twin_record import host_profiling, recording


def test_counts_are_the_records_and_times_add_up():
    x, g = torch.randn(37, 769), torch.randn(769)
    with recording() as records:
        ascendc_ops.rms_norm(x, g, 1e-6)
    with host_profiling() as launches:
        ascendc_ops.rms_norm(x, g, 1e-6)
    recorded = Counter((i["op"], i["pipe"]) for r in records for s in r["blocks"] for i in s)
    agg = aggregate(launches)
    assert {k: v["calls"] for k, v in agg["apis"].items()} == dict(recorded)
    assert ("DataCopyPad", "MTE2") in agg["apis"] and ("Mul", "V") in agg["apis"]
    spent = sum(v["host_ns"] for v in agg["apis"].values()) + agg["setup_ns"]
    assert 0 < spent <= agg["block_ns"]
    mul = agg["apis"][("Mul", "V")]
    assert mul["ub_bytes"] >= 3 * x.numel() * 4  # x * x reads two operands and writes one


def test_nothing_is_profiled_outside():
    with host_profiling():
        pass
    ascendc_ops.rms_norm(torch.randn(4, 64), torch.randn(64), 1e-6)
    assert torch.ops.ascendc_ops.twin_host_profile_take() == []


def test_bwd_and_cli_json(tmp_path):
    info = host_profile("swiglu", (7, 2 * 80), "bfloat16", "bwd")
    assert info["blocks"] >= 1 and info["apis"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ascendc_ops",
            "profile",
            "rms_norm",
            "--shape",
            "7,769",
            "--dtype",
            "float16",
            "--out",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    assert data["op"] == "rms_norm" and data["must_bytes"] > 0 and data["wall_ns"] > 0
    # The 910B model's estimate of the same call comes along, with its bound and trace.
    modelled = data["estimate"]
    assert modelled["est_us"] > 0 and modelled["bound"] and Path(modelled["trace"]).parent == tmp_path


def test_cube_profile_gives_the_910b_estimate_bound_and_trace(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ascendc_ops",
            "profile",
            "grouped_matmul",
            "--shape",
            "256,128,128,4",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| Mmad | M |" in out  # the measured half: the cube's instructions are in the record
    line = next(x for x in out.splitlines() if x.strip().startswith("910B model"))
    assert "bound " in line and "roofline" in line
    trace = json.loads(next(tmp_path.glob("grouped_matmul_*.trace.json")).read_text())
    lanes = json.dumps(trace)
    assert all(pipe in lanes for pipe in ("MTE1", "FIX")), "the trace has the cube's lanes"
