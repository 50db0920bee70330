"""A control for model-vs-model comparisons: the record of an ideal streaming kernel (each byte read once
and written once, whole-UB tiles double-buffered, one block per core) and how far the pipeline model puts
it above the least work of the same bytes. No kernel moves bytes with less overhead in the model, so that
excess, plus the model's own resolution (its contention solve stops within CONTENTION_TOL of the memory
floor), is the slack "at the floor" may allow our kernel (cann_bench/explain.py)."""

from __future__ import annotations

import math

from .launch import CONTENTION_TOL, model_launch
from .platform import Platform

BUFFERS = 2  # double buffering: the load of one tile overlaps the store of the one before


def _ins(pipe: str, op: str, **kw) -> dict:
    return {"pipe": pipe, "op": op, "dtype": "half", "count": 0, "repeats": 0, "gm_read": 0, "gm_write": 0,
            "ub_read": [], "ub_write": [], "event": None, **kw}  # fmt: skip


def _block(offset: int, nbytes: int, tile: int) -> list[dict]:
    """Load a tile into one of two UB buffers, store it once loaded; a buffer is reloaded once stored."""
    out, pos, i = [], 0, 0
    while pos < nbytes:
        n, slot = min(tile, nbytes - pos), i % BUFFERS
        lo = offset + pos
        if i >= BUFFERS:
            out.append(_ins("MTE2", "WaitFlag", event=["MTE3", "MTE2", slot]))
        out += [
            _ins("MTE2", "DataCopy", gm_read=n, gm_read_ranges=[[lo, lo + n]]),
            _ins("MTE2", "SetFlag", event=["MTE2", "MTE3", slot]),
            _ins("MTE3", "WaitFlag", event=["MTE2", "MTE3", slot]),
            _ins("MTE3", "DataCopy", gm_write=n),
            _ins("MTE3", "SetFlag", event=["MTE3", "MTE2", slot]),
        ]
        pos, i = pos + n, i + 1
    return out


def ideal_stream(nbytes: int, plat: Platform) -> dict:
    """The record of a kernel that reads nbytes / 2 and writes them back, on as many vector cores as it has
    whole tiles for (up to all of them)."""
    half = max(32, nbytes // 2)
    tile = plat.ub_bytes // BUFFERS // 32 * 32
    blocks = max(1, min(plat.vector_cores, math.ceil(half / tile)))
    per = -(-half // blocks)
    spans = [(b * per, min(per, half - b * per)) for b in range(blocks) if half > b * per]
    return {"kernel": "ideal_stream", "block_dim": len(spans), "blocks": [_block(o, n, tile) for o, n in spans]}


def stream_slack(nbytes: int, plat: Platform) -> float:
    """The ideal stream's modelled time over its least work (its launch plus its bytes at the shared
    memory's rate), less 1, plus the model's resolution."""
    m = model_launch(ideal_stream(nbytes, plat), plat)
    least = m.launch_us + max(m.hbm_us, m.l2_us)
    return m.est_us / least - 1 + CONTENTION_TOL
