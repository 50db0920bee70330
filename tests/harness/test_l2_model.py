"""The L2 in the pipeline model (pipeline/l2.py): re-reads within a launch served by the L2 while the
launch's footprint fits it; past it, the reuse distance of the launch's accesses in modelled order (a re-read
within the capacity hits, beyond it misses; a write stays until replaced, then reaches HBM), on synthetic
records and replays; the packed record's touches equal to the JSON record's; the warm/cold switch; and the
least work's terms in both states, also as the roofline `estimate` divides by."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ascendc_ops.harness.families.base import Moved
from ascendc_ops.harness.pipeline import calibration as M, load_platform, model_launch
from ascendc_ops.harness.pipeline.estimate import least_work, roofline
from ascendc_ops.harness.pipeline.ideal_stream import ideal_stream, stream_slack
from ascendc_ops.harness.pipeline.l2 import L2_CHUNK, WRITE_BIT, json_touches, l2_traffic, occupancy, replay
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


def _touch(chunk: int, size: int = L2_CHUNK, write: bool = False) -> list:
    return [0, chunk, size | (int(WRITE_BIT) if write else 0)]


def _replay(rows: list, capacity_chunks: int):
    order = np.array(rows, dtype=np.uint64)
    occ = {int(c): L2_CHUNK for c in order[:, 1]}
    return replay(order, occ, capacity_chunks * L2_CHUNK)


def test_a_reread_within_the_capacity_hits_beyond_it_misses():
    for between, hit in ((6, True), (7, True), (8, False), (20, False)):  # distinct chunks touched in between
        got = _replay([_touch(0)] + [_touch(1 + k) for k in range(between)] + [_touch(0)], capacity_chunks=8)
        assert got.missed_read == (between + 1 + (not hit)) * L2_CHUNK, between
    # touching the same chunks again and again is no distance: 1000 reads of 4 chunks miss 4 times in an L2 of 4
    assert _replay([_touch(k % 4) for k in range(1000)], 4).missed_read == 4 * L2_CHUNK
    # a chunk read back in between is refreshed (LRU), so the oldest untouched one goes first
    got = _replay([_touch(0), _touch(1), _touch(2), _touch(0), _touch(3), _touch(0), _touch(1)], 3)
    assert got.missed_read == 5 * L2_CHUNK  # 0, 1, 2, 3 cold; 1 replaced by 3; 0 stays


def test_writes_stay_until_replaced_then_reach_hbm():
    kept = _replay([_touch(0, write=True)] + [_touch(1 + k) for k in range(7)] + [_touch(0)], 8)
    assert kept.written_back == 0 and kept.missed_read == 7 * L2_CHUNK  # the write read back from the L2
    gone = _replay([_touch(0, write=True)] + [_touch(1 + k) for k in range(8)] + [_touch(0)], 8)
    assert gone.written_back == L2_CHUNK and gone.missed_read == 9 * L2_CHUNK  # replaced, then fetched again
    # rewriting a chunk does not make it dirtier than its bytes: one write-back when it is replaced
    twice = _replay([_touch(0, write=True)] * 5 + [_touch(1 + k) for k in range(8)], 8)
    assert twice.written_back == L2_CHUNK


def test_occupancy_counts_each_chunks_distinct_bytes():
    runs = np.array([[100, 200], [L2_CHUNK - 10, 2 * L2_CHUNK + 5]], dtype=np.int64)
    assert occupancy(runs) == {0: 100 + 10, 1: L2_CHUNK, 2: 5}
    block = [_read(L2_CHUNK - 10, 20), {**_write(8), "gm_write_ranges": [[0, 4], [8, 12]]}, _write(6)]
    assert json_touches(block).tolist() == [
        [0, 0, 10],
        [0, 1, 10],
        [1, 0, 8 | int(WRITE_BIT)],  # two ranges in one chunk: one row
        [2, (1 << 64) - 1, 6 | int(WRITE_BIT)],  # a write without a range: lines of its own
    ]


def rereading_at(distance: int, blocks: int = 48, tile: int = MB, stream: int = 8 * MB) -> dict:
    """Every block reads a `tile` of its own, streams `stream` bytes nobody reads again, and reads its tile
    back after `distance` of those bytes (the rest after)."""

    def block(b: int) -> list:
        own, far = b * tile, blocks * tile + b * stream
        return [_read(own, tile), _read(far, distance), _read(own, tile), _read(far + distance, stream - distance)]

    return {"kernel": "reread_at", "block_dim": blocks, "blocks": [block(b) for b in range(blocks)]}


@pytest.mark.parametrize("distance, hit", [(MB, True), (7 * MB, False)])
def test_a_launch_past_the_l2_hits_what_it_reads_back_soon(distance, hit):
    # 48 x 9 MB = 432 MB touched: past the 192 MiB either way. 48 blocks at once read back their 1 MB tile after
    # 48 x `distance` bytes of the others' streams: 48 MB (within the L2: a hit) or 336 MB (beyond: a miss)
    m = model_launch(rereading_at(distance), P910)
    distinct = 48 * 9 * MB
    hbm = m.hbm_us * 1e-6 * P910.hbm_bytes_per_s
    assert hbm == pytest.approx(distinct if hit else distinct + 48 * MB)
    assert m.l2_hit_bytes == (48 * MB if hit else 0)
    assert any("replayed in the modelled order" in n for n in m.notes)


def test_rereads_beyond_capacity_cost_hbm():
    small = replace(P910, l2_bytes=64 * MB)  # the 100 MB touched no longer fit
    m, none = model_launch(rereading(), small), model_launch(rereading(), replace(P910, l2_bytes=0))
    # all 48 blocks read the shared 4 MB first, together: every re-read comes within 4 MB, so it hits; the 48 MB
    # written (no ranges: lines of their own) push the shared and own lines out, clean, and the last 64 MB stay
    read, distinct, write = 48 * 5 * MB, 4 * MB + 48 * MB, 48 * MB
    assert m.hbm_us * 1e-6 * P910.hbm_bytes_per_s == pytest.approx(distinct)
    assert m.l2_hit_bytes == read + write - distinct
    assert m.est_us < none.est_us
    assert any("exceed the L2 (64 MiB): replayed in the modelled order" in n for n in m.notes)


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
    # 384 MB read, 384 MB written: past the 192 MiB L2 either way. Replayed: the 48 blocks read together, then
    # write together; the last 192 MiB written stay in the L2 past the launch, the first 192 MiB are replaced.
    # Written over the inputs, a block's write finds its lines resident when the L2 still holds its reads.
    over, apart = (model_launch(in_place(over_inputs=o), P910) for o in (True, False))
    read = 48 * 8 * MB
    for m in (over, apart):
        assert m.hbm_us * 1e-6 * P910.hbm_bytes_per_s == pytest.approx(read + read - P910.l2_bytes)
    assert over.est_us <= apart.est_us


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


def test_the_packed_records_touches_are_the_json_records():
    """The twin's packed touches (csrc/twin/twin_record_pack.h) row for row as l2.json_touches reads the JSON
    record, and past the capacity (an L2 of 256 KiB) both replay to the same model."""
    from ascendc_ops.harness import runner
    from ascendc_ops.harness.pipeline import model_launches
    from ascendc_ops.harness.pipeline.estimate import tiling_platform
    from ascendc_ops.harness.twin_record import packed_recording, recording

    _, inputs = runner.make_inputs("fusion_attention", (1, 128, 4, 2, 64), "bfloat16")
    with tiling_platform(P910):
        call = runner.calls("fusion_attention", inputs, "fwd")
    with tiling_platform(P910), recording() as whole, packed_recording() as packed:
        call()
    for w, p in zip(whole, packed, strict=True):
        assert len(p.touches) == len(w["blocks"])
        for block, rows in zip(w["blocks"], p.touches, strict=True):
            assert np.array_equal(json_touches(block), rows)
    tiny = replace(P910, l2_bytes=256 * 1024)
    a, b = model_launches(whole, tiny), model_launches(packed, tiny)
    assert a.est_us == b.est_us and a.notes == b.notes
    assert [m.l2_hit_bytes for m in a.launches] == [m.l2_hit_bytes for m in b.launches]
    for m in a.launches:  # the workspace's round trips come back within 256 KiB: reads hit, which the old rule denied
        assert m.l2_hit_bytes > sum(tl.gm_write for tl in m.timelines)
