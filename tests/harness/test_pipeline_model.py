"""The pipeline model: sanity on the real streaming copy kernel (csrc/kernels/stream_copy.cpp) run on
the twin with the 910B tiling and recorded, plus the synchronisation rules on small hand-written
instruction streams in the recorder's format."""

import json
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from ascendc_ops.harness import plot
from ascendc_ops.harness.families.base import Moved
from ascendc_ops.harness.pipeline import load_platform, model_launch, platform_files, simulate_block
from ascendc_ops.harness.pipeline.estimate import least_work, record

P910 = load_platform("910B")
COPY_ELEMS = 16 << 20  # 32 MB of bf16 read, 32 MB written (held by the L2): ~22 us on the 910B model


def copy_launch(buffers: int, blocks: int = 0, elems: int = COPY_ELEMS, plat=P910):
    x = torch.arange(elems, dtype=torch.int32).to(torch.bfloat16)
    box = {}
    records = record(lambda: box.setdefault("y", torch.ops.ascendc_ops.stream_copy(x, buffers, blocks)), plat)
    assert torch.equal(box["y"].view(torch.int16), x.view(torch.int16))  # a copy, bit for bit
    assert len(records) == 1 and records[0]["kernel"] == "stream_copy"
    return records[0]


@pytest.fixture(scope="module")
def copy2():
    return copy_launch(2)


def test_stream_copy_is_exact_with_odd_tails():
    for buffers in (1, 2):
        for n in (1, 15, 16, 16385, 100003):
            x = torch.randn(n).to(torch.bfloat16)
            assert torch.equal(torch.ops.ascendc_ops.stream_copy(x, buffers, 3), x)
    with pytest.raises(ValueError, match="stream_copy: buffer_num must be 1 or 2, got 3"):
        torch.ops.ascendc_ops.stream_copy(torch.ones(8), 3, 0)


def test_copy_models_at_the_hbm_roofline(copy2):
    m = model_launch(copy2, P910)
    assert m.block_dim == 48 and m.cores_used == 48  # the 910B tiling, not the twin's thread count
    roof = least_work(Moved(2 * COPY_ELEMS, 2 * COPY_ELEMS), 0, "bfloat16", P910)  # the reads at HBM
    assert m.gm_bytes == 4 * COPY_ELEMS
    assert m.bound == "HBM" and roof.kind == "HBM"
    assert roof.us / m.est_us >= 0.9, (roof.us, m.est_us)  # the launch's start is the rest
    assert roof.us / (m.est_us - m.launch_us) >= 0.99
    assert m.pipes["MTE2"] > 0.8  # reads stream back to back


def test_single_buffer_is_measurably_slower(copy2):
    blocks = 8  # per-core MTE bandwidth, not HBM, limits 8 cores: where the stages' overlap shows
    one, two = (model_launch(copy_launch(b, blocks), P910) for b in (1, 2))
    assert one.est_us > 1.3 * two.est_us, (one.est_us, two.est_us)
    assert sum(one.stalls.values()) > 2 * sum(two.stalls.values())  # MTE2 waits for the free buffer
    # at 48 cores the chip's HBM is the limit either way: the other cores fill one core's gaps
    one48, two48 = model_launch(copy_launch(1), P910), model_launch(copy2, P910)
    assert one48.bound == two48.bound == "HBM" and one48.est_us == pytest.approx(two48.est_us, rel=0.02)


def test_too_few_blocks_leave_cores_idle(copy2):
    few = model_launch(copy_launch(2, 4), P910)
    assert few.cores_used == 4 and any("44 of 48 cores idle" in n for n in few.notes)
    assert few.pipes["MTE2"] < 0.1
    assert few.est_us > 1.8 * model_launch(copy2, P910).est_us  # 4 cores of MTE2 reach ~1/4 of HBM
    assert few.bound == "MTE2"


def test_halving_hbm_bandwidth_doubles_a_memory_bound_time(copy2):
    full, half = model_launch(copy2, P910), model_launch(copy2, P910.with_hbm(P910.hbm_bytes_per_s / 2))
    ratio = (half.est_us - half.launch_us) / (full.est_us - full.launch_us)
    assert ratio == pytest.approx(2.0, rel=0.02)


def test_tiling_platform_override():
    x, g = torch.randn(512, 256), torch.ones(256)
    recs = record(lambda: ascendc_ops.rms_norm(x, g, 1e-6), P910)
    assert [r["block_dim"] for r in recs] == [48]
    torch.ops.ascendc_ops.twin_record(True)
    try:
        ascendc_ops.rms_norm(x, g, 1e-6)  # the override is gone: the twin's own platform again
    finally:
        torch.ops.ascendc_ops.twin_record(False)
    back = [json.loads(s) for s in torch.ops.ascendc_ops.twin_record_take()]
    assert back[0]["block_dim"] <= max(1, torch.get_num_threads())
    with pytest.raises(ValueError, match="set_tiling_platform: ub_bytes"):
        torch.ops.ascendc_ops.set_tiling_platform("big", 8, 8, 1 << 20)


def test_platform_files_give_every_value_a_source():
    files = set(platform_files().values())
    assert {f.stem for f in files} >= {"ascend910b", "ascend310p"}
    for path in files:
        raw = json.loads(path.read_text())
        for key, entry in raw.items():
            if isinstance(entry, dict) and "value" in entry:
                assert entry.get("source"), f"{path.name}: {key} has no source"
        assert raw["vector"]["source"]


def test_the_platform_file_is_all_that_changes(copy2):
    with pytest.raises(ValueError, match="calls DataCopyPad, which Ascend310P3 does not have"):
        model_launch(copy2, load_platform("310P"))
    p310 = replace(load_platform("310P"), lacks={})  # its numbers, without the API table that refuses the copy
    m910, m310 = model_launch(copy2, P910), model_launch(copy2, p310)
    assert m310.cores == 8 and m310.waves == 6  # the same 48 blocks, in waves on 8 cores
    assert m310.est_us > 4 * m910.est_us


# ---- synchronisation rules on hand-written streams (the recorder's format) ----
def ins(pipe, op, **kw):
    return {
        "pipe": pipe,
        "op": op,
        "dtype": kw.pop("dtype", "float"),
        "count": kw.pop("count", 0),
        "repeats": 0,
        "gm_read": kw.pop("gm_read", 0),
        "gm_write": kw.pop("gm_write", 0),
        "ub_read": [],
        "ub_write": [],
        "event": kw.pop("event", None),
        **kw,
    }


LOAD = ins("MTE2", "DataCopyPad", gm_read=32768)
ADD = ins("V", "Add", count=8192)


def test_flags_order_pipes_and_unflagged_work_overlaps():
    free = simulate_block([LOAD, ADD], P910).cycles
    flagged = simulate_block(
        [LOAD, ins("MTE2", "SetFlag", event=["MTE2", "V", 0]), ins("V", "WaitFlag", event=["MTE2", "V", 0]), ADD], P910
    )
    load = simulate_block([LOAD], P910).cycles
    add = simulate_block([ADD], P910).cycles
    assert free == pytest.approx(max(load, add), rel=0.05)
    assert flagged.cycles >= load + add - 20 and flagged.stall["V"] > 0


def test_pipe_barrier_exposes_vector_latency():
    two = [ADD, ADD]
    barred = [ADD, ins("V", "PipeBarrier"), ADD]
    assert simulate_block(barred, P910).cycles > simulate_block(two, P910).cycles + 5


def test_scalar_waiting_for_vector_delays_later_loads():
    body = [
        ADD,
        ins("V", "SetFlag", event=["V", "S", 0]),
        ins("S", "WaitFlag", event=["V", "S", 0]),
        ins("S", "GetValue"),
        LOAD,
    ]
    without = [ADD, ins("S", "GetValue"), LOAD]
    assert simulate_block(body, P910).cycles > simulate_block(without, P910).cycles + 200


def test_estimate_command_json(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ascendc_ops",
            "estimate",
            "rms_norm",
            "--shape",
            "96,512",
            "--dtype",
            "float32",
            "--json",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    for key in (
        "op",
        "platform",
        "dtype",
        "inputs",
        "outputs",
        "gm_bytes",
        "hbm_bytes_per_s",
        "est_us",
        "bound",
        "roofline_pct",
        "blocks",
        "cores",
        "pipes",
        "trace",
    ):
        assert key in info, key
    assert info["inputs"] == [[96, 512], [512]] and info["outputs"] == [[96, 512], [96, 1]]
    assert info["blocks"] == 48 and info["cores"] == 48 and 0 < info["roofline_pct"] <= 100
    trace = json.loads(open(info["trace"]).read())
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"MTE2", "V", "MTE3"} <= tracks
    if plot.available():  # the PNG timeline is drawn with matplotlib, an optional extra
        assert open(info["timeline_png"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    else:
        assert info["timeline_png"] is None and not list(tmp_path.glob("*.png"))


def test_a_platform_refuses_apis_it_lacks():
    """310P has no ShiftLeft/ShiftRight (nor DataCopyPad): the 16-bit pair-mode rope, which swaps lanes
    by shifts, is refused there by name; the same record models on 910B, and Add models on 310P."""
    p310 = load_platform("310P")
    assert {"ShiftLeft", "ShiftRight", "DataCopyPad"} <= p310.lacks.keys() and not P910.lacks
    x = torch.randn(1, 2, 8, 64).to(torch.bfloat16)
    cos, sin = torch.randn(8, 64).to(torch.bfloat16), torch.randn(8, 64).to(torch.bfloat16)
    recs = record(lambda: ascendc_ops.rope_customer(x, cos, sin), P910)
    rec = next(r for r in recs if {"ShiftLeft", "ShiftRight"} <= {i["op"] for b in r["blocks"] for i in b})
    model_launch(rec, P910)
    with pytest.raises(
        ValueError, match=r"calls .*ShiftLeft, ShiftRight, which Ascend310P3 does not have .*ShiftLeft\.md"
    ):
        model_launch(rec, p310)
    add = {"kernel": "k", "block_dim": 1, "blocks": [[ins("V", "Add", count=64, dtype="float")]]}
    assert model_launch(add, p310).est_us > 0
