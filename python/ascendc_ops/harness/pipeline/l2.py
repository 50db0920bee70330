"""The chip's L2 cache in the model: which of a launch's GM bytes come from L2 rather than HBM.

- Within a launch (always): a byte read again after its first read is an L2 hit when everything the
  launch touches (its distinct reads plus its distinct writes: a workspace rewritten block after block
  holds its lines once) fits in the L2; beyond that capacity none is
  (a sweep larger than the cache evicts a line before its reuse), and the re-read costs HBM again.
- Writes (always): the L2 is write-back -- MTE3 and Fixpipe writes land in the L2 and a line reaches HBM
  when it is replaced (asc-devkit docs/zh/guide/算子实践参考/SIMD算子性能优化/内存访问/设置合理的L2-CacheMode.md,
  A2 among its products). Within a launch, the written bytes that reach HBM are the
  written share of whatever the launch touches beyond the L2's capacity (footprint - L2, split between
  reads and writes in proportion: assume, no public source says which lines the L2 replaces); the rest
  is written back after the launch, outside its time.
- Across launches (`Platform.l2_warm`): a benchmark that repeats the same kernel on the same tensors
  finds what the previous launch touched still resident when it fits, so every access is a hit. cann-bench
  empties the L2 before every timed step (its PerfEvaluator._clear_cache, src/kernel_eval/eval/perf_eval.py:
  a ReduceMax reading 192 MiB, which leaves clean lines), so its times are cold, and so is the model by
  default.

Every GM byte, hit or miss, passes the L2, so its bandwidth is a floor too (all bytes / L2 rate)."""

from __future__ import annotations

from dataclasses import dataclass

from .platform import Platform


@dataclass(frozen=True)
class L2Traffic:
    hbm_bytes: int  # bytes that reach HBM
    hit_bytes: int  # bytes the L2 serves
    footprint: int  # distinct bytes read plus distinct bytes written
    fits: bool  # the footprint fits in the L2

    @property
    def gm_bytes(self) -> int:
        return self.hbm_bytes + self.hit_bytes


def l2_traffic(
    read: int, distinct_read: int, write: int, plat: Platform, overwritten: int = 0, distinct_write: int | None = None
) -> L2Traffic:
    """The split of a launch's GM traffic (`read` bytes, `distinct_read` of them distinct, `write`
    bytes, `distinct_write` of them distinct (default: all), `overwritten` of those written in place over
    bytes read) between HBM and L2 hits on `plat`."""
    footprint = distinct_read + (write if distinct_write is None else distinct_write) - overwritten
    fits = plat.l2_bytes > 0 and footprint <= plat.l2_bytes
    if not plat.l2_bytes:
        return L2Traffic(read + write, 0, footprint, False)
    if fits and plat.l2_warm:
        return L2Traffic(0, read + write, footprint, True)
    hbm_read = distinct_read if fits else read  # past the capacity a re-read misses too
    written_back = write * (footprint - plat.l2_bytes) // footprint if not fits else 0
    hbm = hbm_read + written_back
    return L2Traffic(hbm, read + write - hbm, footprint, fits)


def floor_seconds(traffic: L2Traffic, plat: Platform) -> dict:
    """The time the chip's shared memory needs for the traffic: {"HBM": misses at HBM rate, "L2": every
    byte at the L2 rate (0 without an L2)}."""
    l2 = traffic.gm_bytes / plat.l2_bytes_per_s if plat.l2_bytes_per_cycle else 0.0
    return {"HBM": traffic.hbm_bytes / plat.hbm_bytes_per_s, "L2": l2}
