"""The L2 in the pipeline model (pipeline/l2.py): re-reads within a launch served by the L2 while the
launch's footprint fits it and charged at HBM past it, writes held by the write-back L2 but for their share of
what exceeds it, on synthetic records; the warm/cold switch; and the least work's terms in both states, also as
the roofline `estimate` divides by."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ascendc_ops.harness.families.base import Moved
from ascendc_ops.harness.pipeline import calibration as M, load_platform, model_launch
from ascendc_ops.harness.pipeline.estimate import least_work, roofline
from ascendc_ops.harness.pipeline.ideal_stream import ideal_stream, stream_slack
from ascendc_ops.harness.pipeline.l2 import l2_traffic
from ascendc_ops.harness.pipeline.launch import CONTENTION_TOL

P910 = load_platform("910B")
MB = 1 << 20


def _read(lo: int, n: int) -> dict:
    return {"pipe": "MTE2", "op": "DataCopy", "gm_read": n, "gm_write": 0, "gm_read_ranges": [[lo, lo + n]]}


def _write(n: int) -> dict:
    return {"pipe": "MTE3", "op": "DataCopy", "gm_read": 0, "gm_write": n}


def rereading(blocks: int = 48, shared: int = 4 * MB, own: int = MB) -> dict:
    """Every block reads the same `shared` bytes (a weight every row block needs), its own `own` bytes, and
    writes `own` bytes."""
    body = [[_read(0, shared), _read(shared + b * own, own), _write(own)] for b in range(blocks)]
    return {"kernel": "reread", "block_dim": blocks, "blocks": body}


def test_sourced_l2_values():
    assert P910.l2_bytes == 192 * MB and P910.l2_bytes_per_cycle == 110
    assert P910.l2_bytes_per_s == pytest.approx(110 * 24 * 1.8e9)  # per AI core, 24 of them
    assert not P910.l2_warm and "platform_stub" in P910.sources["l2_bytes_per_cycle"]
    assert "_clear_cache" in P910.sources["l2_warm"]  # cann-bench empties the L2 before each timed step


def test_traffic_split_by_hand():
    cold = l2_traffic(read=10 * MB, distinct_read=2 * MB, write=MB, plat=P910)
    # re-reads hit; the written MB stays in the write-back L2 past the launch
    assert (cold.hit_bytes, cold.hbm_bytes, cold.footprint, cold.fits) == (9 * MB, 2 * MB, 3 * MB, True)
    warm = l2_traffic(10 * MB, 2 * MB, MB, P910.with_l2_warm(True))
    assert (warm.hit_bytes, warm.hbm_bytes) == (11 * MB, 0)  # everything the last launch left resident
    for plat in (P910, P910.with_l2_warm(True)):  # past the capacity no read hits, warm or not
        big = l2_traffic(400 * MB, 182 * MB, 18 * MB, plat)  # 200 MB touched: 8 MB over the 192 MiB
        assert not big.fits and big.hbm_bytes == 400 * MB + 18 * MB * 8 // 200  # the written share of the excess
        assert big.gm_bytes == 418 * MB
    none = l2_traffic(10 * MB, 2 * MB, MB, replace(P910, l2_bytes=0))  # a chip without one
    assert (none.hit_bytes, none.hbm_bytes) == (0, 11 * MB)


def test_rereads_within_capacity_cost_the_l2_rate():
    rec = rereading()
    m, none = model_launch(rec, P910), model_launch(rec, replace(P910, l2_bytes=0))
    read, distinct, write = 48 * 5 * MB, 4 * MB + 48 * MB, 48 * MB
    assert m.gm_bytes == none.gm_bytes == read + write
    assert m.l2_hit_bytes == read - distinct + write and none.l2_hit_bytes == 0
    assert m.hbm_us == pytest.approx(distinct / P910.hbm_bytes_per_s * 1e6)  # the writes stay in the L2
    assert none.hbm_us == pytest.approx((read + write) / P910.hbm_bytes_per_s * 1e6)
    assert m.l2_us == pytest.approx((read + write) / P910.l2_bytes_per_s * 1e6)
    assert m.est_us < 0.75 * none.est_us and none.bound == "HBM"  # 432 MB of HBM traffic against 196 MB
    assert any(
        f"the L2 (cold) serves {(read - distinct) / 1e6:.2f} MB" in n
        and "fit its 192 MiB" in n
        and f"holds the {write / 1e6:.2f} MB written" in n
        for n in m.notes
    )


def test_rereads_beyond_capacity_cost_hbm():
    small = replace(P910, l2_bytes=64 * MB)  # the 100 MB touched no longer fit
    m, none = model_launch(rereading(), small), model_launch(rereading(), replace(P910, l2_bytes=0))
    write, footprint = 48 * MB, 100 * MB
    assert m.l2_hit_bytes == write - write * (footprint - 64 * MB) // footprint  # the writes the L2 holds
    assert m.est_us < none.est_us
    assert any("exceed the L2 (64 MiB), so the re-reads count as HBM traffic" in n for n in m.notes)


def test_warm_l2_serves_every_byte_that_fits():
    rec = rereading()
    warm = model_launch(rec, P910.with_l2_warm(True))
    assert warm.l2_hit_bytes == warm.gm_bytes and warm.hbm_us == 0.0
    cold = model_launch(rec, P910)
    assert 0.0 < cold.hbm_us and warm.est_us <= cold.est_us  # both bound by the L2's rate here
    too_big = replace(P910, l2_bytes=64 * MB)
    assert model_launch(rec, too_big.with_l2_warm(True)).est_us == pytest.approx(model_launch(rec, too_big).est_us)
    # the state also travels as a calibration value
    assert P910.with_values({"l2_warm": {"value": True, "source": "x"}}).l2_warm


def test_least_work_terms_in_both_states():
    w = M.Work(bytes=100 * MB, flops=0, dtype="float16", cube=False, written=40 * MB)
    cold, warm = M.terms(w, P910), M.terms(w, P910.with_l2_warm(True))
    assert cold["HBM"] == pytest.approx(60 * MB / P910.hbm_bytes_per_s * 1e6)  # the reads; writes held back
    assert cold["L2"] == warm["L2"] == pytest.approx(100 * MB / P910.l2_bytes_per_s * 1e6)
    assert warm["HBM"] == 0.0 and M.predict(w, P910.with_l2_warm(True)) == pytest.approx(warm["launch"] + warm["L2"])
    big = M.Work(bytes=300 * MB, flops=0, dtype="float16", cube=False, written=150 * MB)  # past the L2: warm is cold
    assert M.predict(big, P910.with_l2_warm(True)) == pytest.approx(M.predict(big, P910))
    assert M.terms(big, P910)["HBM"] == pytest.approx((150 * MB + (300 - 192) * MB // 2) / P910.hbm_bytes_per_s * 1e6)
    assert M.bound(w, P910.with_l2_warm(True), 1.0) == "L2" and M.bound(w, P910, 1.0) == "HBM"


def test_ideal_stream_slack():
    big, tiny = 64 * MB, 64 * 1024
    rec = ideal_stream(big, P910)
    m = model_launch(rec, P910)
    assert m.gm_bytes == big and m.cores_used == 48 and m.l2_hit_bytes == big // 2 and m.bound == "HBM"  # writes held
    # a stream big enough to bind HBM sits on its floor: the slack is the model's resolution alone
    assert CONTENTION_TOL <= stream_slack(big, P910) < CONTENTION_TOL + 1e-3
    small = model_launch(ideal_stream(tiny, P910), P910)  # one block: a load, then its store
    excess_us = (stream_slack(tiny, P910) - CONTENTION_TOL) * (small.launch_us + small.hbm_us)
    lat_us = (P910.latency["MTE2"] + P910.latency["MTE3"]) / P910.hz * 1e6
    half = tiny // 2
    xfer_us = (half / P910.rates["GM->UB"] + half / P910.rates["UB->GM"]) / P910.hz * 1e6
    assert small.cores_used == 1  # the load, then the store, each with its latency, on one core's MTEs
    assert excess_us == pytest.approx(lat_us + xfer_us - small.hbm_us, rel=0.05)


def in_place(blocks: int = 48, own: int = 8 * MB, over_inputs: bool = True) -> dict:
    """Every block reads its own `own` bytes and writes as many, over what it read (RoPE) or elsewhere."""

    def block(b: int) -> list:
        lo = b * own
        dst = lo if over_inputs else (blocks + b) * own
        return [_read(lo, own), {**_write(own), "gm_write_ranges": [[dst, dst + own]]}]

    return {"kernel": "in_place", "block_dim": blocks, "blocks": [block(b) for b in range(blocks)]}


def test_in_place_writes_take_no_more_l2():
    # 384 MB read, 384 MB written: past the 192 MiB L2 either way. Written over the inputs, the footprint is the
    # 384 MB read, so less of what is written is pushed back to HBM inside the launch than when written elsewhere.
    over, apart = (model_launch(in_place(over_inputs=o), P910) for o in (True, False))
    read = 48 * 8 * MB
    assert over.hbm_us * 1e-6 * P910.hbm_bytes_per_s == pytest.approx(read + read - P910.l2_bytes)
    assert apart.hbm_us * 1e-6 * P910.hbm_bytes_per_s == pytest.approx(
        read + read * (2 * read - P910.l2_bytes) // (2 * read)
    )
    assert over.est_us < apart.est_us


def rewriting(blocks: int = 48, slot: int = MB, times: int = 8) -> dict:
    """Every block reads its own `slot` bytes of input, then writes and reads back its own workspace slot
    `times` times (attention's S, P and P V hand-over)."""

    def block(b: int) -> list:
        ws = (blocks + b) * slot
        body = [_read(b * slot, slot)]
        for _ in range(times):
            body += [{**_write(slot), "gm_write_ranges": [[ws, ws + slot]]}, _read(ws, slot)]
        return body

    return {"kernel": "rewriting", "block_dim": blocks, "blocks": [block(b) for b in range(blocks)]}


def test_a_rewritten_workspace_takes_its_lines_once():
    # 48 x 8 x 1 MB written, but to 48 MB of lines: the 96 MB touched fit the L2, so the round trips are hits
    # and HBM serves each distinct line read once (the model does not order a line's first write before its
    # first read, so the workspace counts too); counted per write, 432 MB would not fit and every re-read missed.
    m = model_launch(rewriting(), P910)
    read, distinct = 48 * 9 * MB, 96 * MB
    assert m.gm_bytes == read + 48 * 8 * MB
    assert m.hbm_us == pytest.approx(distinct / P910.hbm_bytes_per_s * 1e6)
    assert m.l2_hit_bytes == m.gm_bytes - distinct
    assert any(f"{distinct / 1e6:.2f} MB of it distinct" in n and "fit its 192 MiB" in n for n in m.notes)


def test_the_roofline_is_the_least_work_under_the_l2_rule():
    """Reads come cold from HBM, the write-back L2 keeps the writes that fit (the old rule divided every byte by
    the HBM rate and put an estimate at 112.6% of its roofline)."""
    small = least_work(Moved(64 * MB, 32 * MB), 0, "bfloat16", P910)
    assert small.hbm_bytes == 64 * MB and small.kind == "HBM"
    assert small.hbm_us == pytest.approx(64 * MB / P910.hbm_bytes_per_s * 1e6)
    assert small.l2_us == pytest.approx(96 * MB / P910.l2_bytes_per_s * 1e6) and small.us == small.hbm_us
    # past the capacity the written share of the excess reaches HBM (l2_traffic's rule)
    big = least_work(Moved(300 * MB, 200 * MB), 0, "bfloat16", P910)
    back = 200 * MB * (500 * MB - P910.l2_bytes) // (500 * MB)
    assert big.hbm_bytes == 300 * MB + back
    # warm, what fits sends nothing to HBM: the L2's rate is the floor
    warm = least_work(Moved(64 * MB, 32 * MB), 0, "bfloat16", P910.with_l2_warm(True))
    assert warm.hbm_us == 0.0 and warm.kind == "L2" and warm.us == small.l2_us
    cube = least_work(Moved(MB, MB), 10**12, "bfloat16", P910)
    assert cube.kind == "cube FLOP/s" and cube.us == cube.cube_us


def test_an_ops_roofline_takes_its_bench_byte_split():
    import torch

    x, gamma = torch.empty(8192, 4096, dtype=torch.bfloat16), torch.empty(4096, dtype=torch.bfloat16)
    roof = roofline("rms_norm", (x, gamma), "fwd", P910)  # the byte count alone: no kernel runs
    assert roof.must_bytes == 2 * x.nbytes + gamma.nbytes + 4 * 8192  # y and the fp32 rstd written
    assert roof.hbm_bytes == x.nbytes + gamma.nbytes  # 67 MB read: 54 us, where all 134 MB made 107 us
    assert roof.hbm_us == pytest.approx(roof.hbm_bytes / P910.hbm_bytes_per_s * 1e6) and roof.kind == "HBM"
