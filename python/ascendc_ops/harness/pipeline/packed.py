"""The twin's packed record (csrc/twin/twin_record_pack.h), what the model reads at training shapes: each
distinct instruction of a launch once (in the recorder's format, addresses dropped: every span list is one
range of its byte total), each distinct block ("block kind") once as indices into them, the block slots
that ran each kind, the union of the launch's GM read and write ranges, and each slot's GM accesses in issue order
by 64 KiB chunk (the L2's reuse model, l2.py). The model computes the same
numbers from it as from the whole JSON record (launch.py takes either): a block's compiled code is the
compiled instructions in the same order, and the L2's distinct bytes are measures of the same unions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .l2 import L2_CHUNK
from .timeline import compile_instr


@dataclass
class PackedLaunch:
    kernel: str
    block_dim: int
    instrs: list  # each distinct instruction once, a dict in the recorder's format
    kinds: list  # per block kind: its instructions, np.uint32 indices into instrs
    kind_of: list  # per block slot: its kind (-1: the slot ran nothing)
    reads: np.ndarray  # the union of the GM read ranges: sorted disjoint [start, end) rows
    writes: np.ndarray  # the same of the GM write ranges
    unranged_write: int  # GM bytes written by instructions without a write range
    cores: list = field(default_factory=list)  # a mix launch's core per slot ({"kind", "name"}), as the JSON's
    touches: list = field(default_factory=list)  # per slot: (position, chunk, bytes | write bit) rows, np.uint64

    # the launch-level keys of the JSON record, for code that reads only those ("kernel", "block_dim", "cores")
    def get(self, key: str, default=None):
        return {"kernel": self.kernel, "block_dim": self.block_dim, "cores": self.cores or None}.get(key, default)

    def __getitem__(self, key: str):
        if key not in ("kernel", "block_dim", "cores"):
            raise KeyError(f"{key!r}: a packed record keeps no per-block instruction list (PackedLaunch.kinds)")
        return self.get(key)

    def instructions(self) -> int:
        """Instructions the launch issued, every block counted."""
        return sum(len(self.kinds[k]) for k in self.kind_of if k >= 0)


def parse(blob) -> PackedLaunch:
    """One launch of twin_record_packed_take() (a uint8 tensor or bytes): an 8-byte header length, the JSON
    header, the kinds' u32 index streams, then the read and write runs as u64 pairs."""
    raw = np.frombuffer(blob.numpy().tobytes() if hasattr(blob, "numpy") else bytes(blob), dtype=np.uint8)
    n = int(raw[:8].view(np.uint64)[0])
    head = json.loads(raw[8 : 8 + n].tobytes())
    pos = 8 + n
    kinds = []
    for length in head["kinds"]:
        kinds.append(raw[pos : pos + 4 * length].view(np.uint32))
        pos += 4 * length
    pos += (8 - pos % 8) % 8
    n_runs = head["reads"] + head["writes"]
    runs = raw[pos : pos + 16 * n_runs].view(np.uint64).astype(np.int64).reshape(-1, 2)
    reads, writes = runs[: head["reads"]], runs[head["reads"] :]
    assert len(writes) == head["writes"], "packed record: run counts do not match the header"
    pos += 16 * n_runs
    assert head["l2_chunk"] == L2_CHUNK, f"packed record: L2 chunk {head['l2_chunk']}, the model's {L2_CHUNK}"
    touches = []
    for n in head["touches"]:
        touches.append(raw[pos : pos + 24 * n].view(np.uint64).reshape(-1, 3))
        pos += 24 * n
    return PackedLaunch(
        kernel=head["kernel"],
        block_dim=head["block_dim"],
        instrs=head["instrs"],
        kinds=kinds,
        kind_of=head["kind_of"],
        reads=reads,
        writes=writes,
        unranged_write=head["unranged_write"],
        cores=head.get("cores") or [],
        touches=touches,
    )


class Code(tuple):
    """A block's compiled code (timeline.compile_block's tuple of steps) that hashes and compares by its
    canonical step ids: equal steps share one id per launch, so equal ids are equal tuples, and the memos
    that simulate identical blocks once (launch._run, mix.simulate_mix) need not hash millions of steps."""

    def __hash__(self):
        return self.hashed

    def __eq__(self, other):
        if self is other:
            return True
        if isinstance(other, Code) and other.table is self.table:
            return self.key == other.key
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)


def compiled_blocks(rec: PackedLaunch, plat) -> list[tuple[tuple, dict]]:
    """(code, totals) per block slot, as timeline.compile_block gives them for the slot's recorded block;
    every distinct instruction compiled once, every kind built once."""
    ids, canon, gm_read, gm_write, uncosted = {}, [], [], [], []
    for ins in rec.instrs:
        unc = set()
        step, r, w = compile_instr(ins, plat, unc)
        canon.append(ids.setdefault(step, len(ids)))
        gm_read.append(r)
        gm_write.append(w)
        uncosted.append(unc)
    steps, canon = list(ids), np.array(canon, dtype=np.int64)
    gm_read, gm_write = np.array(gm_read, dtype=np.int64), np.array(gm_write, dtype=np.int64)
    table = object()  # the id space these codes share
    built = []
    for stream in rec.kinds:
        sid = canon[stream]
        code = Code(steps[i] for i in sid.tolist())
        code.table, code.key = table, sid.tobytes()
        code.hashed = hash(code.key)
        code.wide = None  # launch_wide's answer, filled on first use
        unc = set().union(*(uncosted[i] for i in np.unique(stream).tolist())) if len(stream) else set()
        totals = {"gm_read": int(gm_read[stream].sum()), "gm_write": int(gm_write[stream].sum()), "uncosted": unc}
        built.append((code, totals))
    empty = ((), {"gm_read": 0, "gm_write": 0, "uncosted": set()})
    return [built[k] if k >= 0 else empty for k in rec.kind_of]
