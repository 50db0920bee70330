"""One launch on the chip: blocks placed on the cores (in waves past the core count), the chip's HBM and L2
shared by every core's MTE2/MTE3 traffic (re-reads that fit the L2 are hits: l2.py), the launch overhead,
and what bounds the result."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from .l2 import floor_seconds, json_touches, l2_traffic, modelled_order, occupancy, replay
from .mix import layout, simulate_mix
from .packed import PackedLaunch, compiled_blocks
from .platform import PIPES, Platform
from .timeline import BlockTimeline, compile_block, simulate_block

CUBE_PIPES = ("M", "MTE1", "FIX")
MIB = 1 << 20
CONTENTION_TOL = 0.005  # the contention solve stops within this share of the memory floor: the model's resolution
BOUND_NAMES = {"MTE2": "MTE2", "MTE3": "MTE3", "V": "V", "S": "scalar", "M": "cube", "MTE1": "MTE1", "FIX": "FIX"}


@dataclass
class LaunchModel:
    kernel: str
    block_dim: int
    cores: int  # cores of the kind this kernel runs on (AIV, or AIC for cube work)
    cores_used: int
    waves: int
    cycles: float  # blocks start to last block done, HBM floor included
    gm_bytes: int
    hbm_us: float  # the bytes that reach HBM (gm_bytes less the L2 hits) at the chip's HBM bandwidth
    launch_us: float
    est_us: float
    bound: str
    mte_share: float  # share of each core's MTE bandwidth HBM contention leaves (1: none)
    pipes: dict  # utilisation per pipe: busy cycles over cores x cycles
    stalls: dict  # cycles pipes spent held by WaitFlag, summed over blocks
    placement: list  # (core, start cycle) per block
    top_ops: list  # [(pipe, op, share of that pipe's busy cycles)], busiest first
    top_waits: list  # [(wait label, cycles per block on average)], longest first
    timelines: list = field(repr=False)  # BlockTimeline per block (with events when asked)
    notes: list = field(default_factory=list)
    l2_hit_bytes: int = 0  # GM bytes the L2 served
    l2_us: float = 0.0  # gm_bytes at the chip's L2 bandwidth
    core_names: dict = field(default_factory=dict)  # mix launches: core id -> "AIC 0", "AIV 1 (group 0)"
    flows: list = field(default_factory=list)  # mix launches: (set core, cycle, wait core, cycle, label)
    kinds: dict = field(default_factory=dict)  # mix launches: per core kind, cores, cores used, end us, pipes


def _schedule(timelines: list[BlockTimeline], cores: int) -> tuple[float, list]:
    """Blocks in order to whichever core is free first (all cores start together)."""
    heap = [(0.0, c) for c in range(cores)]
    placement, end = [], 0.0
    for tl in timelines:
        t, c = heapq.heappop(heap)
        placement.append((c, t))
        heapq.heappush(heap, (t + tl.cycles, c))
        end = max(end, t + tl.cycles)
    return end, placement


def _run(blocks, plat, cores, share, keep=False):
    """blocks: (compiled code, totals) per block; identical blocks are simulated once."""
    memo, tls = {}, []
    for code, totals in blocks:
        tl = memo.get(code)
        if tl is None:
            tl = memo[code] = simulate_block(code, plat, share, keep)
            tl.gm_read, tl.gm_write, tl.uncosted = totals["gm_read"], totals["gm_write"], totals["uncosted"]
        tls.append(tl)
    end, placement = _schedule(tls, cores)
    return end, placement, tls


def _contention_share(run, hbm_cycles, t_full) -> float:
    """The MTE bandwidth share s at which the launch moves its bytes exactly at HBM speed, from the
    affine fit T(s) = a + b / s (the MTE part stretches, the rest does not); one refinement."""
    pts = [(1.0, t_full)]
    s = min(1.0, t_full / hbm_cycles)
    for _ in range(3):
        t = run(s)
        pts.append((s, t))
        (s0, t0), (s1, t1) = pts[-2], pts[-1]
        if abs(t1 - hbm_cycles) <= CONTENTION_TOL * hbm_cycles or s0 == s1:
            return s1
        b = (t1 - t0) / (1 / s1 - 1 / s0)
        a = t1 - b / s1
        s = min(1.0, max(1e-4, b / (hbm_cycles - a))) if b > 0 and hbm_cycles > a else s1 * t1 / hbm_cycles
    return s


def _union(spans: np.ndarray) -> np.ndarray:
    """[start, end) rows as their sorted, disjoint union."""
    if not len(spans):
        return np.zeros((0, 2), dtype=np.int64)
    spans = spans[np.argsort(spans[:, 0], kind="stable")]
    ends = np.maximum.accumulate(spans[:, 1])
    new = np.concatenate(([True], spans[1:, 0] > ends[:-1]))  # a row past everything before starts a run
    return np.stack([spans[new, 0], np.maximum.reduceat(ends, np.flatnonzero(new))], axis=1)


def _ranges(record: dict, key: str) -> np.ndarray:
    """The union of every block's `key` ranges ("gm_read_ranges" / "gm_write_ranges") as sorted,
    disjoint [start, end) rows."""
    if isinstance(record, PackedLaunch):  # merged as recorded
        return record.reads if key == "gm_read_ranges" else record.writes
    return _union(np.array([r for b in record["blocks"] for i in b for r in i.get(key) or []], dtype=np.int64))


def _traffic(record, blocks, plat: Platform, placement: list, tls: list):
    """The launch's L2 split (l2.py): past the L2's capacity, its accesses replayed in the order the cores ran
    them at full bandwidth (`placement`, `tls`: a run at share 1; contention stretches the cores alike)."""
    read, write = (sum(t[k] for _, t in blocks) for k in ("gm_read", "gm_write"))
    distinct = distinct_read_bytes(record)
    args = (read, distinct, write, plat, min(write, overwritten_bytes(record)), distinct_write_bytes(record))
    traffic = l2_traffic(*args)
    if traffic.fits or not plat.l2_bytes or not blocks:  # within the capacity the order changes nothing
        return traffic
    if isinstance(record, PackedLaunch):
        touches = record.touches or [np.zeros((0, 3), dtype=np.uint64)] * len(blocks)
        lengths = [len(record.kinds[k]) if k >= 0 else 0 for k in record.kind_of]
    else:
        touches = [json_touches(b) for b in record["blocks"]]
        lengths = [len(b) for b in record["blocks"]]
    starts = [t for _, t in placement]
    order = modelled_order(touches, lengths, starts, [tl.cycles for tl in tls])
    union = _union(np.concatenate([_ranges(record, "gm_read_ranges"), _ranges(record, "gm_write_ranges")]))
    return l2_traffic(*args, replayed=replay(order, occupancy(union), plat.l2_bytes))


def distinct_read_bytes(record: dict) -> int:
    """The GM bytes the launch reads at least once (the union of every block's read ranges)."""
    merged = _ranges(record, "gm_read_ranges")
    return int((merged[:, 1] - merged[:, 0]).sum())


def distinct_write_bytes(record: dict) -> int:
    """The GM bytes the launch writes at least once: a workspace written again and again takes its lines of
    the L2 once (instructions recorded without ranges count every byte they write)."""
    merged = _ranges(record, "gm_write_ranges")
    if isinstance(record, PackedLaunch):
        return int((merged[:, 1] - merged[:, 0]).sum()) + record.unranged_write
    unranged = sum(i.get("gm_write", 0) for b in record["blocks"] for i in b if not i.get("gm_write_ranges"))
    return int((merged[:, 1] - merged[:, 0]).sum()) + unranged


def overwritten_bytes(record: dict) -> int:
    """The GM bytes the launch writes over bytes it also reads (an in-place op: RoPE): those lines
    are in the L2 already, so writing them takes no more of it."""
    reads, writes = _ranges(record, "gm_read_ranges"), _ranges(record, "gm_write_ranges")
    total = 0
    for lo, hi in writes:  # disjoint sorted reads: the ones that can overlap [lo, hi)
        a, b = np.searchsorted(reads[:, 1], lo, side="right"), np.searchsorted(reads[:, 0], hi, side="left")
        seg = reads[a:b]
        total += int(np.clip(np.minimum(seg[:, 1], hi) - np.maximum(seg[:, 0], lo), 0, None).sum())
    return total


def instructions(record):
    """Every distinct instruction of a launch (a packed record's table), or every one (a JSON record)."""
    if isinstance(record, PackedLaunch):
        return record.instrs
    return (i for b in record["blocks"] for i in b)


def compiled(record, plat: Platform) -> list:
    """(code, totals) per block slot of a recorded launch, JSON or packed (the same codes)."""
    if isinstance(record, PackedLaunch):
        return compiled_blocks(record, plat)
    return [compile_block(b, plat) for b in record["blocks"]]


def require_apis(record: dict, plat: Platform) -> None:
    """Refuses a launch that calls an API `plat` lacks: the twin runs A2's API set, which is no
    promise that another chip has it."""
    missing = sorted({i.get("op", "") for i in instructions(record)} & plat.lacks.keys())
    if missing:
        pages = "; ".join(f"{api}: asc-devkit {plat.lacks[api]}" for api in missing)
        raise ValueError(
            f"kernel {record.get('kernel', '?')!r} calls {', '.join(missing)}, which {plat.name} does not have "
            f"({pages}); it cannot run there as written, so it has no {plat.name} estimate"
        )


def _timed(
    plat: Platform,
    cycles: float,
    floor: dict,
    launch_us: float,
    share: float,
    placement: list,
    tls: list,
    busy: dict,
    traffic,
) -> dict:
    """The LaunchModel fields a vector, cube or mix launch fills alike from its cycles, memory floors (cycles per
    memory level), start cost, MTE share and timelines where they ran; the bound comes after (_bound)."""
    return dict(
        cycles=cycles,
        bound="",
        mte_share=share,
        placement=placement,
        hbm_us=floor["HBM"] / plat.hz * 1e6,
        launch_us=launch_us,
        est_us=cycles / plat.hz * 1e6 + launch_us,
        stalls={p: sum(tl.stall[p] for tl in tls) for p in PIPES},
        timelines=tls,
        top_ops=_top_ops(tls, busy),
        top_waits=_top_waits(tls),
        l2_hit_bytes=traffic.hit_bytes,
        l2_us=floor["L2"] / plat.hz * 1e6,
    )


def model_launch(record: dict, plat: Platform, keep_events: bool = False) -> LaunchModel:
    """The modelled time of one recorded launch ({"kernel", "block_dim", "blocks"}) on `plat`."""
    require_apis(record, plat)
    if record.get("cores"):  # a launch whose cores synchronise (a MIX kernel type): mix.py
        return model_mix_launch(record, plat, keep_events)
    cube = any(i.get("pipe") in CUBE_PIPES for i in instructions(record))
    cores = plat.cube_cores if cube else plat.vector_cores
    blocks = compiled(record, plat)
    read, write = (sum(t[k] for _, t in blocks) for k in ("gm_read", "gm_write"))
    gm, distinct = read + write, distinct_read_bytes(record)
    t_full, placed, ran = _run(blocks, plat, cores, 1.0) if blocks else (0.0, [], [])
    traffic = _traffic(record, blocks, plat, placed, ran)
    floor = {k: s * plat.hz for k, s in floor_seconds(traffic, plat).items()}
    memory_cycles = max(floor.values())  # the shared memory's floor: HBM's misses or the L2's every byte
    share = 1.0
    if blocks and memory_cycles > t_full:  # the cores together ask for more than HBM gives
        share = _contention_share(lambda s: _run(blocks, plat, cores, s)[0], memory_cycles, t_full)
    end, placement, tls = _run(blocks, plat, cores, share, keep_events) if blocks else (0.0, [], [])
    cycles = max(end, memory_cycles)
    used = len({c for c, _ in placement})
    launch_us = plat.launch_us(used, cube) if blocks else 0.0
    busy = {p: sum(tl.busy[p] for tl in tls) for p in PIPES}
    pipes = {
        p: (busy[p] / (cores * cycles) if cycles else 0.0) for p in PIPES if busy[p] or p in ("MTE2", "V", "MTE3", "S")
    }
    m = LaunchModel(
        kernel=record.get("kernel", "?"),
        block_dim=int(record.get("block_dim", len(blocks))),
        cores=cores,
        cores_used=used,
        waves=-(-len(blocks) // cores) if blocks else 0,
        gm_bytes=gm,
        pipes=pipes,
        **_timed(plat, cycles, floor, launch_us, share, placement, tls, busy, traffic),
    )
    m.bound = _bound(m, end, floor)
    if used < cores:
        m.notes.append(f"{cores - used} of {cores} cores idle (block_dim {len(blocks)})")
    elif len(blocks) % cores and len(blocks) > cores:
        m.notes.append(f"{len(blocks)} blocks on {cores} cores: the last of {m.waves} waves uses {len(blocks) % cores}")
    if traffic.fits and traffic.hit_bytes:
        state = "warm: the previous launch left it resident" if plat.l2_warm else "cold"
        served = traffic.hit_bytes if plat.l2_warm else read - distinct
        m.notes.append(
            f"{read / 1e6:.2f} MB read from GM, {distinct / 1e6:.2f} MB of it distinct: the L2 ({state}) serves "
            f"{served / 1e6:.2f} MB (the {traffic.footprint / 1e6:.2f} MB touched fit its "
            f"{plat.l2_bytes / MIB:.0f} MiB)" + ("" if plat.l2_warm else f" and holds the {write / 1e6:.2f} MB written")
        )
    elif not traffic.fits and plat.l2_bytes and (read > 1.1 * distinct or write):
        m.notes.append(
            f"{read / 1e6:.2f} MB read from GM, {distinct / 1e6:.2f} MB of it distinct: the "
            f"{traffic.footprint / 1e6:.2f} MB touched exceed the L2 ({plat.l2_bytes / MIB:.0f} MiB): replayed in "
            f"the modelled order, a re-read or write-back within its capacity is a hit, beyond it HBM traffic; "
            f"the L2 serves {traffic.hit_bytes / 1e6:.2f} MB, HBM {traffic.hbm_bytes / 1e6:.2f} MB"
        )
    uncosted = set().union(*(tl.uncosted for tl in tls)) if tls else set()
    if uncosted:
        m.notes.append(f"vector ops costed by the default row: {', '.join(sorted(uncosted))}")
    waits = sum(tl.unpaired_waits for tl in tls)
    if waits:
        m.notes.append(f"{waits} WaitFlag without an earlier SetFlag (ignored)")
    return m


def _top_ops(tls, busy) -> list:
    ops = {}
    for tl in tls:
        for key, cycles in tl.by_op.items():
            ops[key] = ops.get(key, 0.0) + cycles
    ranked = sorted(ops.items(), key=lambda kv: -kv[1])[:8]
    return [(pipe, op, cycles / busy[pipe]) for (pipe, op), cycles in ranked if busy[pipe]]


def _top_waits(tls) -> list:
    waits = {}
    for tl in tls:
        for label, cycles in tl.by_wait.items():
            waits[label] = waits.get(label, 0.0) + cycles / len(tls)
    return sorted(waits.items(), key=lambda kv: -kv[1])[:5]


def _bound(m: LaunchModel, end: float, floor: dict) -> str:
    """What limits the launch: launch overhead, the shared memory (HBM, or L2 when its floor, in cycles, is
    the larger), or the busiest pipe of the last core to finish."""
    memory_cycles, memory = max(floor.values()), "L2" if floor["L2"] > floor["HBM"] else "HBM"
    if not m.timelines:
        return "launch overhead"
    if m.launch_us >= m.est_us - m.launch_us:
        return "launch overhead"
    if m.mte_share < 0.999 or memory_cycles >= 0.98 * end:
        return memory
    last = max(range(len(m.timelines)), key=lambda i: m.placement[i][1] + m.timelines[i].cycles)
    core = m.placement[last][0]
    mine = [tl for tl, (c, _) in zip(m.timelines, m.placement, strict=True) if c == core]
    busy = {p: sum(tl.busy[p] for tl in mine) for p in PIPES}
    span = sum(tl.cycles for tl in mine) or 1.0
    pipe = max(busy, key=busy.get)
    if busy[pipe] / span >= 0.6:
        return BOUND_NAMES[pipe]
    return f"latency/sync (busiest pipe {BOUND_NAMES[pipe]} {100 * busy[pipe] / span:.0f}% busy)"


@dataclass
class OpModel:
    """Every launch of one op call, back to back."""

    platform: str
    launches: list
    est_us: float
    gm_bytes: int
    bound: str
    pipes: dict
    notes: list


def model_launches(records: list, plat: Platform, keep_events: bool = False) -> OpModel:
    return combined([model_launch(r, plat, keep_events) for r in records], plat)


def combined(launches: list, plat: Platform) -> OpModel:
    """One op call from its launches' models, back to back (a launch repeated is listed as often as it runs)."""
    est = sum(m.est_us for m in launches)
    pipes = {}
    for m in launches:
        for p, u in m.pipes.items():
            pipes[p] = pipes.get(p, 0.0) + u * m.est_us / (est or 1.0)
    main = max(launches, key=lambda m: m.est_us) if launches else None
    notes = [f"{m.kernel}: {n}" for m in launches for n in m.notes]
    return OpModel(
        platform=plat.name,
        launches=launches,
        est_us=est,
        gm_bytes=sum(m.gm_bytes for m in launches),
        bound=main.bound if main else "none",
        pipes=pipes,
        notes=notes,
    )


def model_mix_launch(record: dict, plat: Platform, keep_events: bool = False) -> LaunchModel:
    """A launch of AIC and AIV cores together (mix.py): its time is the latest core's end (the memory floor
    as for one kind) plus the start; with AICs, the cube kernels' start (the calibrated cube_launch_us)."""
    blocks = compiled(record, plat)
    codes = [c for c, _ in blocks]
    read, write = (sum(t[k] for _, t in blocks) for k in ("gm_read", "gm_write"))

    def run(share, keep=False):
        return simulate_mix(record, codes, plat, share, keep)

    full = run(1.0)
    t_full = full[0]
    traffic = _traffic(record, blocks, plat, full[1], full[2])
    floor = {k: s * plat.hz for k, s in floor_seconds(traffic, plat).items()}
    memory_cycles = max(floor.values())
    share = 1.0
    if memory_cycles > t_full:
        share = _contention_share(lambda s: run(s)[0], memory_cycles, t_full)
    end, placement, tls, flows, names, chip_groups, per, kinds = run(share, keep_events)
    for tl, (_, t) in zip(tls, blocks, strict=True):
        tl.gm_read, tl.gm_write, tl.uncosted = t["gm_read"], t["gm_write"], t["uncosted"]
    cycles = max(end, memory_cycles)
    has_aic = "AIC" in kinds
    n_kind = {"AIC": chip_groups if has_aic else 0, "AIV": chip_groups * per}
    used = len({c for c, _ in placement})
    launch_us = plat.launch_us(used, has_aic)
    busy = {p: sum(tl.busy[p] for tl in tls) for p in PIPES}
    # a pipe's utilisation over the cores that have it: V on AIVs, the cube's pipes on AICs, S/MTE2/MTE3 on both
    has = {p: n_kind["AIV"] if p == "V" else n_kind["AIC"] if p in CUBE_PIPES else sum(n_kind.values()) for p in PIPES}
    pipes = {p: busy[p] / (has[p] * cycles) if cycles and has[p] else 0.0 for p in PIPES if busy[p]}
    per_kind = {}
    for k in ("AIC", "AIV"):
        mine = [(tl, at) for tl, (_, at), kk in zip(tls, placement, kinds, strict=True) if kk == k]
        if not mine:
            continue
        kb = {p: sum(tl.busy[p] for tl, _ in mine) for p in PIPES}
        per_kind[k] = {
            "cores": n_kind[k],
            "cores_used": len({c for (c, _), kk in zip(placement, kinds, strict=True) if kk == k}),
            "end_us": round(max(at + tl.cycles for tl, at in mine) / plat.hz * 1e6, 3),
            "cross_wait_us": round(sum(tl.stall["S"] for tl, _ in mine) / len(mine) / plat.hz * 1e6, 3),
            "pipes": {p: round(b / (n_kind[k] * cycles), 3) for p, b in kb.items() if b and cycles},
        }
    groups = max(layout(record)[1], default=-1) + 1
    m = LaunchModel(
        kernel=record.get("kernel", "?"),
        block_dim=groups,
        cores=sum(n_kind.values()),
        cores_used=used,
        waves=-(-groups // chip_groups) if groups else 0,
        gm_bytes=read + write,
        pipes=pipes,
        core_names=names,
        flows=flows,
        kinds=per_kind,
        **_timed(plat, cycles, floor, launch_us, share, placement, tls, busy, traffic),
    )
    m.bound = _bound(m, end, floor)
    m.notes.append(
        f"mix launch: {groups} core group(s) of {'1 AIC + ' if has_aic else ''}{per} AIV on {chip_groups}; "
        f"cross-core flags and SyncAll with an assumed {plat.costs['cross_core_latency_cycles']} cycles; "
        + ("the cube kernels' start" if has_aic else "the vector kernels' start")
    )
    return m
