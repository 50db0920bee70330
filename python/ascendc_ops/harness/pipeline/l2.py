"""The chip's L2 cache in the model: which of a launch's GM bytes come from L2 rather than HBM.

- Within a launch (always): a byte read again after its first read is an L2 hit when everything the
  launch touches (its distinct reads plus its distinct writes: a workspace rewritten block after block
  holds its lines once) fits in the L2. Past that capacity, a **reuse distance** decides (`replay`): the
  launch's GM accesses are replayed in its modelled order (each block's accesses in issue order, spread
  evenly over the block's modelled span on its core, all cores interleaved by time) through an LRU of
  the L2's capacity, by 64 KiB chunks (`L2_CHUNK`, as the twin's packed record gives them): a chunk read
  or written and touched again before more than the L2's capacity of other distinct chunks came between
  is still there (a hit); past that it was replaced and the re-read costs HBM again.
- Writes (always): the L2 is write-back -- MTE3 and Fixpipe writes land in the L2 and a line reaches HBM
  when it is replaced (asc-devkit docs/zh/guide/算子实践参考/SIMD算子性能优化/内存访问/设置合理的L2-CacheMode.md,
  A2 among its products). In the replay, a chunk's written bytes (up to its distinct bytes) reach HBM
  when the chunk is replaced; what is still in the L2 at the launch's end is written back after it,
  outside its time. Without an order (the least work, calibration.py), the written share of the
  footprint past the capacity reaches HBM (split between reads and writes in proportion: assume).
- Across launches (`Platform.l2_warm`): a benchmark that repeats the same kernel on the same tensors
  finds what the previous launch touched still resident when it fits, so every access is a hit. cann-bench
  empties the L2 before every timed step (its PerfEvaluator._clear_cache, src/kernel_eval/eval/perf_eval.py:
  a ReduceMax reading 192 MiB, which leaves clean lines), so its times are cold, and so is the model by
  default (the replay starts from an empty L2).

What the chunks approximate: a chunk holds the launch's distinct bytes in it (its occupancy) from its first
touch to its replacement, so a tile of strided rows (one head of BSND) keeps the other heads' rows of its
chunks too, and a first touch of bytes in a resident chunk counts as a hit; the compulsory misses are kept
exact by charging at least every distinct byte read once. LRU stands for the replacement policy (no public
source names it); set conflicts are not modelled.

Every GM byte, hit or miss, passes the L2, so its bandwidth is a floor too (all bytes / L2 rate)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .platform import Platform

L2_CHUNK = 1 << 16  # bytes: the replay's unit (csrc/twin/twin_record_pack.h kL2ChunkBytes)
WRITE_BIT = np.uint64(1 << 63)
UNRANGED = np.uint64((1 << 64) - 1)  # the chunk of a GM write recorded without a range: lines of its own


@dataclass(frozen=True)
class L2Traffic:
    hbm_bytes: int  # bytes that reach HBM
    hit_bytes: int  # bytes the L2 serves
    footprint: int  # distinct bytes read plus distinct bytes written
    fits: bool  # the footprint fits in the L2

    @property
    def gm_bytes(self) -> int:
        return self.hbm_bytes + self.hit_bytes


@dataclass(frozen=True)
class Replayed:
    missed_read: int  # bytes read from chunks the L2 did not hold
    written_back: int  # written bytes of chunks replaced during the launch
    touches: int  # accesses replayed


def json_touches(block: list) -> np.ndarray:
    """A JSON-recorded block's GM accesses as the packed record gives them: (position, chunk, bytes | WRITE_BIT)
    rows, per instruction its read ranges' chunks then its write ranges' (a chunk repeating the previous
    one of the same instruction and direction grows that row), a write without ranges one UNRANGED row."""
    rows = []
    for pos, ins in enumerate(block):
        for key, flag in (("gm_read_ranges", 0), ("gm_write_ranges", int(WRITE_BIT))):
            first = len(rows)
            for lo, hi in ins.get(key) or []:
                while lo < hi:
                    chunk = lo // L2_CHUNK
                    stop = min(hi, (chunk + 1) * L2_CHUNK)
                    if len(rows) > first and rows[-1][1] == chunk:
                        rows[-1][2] += stop - lo
                    else:
                        rows.append([pos, chunk, (stop - lo) | flag])
                    lo = stop
        if not ins.get("gm_write_ranges") and ins.get("gm_write", 0):
            rows.append([pos, int(UNRANGED), ins["gm_write"] | int(WRITE_BIT)])
    return np.array(rows, dtype=np.uint64).reshape(-1, 3)


def occupancy(runs: np.ndarray) -> dict:
    """Chunk -> the launch's distinct bytes in it, from sorted disjoint [start, end) runs."""
    occ = {}
    for lo, hi in runs.tolist():
        while lo < hi:
            chunk = lo // L2_CHUNK
            stop = min(hi, (chunk + 1) * L2_CHUNK)
            occ[chunk] = occ.get(chunk, 0) + stop - lo
            lo = stop
    return occ


def modelled_order(touches: list, lengths: list, starts: list, spans: list) -> np.ndarray:
    """Every slot's touches (rows as json_touches gives) merged in modelled time: a touch at position p of a
    block of n instructions that started at `start` and ran `span` cycles comes at start + span * p / n (the
    block's accesses spread evenly over its span: the model keeps no per-instruction time here)."""
    parts, times = [], []
    for t, n, start, span in zip(touches, lengths, starts, spans, strict=True):
        if len(t):
            parts.append(t)
            times.append(start + span * t[:, 0].astype(np.float64) / max(n, 1))
    if not parts:
        return np.zeros((0, 3), dtype=np.uint64)
    rows, at = np.concatenate(parts), np.concatenate(times)
    return rows[np.argsort(at, kind="stable")]


def replay(order: np.ndarray, occ: dict, capacity: int) -> Replayed:
    """The touches in `order` through an LRU L2 of `capacity` bytes whose entries are chunks of `occ` bytes
    each (an UNRANGED write: its own bytes): reads of chunks it does not hold miss; written bytes make their
    chunk dirty (up to its occupancy) and reach HBM when it is replaced. An entry larger than the excess loses only
    the excess (lines are replaced, not whole entries), its dirty bytes in proportion."""
    lru, dirty = OrderedDict(), {}
    used = missed = back = 0
    writes = (order[:, 2] & WRITE_BIT) != 0
    sizes = (order[:, 2] & ~WRITE_BIT).astype(np.int64)
    chunks = order[:, 1]
    keys = np.where(chunks == UNRANGED, -1 - np.arange(len(order), dtype=np.int64), chunks.astype(np.int64))
    for key, size, write in zip(keys.tolist(), sizes.tolist(), writes.tolist(), strict=True):
        if key in lru:
            lru.move_to_end(key)
        else:
            if not write:
                missed += size
            lru[key] = occ.get(key, size) if key >= 0 else size
            used += lru[key]
            while used > capacity and len(lru) > 1:
                old = next(iter(lru))
                held, excess = lru[old], used - capacity
                if held > excess:  # only the excess of the oldest entry is replaced (its dirty share with it)
                    gone = dirty.get(old, 0) * excess // held
                    lru[old], used, back = held - excess, capacity, back + gone
                    if gone:
                        dirty[old] -= gone
                    break
                lru.popitem(last=False)
                used -= held
                back += dirty.pop(old, 0)
        if write:
            dirty[key] = min(lru[key], dirty.get(key, 0) + size)
    return Replayed(missed, back, len(order))


def l2_traffic(
    read: int,
    distinct_read: int,
    write: int,
    plat: Platform,
    overwritten: int = 0,
    distinct_write: int | None = None,
    replayed: Replayed | None = None,
) -> L2Traffic:
    """The split of a launch's GM traffic (`read` bytes, `distinct_read` of them distinct, `write`
    bytes, `distinct_write` of them distinct (default: all), `overwritten` of those written in place over
    bytes read) between HBM and L2 hits on `plat`; past the capacity by the launch's `replayed` order when
    given (the reuse distance), else every re-read misses."""
    footprint = distinct_read + (write if distinct_write is None else distinct_write) - overwritten
    fits = plat.l2_bytes > 0 and footprint <= plat.l2_bytes
    if not plat.l2_bytes:
        return L2Traffic(read + write, 0, footprint, False)
    if fits and plat.l2_warm:
        return L2Traffic(0, read + write, footprint, True)
    if fits:
        hbm_read, written_back = distinct_read, 0
    elif replayed is not None:  # every distinct byte once at least: the chunks' first touches are not exact
        hbm_read, written_back = min(read, max(distinct_read, replayed.missed_read)), min(write, replayed.written_back)
    else:  # past the capacity a re-read misses too
        hbm_read, written_back = read, write * (footprint - plat.l2_bytes) // footprint
    hbm = hbm_read + written_back
    return L2Traffic(hbm, read + write - hbm, footprint, fits)


def floor_seconds(traffic: L2Traffic, plat: Platform) -> dict:
    """The time the chip's shared memory needs for the traffic: {"HBM": misses at HBM rate, "L2": every
    byte at the L2 rate (0 without an L2)}."""
    l2 = traffic.gm_bytes / plat.l2_bytes_per_s if plat.l2_bytes_per_cycle else 0.0
    return {"HBM": traffic.hbm_bytes / plat.hbm_bytes_per_s, "L2": l2}
