"""The pipeline model's cube: the MTE2 (GM->L1), MTE1 (L1->L0A/L0B), M (Mmad) and FIX (L0C->GM) costs on
hand-computed cases, the four stages overlapping under double buffering and not under serialising flags,
the bound named in compute- and bandwidth-bound launches, no estimate below the analytic roofline, the
hand-written example kernel (csrc/kernels/examples/cube_matmul_example.cpp) recorded and estimated, and
grouped_matmul through `estimate`, the bench's model columns and `profile`."""

import json

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from ascendc_ops.harness import runner
from ascendc_ops.harness.bench.host_profile import host_profile, unrecorded
from ascendc_ops.harness.pipeline import load_platform, model_launch, model_launches, simulate_block
from ascendc_ops.harness.pipeline.estimate import estimate, model_columns
from ascendc_ops.harness.pipeline.trace import chrome_trace
from ascendc_ops.harness.twin_record import collected
from conftest import kernel_library

P910 = load_platform("910B")
SETUP = P910.costs["mte_setup_cycles"]
ISSUE = P910.costs["scalar_issue_cycles"]
K0 = {"half": 16, "float": 8}  # fractal K: 32 bytes of the input dtype


# ---- instructions in the recorder's format ----
def ins(pipe, op, dtype="half", count=0, **kw):
    base = {"pipe": pipe, "op": op, "dtype": dtype, "count": count, "repeats": 0, "gm_read": 0, "gm_write": 0}
    return {**base, "ub_read": [], "ub_write": [], "event": None, **kw}


def copy_l1(nbytes, at=0):
    return ins(
        "MTE2",
        "DataCopy",
        count=nbytes // 2,
        gm_read=nbytes,
        gm_read_ranges=[[at, at + nbytes]],
        L1_write=[[0, nbytes]],
    )


def load(dst, nbytes):
    return ins("MTE1", "LoadData", count=nbytes // 2, L1_read=[[0, nbytes]], **{f"{dst}_write": [[0, nbytes]]})


def mmad(m1, k1, n1, dtype="half", accumulate=False):
    a, b, c = m1 * k1 * 512, k1 * n1 * 512, m1 * n1 * 1024
    spans = {"L0A_read": [[0, a]], "L0B_read": [[0, b]], "L0C_write": [[0, c]]}
    if accumulate:
        spans["L0C_read"] = [[0, c]]
    return ins("M", "Mmad", dtype, count=m1 * 16 * n1 * 16 * k1 * K0[dtype], **spans)


def fixpipe(nbytes):
    return ins("FIX", "Fixpipe", count=nbytes // 2, gm_write=nbytes, L0C_read=[[0, nbytes * 2]])


def flag(kind, src, dst, que, slot):
    return ins(dst if kind == "WaitFlag" else src, kind, event=[src, dst, 0], que=que, slot=slot)


def one(instr):
    """(busy cycles of its pipe, block cycles) of one instruction alone."""
    tl = simulate_block([instr], P910)
    return tl.busy[instr["pipe"]], tl.cycles


# ---- costs by hand ----
def test_transfer_costs_by_path():
    assert one(copy_l1(7800)) == (SETUP + 7800 / 78, ISSUE + SETUP + 7800 / 78 + 500)  # GM->L1 78 B/cycle
    gm_ub = ins("MTE2", "DataCopy", gm_read=7800)
    assert one(gm_ub)[0] == SETUP + 7800 / 59  # the vector side's GM->UB, 59 B/cycle
    assert one(load("L0A", 4096))[0] == SETUP + 4096 / 256
    assert one(load("L0B", 4096))[0] == SETUP + 4096 / 128  # L0B is fed at half L0A's rate
    assert one(fixpipe(4100)) == (SETUP + 4100 / 41, ISSUE + SETUP + 4100 / 41 + 300)


def test_mmad_cost_counts_fractals():
    # 48 x 64 x 32 half: 3 x 4 x 2 fractals, one a cycle, after a 6-cycle start
    assert one(mmad(3, 4, 2)) == (24, ISSUE + 24 + 6)
    # fp32: K in steps of 8, 2 cycles a fractal: the same 48 x 64 x 32 is 3 x 8 x 2 fractals, 96 cycles
    assert one(mmad(3, 8, 2, "float"))[0] == 96
    # GEMV (m = 1): A is one ND row of k halves, not fractals; m1 = 1
    gemv = ins("M", "Mmad", count=64 * 32, L0A_read=[[0, 128]], L0B_read=[[0, 4 * 2 * 512]], L0C_write=[[0, 2048]])
    assert one(gemv)[0] == 4 * 2
    # no spans (a record without them): the MACs over a fractal's, rounded up
    assert one(ins("M", "Mmad", count=48 * 64 * 32 + 1))[0] == 25


def test_cube_peak():
    assert P910.cube_macs_per_cycle("bfloat16") == P910.cube_macs_per_cycle("half") == 4096
    assert P910.cube_macs_per_cycle("float32") == 1024  # a quarter of half's
    assert P910.cube_peak_flops("torch.bfloat16") == pytest.approx(2 * 4096 * 24 * 1.8e9)  # ~354 TFLOPS


# ---- the four stages in a row, as TQue hand-offs ----
COPY, LOAD, FRACTALS, OUT = 131072, 32768, (8, 8, 8), 16384  # MTE2 longer than any latency chain


def matmul_tiles(tiles, buffers, serialise=False):
    """Per tile: GM->L1, L1->L0A and L0B, Mmad, L0C->GM, each hand-off an EnQue/DeQue flag pair and each
    buffer reused after its FreeTensor; `buffers` slots per queue. serialise: the next tile's copy also
    waits for this tile's Fixpipe (one stage at a time)."""
    out = []
    for t in range(tiles):
        s, reuse = t % buffers, t >= buffers
        if reuse:  # AllocTensor of A1, A2, CO1 waits for the slot's FreeTensor
            out.append(flag("WaitFlag", "MTE1", "MTE2", "A1", s))
        if serialise and t:
            out.append(flag("WaitFlag", "FIX", "MTE2", "OUT", 0))
        out += [copy_l1(COPY), flag("SetFlag", "MTE2", "MTE1", "A1", s), flag("WaitFlag", "MTE2", "MTE1", "A1", s)]
        if reuse:
            out.append(flag("WaitFlag", "M", "MTE1", "A2", s))
        out += [load("L0A", LOAD), load("L0B", LOAD), flag("SetFlag", "MTE1", "MTE2", "A1", s)]
        out += [flag("SetFlag", "MTE1", "M", "A2", s), flag("WaitFlag", "MTE1", "M", "A2", s)]
        if reuse:
            out.append(flag("WaitFlag", "FIX", "M", "CO1", s))
        out += [mmad(*FRACTALS), flag("SetFlag", "M", "MTE1", "A2", s), flag("SetFlag", "M", "FIX", "CO1", s)]
        out += [flag("WaitFlag", "M", "FIX", "CO1", s), fixpipe(OUT), flag("SetFlag", "FIX", "M", "CO1", s)]
        if serialise:
            out.append(flag("SetFlag", "FIX", "MTE2", "OUT", 0))
    return out


def stage_cycles():
    return {
        "MTE2": SETUP + COPY / 78,
        "MTE1": 2 * SETUP + LOAD / 256 + LOAD / 128,
        "M": FRACTALS[0] * FRACTALS[1] * FRACTALS[2],
        "FIX": SETUP + OUT / 41,
    }


def test_double_buffering_overlaps_the_four_pipes():
    tiles, stages = 16, stage_cycles()
    double = simulate_block(matmul_tiles(tiles, 2), P910)
    single = simulate_block(matmul_tiles(tiles, 1), P910)
    serial = simulate_block(matmul_tiles(tiles, 1, serialise=True), P910)
    for tl in (double, single, serial):  # the same work, costed alike
        for pipe, cycles in stages.items():
            assert tl.busy[pipe] == pytest.approx(tiles * cycles)
    slowest, each_tile = max(stages.values()), sum(stages.values())
    # double buffered: the slowest stage (MTE2) streams without a wait; the others hide behind it except
    # for the last tile's (its GM read and write latencies, the cube's start; a few cycles of flags)
    drain = each_tile - slowest + 500 + 300 + P910.costs["cube_start_cycles"]
    assert double.stall["MTE2"] == 0
    assert tiles * slowest + drain <= double.cycles <= tiles * slowest + drain + 64
    # one stage at a time: every tile pays all four stages and both GM latencies
    assert serial.cycles >= tiles * (each_tile + 500 + 300)
    assert double.cycles < 0.5 * serial.cycles
    assert double.cycles < single.cycles < serial.cycles  # one buffer overlaps only non-adjacent stages
    assert sum(serial.stall.values()) > 2 * sum(double.stall.values())


# ---- launches: the bound, and the analytic floor no estimate beats ----
def launch(blocks, stream):
    return {"kernel": "cube_test", "block_dim": blocks, "blocks": [stream] * blocks}


def own_reads(rec):
    """The launch with every GM read at addresses of its own: no re-reads for the L2 to serve."""
    at, blocks = 0, []
    for b in rec["blocks"]:
        out = []
        for i in b:
            if i.get("gm_read_ranges"):
                i = {**i, "gm_read_ranges": [[at, at + i["gm_read"]]]}
                at += i["gm_read"]
            out.append(i)
        blocks.append(out)
    return {**rec, "blocks": blocks}


def analytic_us(rec, dtype="half"):
    """FLOPs at the cube's peak, GM bytes read at HBM bandwidth (the records fit the L2, which is write-back:
    their writes stay in it, pipeline/l2.py): the larger is a floor for any estimate."""
    instrs = [i for b in rec["blocks"] for i in b]
    flops = 2 * sum(i["count"] for i in instrs if i["op"] == "Mmad")
    read = sum(i["gm_read"] for i in instrs)
    assert read + sum(i["gm_write"] for i in instrs) <= P910.l2_bytes
    return max(flops / P910.cube_peak_flops(dtype), read / P910.hbm_bytes_per_s) * 1e6


def compute_bound(blocks=24, tiles=8):
    body = []
    for _ in range(tiles):  # per tile: 64 x 1024 x 64 of half, 1024 fractals per byte loaded
        body += [copy_l1(2048), load("L0A", 2048), load("L0B", 2048), mmad(8, 16, 8)]
    return own_reads(launch(blocks, [*body, fixpipe(8192)]))


def bandwidth_bound(blocks=24):
    return own_reads(launch(blocks, matmul_tiles(32, 2)))


def test_bound_is_named():
    cube = model_launch(compute_bound(), P910)
    assert cube.bound == "cube" and cube.cores == 24 and cube.pipes["M"] > 0.8
    hbm = model_launch(bandwidth_bound(), P910)
    assert hbm.bound == "HBM" and hbm.mte_share < 1.0
    # one core cannot reach HBM's bandwidth: its own GM->L1 rate is the limit
    assert model_launch(bandwidth_bound(1), P910).bound == "MTE2"


@pytest.mark.parametrize(
    "rec, chip_bound",
    [(compute_bound(), True), (compute_bound(48), True), (bandwidth_bound(), True), (bandwidth_bound(3), False)],
)
def test_no_estimate_beats_the_roofline(rec, chip_bound):
    m = model_launch(rec, P910)
    floor = analytic_us(rec)
    assert m.est_us - m.launch_us >= floor * (1 - 1e-9), (m.est_us, floor)
    if chip_bound:  # every core busy on the limiting side: the model is not far above the floor either
        assert m.est_us - m.launch_us <= 1.5 * floor, (m.est_us, floor)


def test_fixpipe_writes_reach_hbm_past_the_l2():
    # Fixpipe-only launch on every core: the write-back L2 holds its GM writes while they fit, then the
    # written share of the excess reaches HBM inside the launch (pipeline/l2.py)
    small = model_launch(launch(24, [fixpipe(1 << 20)]), P910)
    assert small.hbm_us == 0.0 and small.bound == "FIX"
    big_bytes = 24 * (10 << 20)
    big = model_launch(launch(24, [fixpipe(10 << 20)]), P910)
    back = big_bytes - P910.l2_bytes
    assert big.hbm_us == pytest.approx(back / P910.hbm_bytes_per_s * 1e6, rel=1e-6)


def test_re_reads_are_named():
    # 24 blocks read one 64 KB weight tile each (the L2 serves 23 of them), plus a row tile of their own
    shared = launch(24, [copy_l1(65536)])
    shared["blocks"] = [[*b, copy_l1(4096, at=(1 << 20) + 4096 * i)] for i, b in enumerate(shared["blocks"])]
    notes = model_launch(shared, P910).notes
    assert any("1.67 MB read from GM, 0.16 MB of it distinct: the L2 (cold) serves 1.51 MB" in n for n in notes), notes
    own = {"kernel": "own_rows", "block_dim": 24, "blocks": [[copy_l1(65536, at=65536 * i)] for i in range(24)]}
    assert not any("distinct" in n for n in model_launch(own, P910).notes)  # disjoint reads: nothing to say


# ---- the example kernel, recorded by the twin ----
@pytest.fixture(scope="module")
def example_record():
    cube = kernel_library(
        "twin_faults", "twin_cube_basic"
    )  # the test library links its own twin: its own record export
    a, b = torch.randn(48, 64).half(), torch.randn(64, 32).half()
    with collected(cube.record, cube.record_take) as recs:
        c = cube.example(a, b, False)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4)
    assert [r["kernel"] for r in recs] == ["cube_matmul_example"]
    return recs[0]


def test_example_kernel_costs(example_record):
    m = model_launch(example_record, P910, keep_events=True)
    assert m.cores == 24 and m.cores_used == 1  # a cube kernel goes to the AIC cores
    tl = m.timelines[0]
    # two Mmads of 48 x 32 x 32 half: 3 x 2 x 2 fractals each
    assert tl.busy["M"] == 2 * 12
    # per K chunk: 3 LoadData of 2 A fractals (1 KB, L0A) and 2 of 2 B fractals (1 KB, L0B)
    assert tl.busy["MTE1"] == pytest.approx(2 * (3 * (SETUP + 1024 / 256) + 2 * (SETUP + 1024 / 128)))
    assert tl.busy["MTE2"] == pytest.approx(2 * SETUP + (48 * 64 + 64 * 32) * 2 / 78)
    assert tl.busy["FIX"] == pytest.approx(SETUP + 48 * 32 * 4 / 41)
    assert m.gm_bytes == (48 * 64 + 64 * 32) * 2 + 48 * 32 * 4
    # the chain copy -> load -> Mmad -> Fixpipe: at least each stage and both GM latencies, in series
    assert tl.cycles >= sum(tl.busy[p] for p in ("MTE2", "MTE1", "M", "FIX")) + 500 + 300
    assert m.est_us - m.launch_us >= analytic_us(example_record)
    assert m.bound == "launch overhead"  # under a microsecond of work in one block
    # A2/B2 hold two buffers: the second K chunk's loads run while the first chunk's Mmad does
    loads = [s for pipe, name, s, _, _ in tl.events if name == "LoadData"]
    first_mmad_end = next(e for pipe, name, _, e, _ in tl.events if name == "Mmad")
    assert loads[5] < first_mmad_end


def test_example_trace_has_the_cube_lanes(example_record):
    model = model_launches([example_record], P910, keep_events=True)
    trace = chrome_trace(model, P910.hz, {})
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"MTE2", "MTE1", "M", "FIX"} <= lanes
    names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
    assert {"DataCopy", "LoadData", "Mmad", "Fixpipe"} <= names
    json.dumps(trace)  # serialisable as written


# ---- grouped_matmul through `estimate`, `bench`'s columns and `profile` ----
GMM_SHAPE = (2048, 512, 512, 64)  # M, K, N, E: the bench's default, enough blocks for every cube core


@pytest.mark.parametrize("pass_", ["fwd", "bwd"])
def test_grouped_matmul_estimate(tmp_path, pass_):
    info = estimate("grouped_matmul", GMM_SHAPE, "bfloat16", "910B", pass_, str(tmp_path))
    assert info["flops"] == 2 * 2048 * 512 * 512 and info["cube_us"] > 0
    cols = model_columns("grouped_matmul", runner.make_inputs("grouped_matmul", GMM_SHAPE, "bfloat16")[1], pass_)
    if not info["modelled"]:  # a twin whose record lacks the Matmul's cube work: no estimate is made up
        assert "M" not in info["pipes"] and cols == {"est_us_910b": None, "roofline_pct_910b": None}
        assert any(n.startswith("not modelled") for n in info["notes"])
        return
    # tiled for the 910B's 24 cube cores (set_tiling_platform), not for the twin's threads
    assert info["cores"] == 24 and info["blocks"] == 24 and info["pipes"]["M"] > 0
    assert info["roofline"] in ("HBM", "cube FLOP/s") and info["est_us"] >= info["roofline_us"]
    assert 0 < info["roofline_pct"] <= 100 and cols["est_us_910b"] == pytest.approx(info["est_us"], abs=1e-3)
    trace = json.loads(open(info["trace"]).read())
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"MTE2", "MTE1", "M", "FIX"} <= lanes


def test_grouped_matmul_profile_runs():
    info = host_profile("grouped_matmul", GMM_SHAPE, "bfloat16", "fwd", reps=0)
    apis = {r["op"] for r in info["apis"]}
    assert info["blocks"] > 0 and info["block_ns"] > 0
    if any(r["pipe"] == "M" for r in info["apis"]):  # the record holds the Matmul's cube work
        assert {"DataCopy", "LoadData", "Mmad", "Fixpipe"} <= apis
    else:
        assert unrecorded(info)  # and the profile says its GM traffic is missing
