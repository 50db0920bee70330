"""The timeline of one block: each recorded instruction costed on its pipe and placed in time.

The scalar unit walks the program in order and hands each instruction to its pipe's queue (a few
cycles each); a pipe runs its queue in order. An instruction starts when it has been issued, its
pipe is free and its synchronisation allows: WaitFlag holds the destination pipe until the matching
SetFlag fired, and a SetFlag fires once everything issued earlier to its source pipe has completed
(queue hand-offs EnQue/DeQue/AllocTensor/FreeTensor are such flag pairs); PipeBarrier<p> holds pipe
p until p's earlier work completed. Each instruction holds its pipe for its occupancy (bytes over
bandwidth, repeats x cycles per repeat) and completes a latency later (DMA round trip, vector
pipeline fill), so back-to-back independent work overlaps and dependent work pays the latency.
A mix launch's cross-core instructions (CrossCoreSetFlag/WaitFlag, SyncAll) are handed to the
launch's scheduler (mix.py), which answers when the wait or barrier lets the core go on.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass, field

from .platform import FRACTAL, FRACTAL_K_BYTES, GM_PIPES, PIPES, Platform, dtype_bytes, dtype_key, repeats_of

SCALAR_OPS = ("GetValue", "SetValue")
SYNC_OPS = ("SetFlag", "WaitFlag", "PipeBarrier")
CROSS_OPS = ("CrossCoreSetFlag", "CrossCoreWaitFlag", "SyncAll")  # recorded with a "cross" field
CROSS_TRACK = "X"  # the trace's track of a core's cross-core sets, waits and SyncAll


@dataclass
class BlockTimeline:
    cycles: float = 0.0  # when the block's last instruction completed
    busy: dict = field(default_factory=lambda: dict.fromkeys(PIPES, 0.0))  # occupancy per pipe
    stall: dict = field(default_factory=lambda: dict.fromkeys(PIPES, 0.0))  # held by a WaitFlag per pipe
    gm_read: int = 0
    gm_write: int = 0
    by_op: dict = field(default_factory=dict)  # (pipe, op) -> occupancy
    by_wait: dict = field(default_factory=dict)  # "wait src->dst (que)" -> cycles its pipe was held
    events: list = field(default_factory=list)  # (pipe, name, start, end, detail) when asked for
    unpaired_waits: int = 0
    uncosted: set = field(default_factory=set)  # V ops costed by the default row


def _reduce_cost(plat: Platform, op: str, key: str, count: int, dtype: str) -> tuple[float, float]:
    """A count-form reduction: whole-reduce passes (one partial per repeat) until one value is left."""
    occ = lat = 0.0
    n = count
    while True:
        reps = repeats_of(n, dtype, plat.costs["repeat_bytes"])
        o, s = plat.vector_cycles(op, key, reps)
        occ += o + lat  # each further pass waits for the previous one to complete
        lat = s
        if reps <= 1:
            return occ, lat
        n = reps


def vector_cost(plat: Platform, ins: dict, uncosted: set) -> tuple[float, float]:
    """(occupancy, latency) of one V instruction from its op class and dtype."""
    op, dtype, count = ins.get("op", ""), ins.get("dtype", "float"), int(ins.get("count") or 0)
    key = dtype_key(dtype)
    if op in plat.composite:  # an activation API: its steps in a row, each waiting for the last
        occ = lat = 0.0
        for step in plat.composite[op]:
            o, s = plat.vector_cycles(step, key, repeats_of(count, dtype, plat.costs["repeat_bytes"]))
            occ += o + lat
            lat = s
        return occ, lat
    if op not in plat.vector:
        uncosted.add(op)
    if "Reduce" in op and not op.startswith(("Whole", "Block")):
        return _reduce_cost(plat, op, key, count, dtype)
    reps = int(ins.get("repeats") or 0) or repeats_of(count, dtype, plat.costs["repeat_bytes"])
    return plat.vector_cycles(op, key, reps)


def _span_bytes(ins: dict, key: str) -> int:
    return sum(e - b for b, e in ins.get(key) or [])


def transfer_path(ins: dict, pipe: str) -> str:
    """The data path of one MTE/FIX instruction (its rate's key), from where its bytes go."""
    if pipe == "MTE2":
        return "GM->L1" if ins.get("L1_write") else "GM->UB"
    if pipe == "MTE1":
        return "L1->L0B" if ins.get("L0B_write") else "L1->L0A"
    return "UB->GM" if pipe == "MTE3" else "L0C->GM"


def transfer_bytes(ins: dict, pipe: str) -> int:
    """The bytes one transfer moves: its GM bytes, else (on-chip moves) the bytes it writes."""
    gm = int(ins.get("gm_read") or 0) + int(ins.get("gm_write") or 0)
    if gm:
        return gm
    if pipe == "MTE1":
        return _span_bytes(ins, "L0A_write") + _span_bytes(ins, "L0B_write")
    return _span_bytes(ins, "ub_write") or _span_bytes(ins, "ub_read")


def mmad_fractals(ins: dict) -> int:
    """The fractals one Mmad multiplies, m1 x k1 x n1 (M, N in 16s, K in 32-byte steps), from the L0
    spans it reads and writes: L0A m1*k1, L0B k1*n1 fractals of 512 B, L0C m1*n1 of 16 x 16 fp32.
    GEMV (m = 1, A read as one ND row) has m1 = 1: k1*n1. Without spans: count / the MACs of a fractal."""
    a, b, c = _span_bytes(ins, "L0A_read"), _span_bytes(ins, "L0B_read"), _span_bytes(ins, "L0C_write")
    ab_bytes = FRACTAL * FRACTAL_K_BYTES
    if b and c:
        if a and a % ab_bytes == 0:
            square = (a // ab_bytes) * (b // ab_bytes) * (c // (FRACTAL * FRACTAL * 4))
            root = math.isqrt(square)
            if root * root == square:
                return root
        return b // ab_bytes
    k0 = FRACTAL_K_BYTES // dtype_bytes(ins.get("dtype", "half"))
    return math.ceil(int(ins.get("count") or 0) / (FRACTAL * FRACTAL * k0))


def instruction_cost(plat: Platform, ins: dict, pipe: str, uncosted: set) -> tuple[float, float]:
    """(cycles the pipe is held, latency until the result is visible) of one V, M or S instruction."""
    if pipe == "V":
        return vector_cost(plat, ins, uncosted)
    if pipe == "M":  # cube: the fractals, each 1 cycle (fp32 2), after a fixed start
        per = plat.costs["cube_fractal_cycles"][dtype_key(ins.get("dtype", ""))]
        return mmad_fractals(ins) * per, float(plat.costs["cube_start_cycles"])
    gm = ins.get("gm_read") or ins.get("gm_write")  # S: a scalar access to GM (data cache) or UB
    return float(plat.costs["scalar_gm_cycles" if gm else "scalar_ub_cycles"]), 0.0


# Compiled instruction kinds: (kind, pipe, fixed cycles, bytes, bytes per cycle, latency, a, b, label, detail);
# the cross-core ones (XSET, XWAIT, XSYNC) carry the mode and flag id in a, b
RUN, SET, WAIT, BARRIER, SCALAR, XSET, XWAIT, XSYNC = range(8)
CROSS_KINDS = {"CrossCoreSetFlag": XSET, "CrossCoreWaitFlag": XWAIT, "SyncAll": XSYNC}
TRANSFER_PIPES = ("MTE2", "MTE3", "MTE1", "FIX")


def compile_instr(ins: dict, plat: Platform, uncosted: set) -> tuple[tuple, int, int]:
    """One recorded instruction as a costed step, and the GM bytes it reads and writes as pipe work (0 for
    scalar accesses and synchronisation); V ops without a cost row are added to `uncosted`."""
    op, pipe = ins.get("op", ""), ins.get("pipe", "S")
    if op in CROSS_OPS and ins.get("cross"):
        mode, flag = ins["cross"].get("mode", -1), ins["cross"].get("flag", -1)
        label = "SyncAll" if op == "SyncAll" else f"{op} {flag} (mode {mode})"
        return (CROSS_KINDS[op], pipe, 0.0, 0, 0.0, 0.0, mode, flag, label, None), 0, 0
    if op in ("SetFlag", "WaitFlag"):
        src, dst, ident = (list(ins.get("event") or []) + [None, None, 0])[:3]
        src, dst = src or pipe, dst or pipe
        label = f"wait {src}->{dst}" + (f" ({ins['que']})" if ins.get("que") else "")
        key = (ident, ins.get("slot", -1))  # a queue hand-off pairs per buffer
        return (SET if op == "SetFlag" else WAIT, pipe, 0.0, 0, 0.0, 0.0, src, dst, label, key), 0, 0
    if op == "PipeBarrier" or pipe == "ALL":
        return (BARRIER, pipe, 0.0, 0, 0.0, 0.0, None, None, op, None), 0, 0
    if pipe == "S" or op in SCALAR_OPS:
        occ, _ = instruction_cost(plat, ins, "S", uncosted)
        return (SCALAR, "S", occ, 0, 0.0, 0.0, None, None, op, None), 0, 0
    if pipe in TRANSFER_PIPES:
        path, nbytes = transfer_path(ins, pipe), transfer_bytes(ins, pipe)
        fixed, rate, lat = plat.costs["mte_setup_cycles"], plat.rates[path], plat.latency[pipe]
        detail = f"{nbytes} B {path}"
    else:
        nbytes, rate = 0, 0.0
        fixed, lat = instruction_cost(plat, ins, pipe, uncosted)
        detail = f"{ins.get('count', 0)} x {ins.get('dtype', '')}"
        if pipe == "M":
            detail = f"{mmad_fractals(ins)} fractals, {ins.get('count', 0)} MACs of {ins.get('dtype', '')}"
    step = (RUN, pipe, fixed, nbytes, rate, lat, None, None, op, detail)
    return step, int(ins.get("gm_read") or 0), int(ins.get("gm_write") or 0)


def compile_block(instrs: list, plat: Platform) -> tuple[tuple, dict]:
    """The block as a hashable tuple of costed steps (identical blocks simulate once), and its totals."""
    code, uncosted = [], set()
    gm_read = gm_write = 0
    for ins in instrs:
        step, r, w = compile_instr(ins, plat, uncosted)
        code.append(step)
        gm_read += r
        gm_write += w
    return tuple(code), {"gm_read": gm_read, "gm_write": gm_write, "uncosted": uncosted}


def new_timeline(instrs, plat: Platform) -> tuple[tuple, BlockTimeline]:
    """(compiled code, an empty BlockTimeline with the block's totals) of one block, recorded or compiled."""
    if instrs and isinstance(instrs[0], dict):
        code, totals = compile_block(instrs, plat)
    else:
        code, totals = instrs, {"gm_read": 0, "gm_write": 0, "uncosted": set()}
    return code, BlockTimeline(gm_read=totals["gm_read"], gm_write=totals["gm_write"], uncosted=set(totals["uncosted"]))


def simulate_block(instrs, plat: Platform, mte_scale: float = 1.0, keep_events: bool = False) -> BlockTimeline:
    """Places every instruction of one block (recorded, or compiled by compile_block) in time, in
    cycles from the block's start; the GM pipes (MTE2/MTE3/FIX) run at mte_scale of their per-core bandwidth."""
    code, out = new_timeline(instrs, plat)
    for _ in walk_block(code, plat, out, mte_scale, keep_events):
        raise ValueError("a cross-core instruction in a block modelled alone: its launch is a mix launch (mix.py)")
    return out


def walk_block(code: tuple, plat: Platform, out: BlockTimeline, mte_scale: float = 1.0, keep_events: bool = False):
    """simulate_block's walk, filling `out`, as a generator: at each cross-core instruction it yields
    (kind, pipe, cycle, mode, flag, label) -- a set's cycle is when its pipe's earlier work has completed, a
    wait's or SyncAll's when the core reached it -- and a wait or SyncAll takes the cycle it is released at
    (generator.send), from which every pipe of the core goes on (on A2 the wait blocks every pipe)."""
    issue = 0.0  # the scalar unit's clock
    free = dict.fromkeys(PIPES, 0.0)  # when each pipe's queue can start its next instruction
    done = dict.fromkeys(PIPES, 0.0)  # when each pipe's issued work has all completed
    depth = int(plat.costs["queue_depth"])
    started = defaultdict(lambda: deque(maxlen=depth))  # start times of the last `depth` per pipe
    flags = defaultdict(deque)  # (src, dst, id) -> fire times of SetFlags not yet waited for
    issue_cost, sync_cost = plat.costs["scalar_issue_cycles"], plat.costs["sync_cycles"]
    barrier_v = plat.costs["pipe_barrier_v_cycles"]
    scale = {p: mte_scale if p in GM_PIPES else 1.0 for p in PIPES}
    busy, stall, by_op, by_wait = out.busy, out.stall, out.by_op, out.by_wait
    events = out.events if keep_events else None
    for kind, pipe, fixed, nbytes, rate, lat, src, dst, label, detail in code:
        issue += issue_cost
        if kind == RUN:
            occ = fixed + (nbytes / (rate * scale[pipe]) if nbytes else 0.0)
            hist = started[pipe]
            if len(hist) == depth:  # the pipe's queue is full: the scalar waits for a slot
                issue = max(issue, hist[0])
            start = issue if issue > free[pipe] else free[pipe]
            hist.append(start)
            free[pipe] = start + occ
            if start + occ + lat > done[pipe]:
                done[pipe] = start + occ + lat
            busy[pipe] += occ
            by_op[(pipe, label)] = by_op.get((pipe, label), 0.0) + occ
            if events is not None:
                events.append((pipe, label, start, start + occ, detail))
        elif kind == SET:
            fire = issue if src == "S" else max(issue, done.get(src, 0.0), free.get(src, 0.0))
            flags[(src, dst, detail)].append(fire + sync_cost)
        elif kind == WAIT:
            queue = flags.get((src, dst, detail))
            if not queue:
                out.unpaired_waits += 1
                continue
            fire = queue.popleft()
            if dst == "S" or dst not in free:
                if fire > issue:
                    stall["S"] += fire - issue
                    by_wait[label] = by_wait.get(label, 0.0) + fire - issue
                    issue = fire
                continue
            ready = max(free[dst], issue)
            if fire > ready:
                stall[dst] += fire - ready
                by_wait[label] = by_wait.get(label, 0.0) + fire - ready
                if events is not None:
                    events.append((dst, label, ready, fire, ""))
                free[dst] = fire
            else:
                free[dst] = ready
        elif kind == BARRIER:
            for p in PIPES if pipe == "ALL" else (pipe,):
                pending = done[p] > max(free[p], issue)
                free[p] = max(free[p], done[p], issue) + (barrier_v if pending and p == "V" else 0)
            if pipe == "ALL":
                issue = max(issue, *free.values())
        elif kind == SCALAR:  # runs on the scalar unit itself, in program order
            busy["S"] += fixed
            by_op[("S", label)] = by_op.get(("S", label), 0.0) + fixed
            if events is not None:
                events.append(("S", label, issue, issue + fixed, ""))
            issue += fixed
        elif kind == XSET:  # fires once its pipe's earlier work has completed, as SetFlag
            fire = max(issue, done.get(pipe, 0.0), free.get(pipe, 0.0)) + sync_cost
            if events is not None:
                events.append((CROSS_TRACK, label, fire, fire, f"on {pipe}"))
            yield kind, pipe, fire, src, dst, label
        else:  # XWAIT / XSYNC: the core stops until released (SyncAll first drains every pipe)
            reach = issue if kind == XWAIT else max(issue, *free.values(), *done.values())
            release = yield kind, pipe, reach, src, dst, label
            if release > issue:
                stall["S"] += release - issue
                by_wait[label] = by_wait.get(label, 0.0) + release - issue
            if events is not None:
                events.append((CROSS_TRACK, label, issue, max(release, issue), ""))
            issue = max(issue, release)
            for p in PIPES:
                free[p] = max(free[p], release)
    busy["S"] += issue_cost * len(code)  # the scalar unit is busy issuing, too
    out.cycles = max(issue, *free.values(), *done.values())


def block_bytes(instrs: list) -> int:
    return sum(int(i.get("gm_read") or 0) + int(i.get("gm_write") or 0) for i in instrs)
