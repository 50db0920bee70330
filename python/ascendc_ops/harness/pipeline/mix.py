"""A mix launch (KERNEL_TYPE_MIX_AIC_1_2, 1_1, MIX_AIV_1_0, ...) on the chip: every core of the record
(its "cores": AICs first, then the AIVs of each group) walks its own timeline (timeline.walk_block) and
the cores meet at their cross-core instructions. A CrossCoreSetFlag fires when its pipe's earlier work
has completed and raises the counters its mode names (0: every core of its kind, once all of them set;
1: the AIVs of its group, once both set; 2 from the AIC: each AIV of its group; 2 from the AIVs: the
AIC, once all of them set) a latency later (the platform's cross_core_latency_cycles, an assumption); a
CrossCoreWaitFlag takes its counter's raises in the order they were made and holds every pipe of its
core until then; SyncAll releases its parties a latency after the last one reached it (pipes drained).
A launch without mode-0 flags or SyncAll runs its groups independently, in waves on the chip's core
groups; one with them must have every core resident (the device would hang otherwise)."""

from __future__ import annotations

import heapq
from collections import defaultdict, deque

from .timeline import XSET, XSYNC, XWAIT, new_timeline, walk_block


def layout(record: dict) -> tuple[list, list, int]:
    """(kind per record slot, group per slot, AIVs per group) from the record's "cores"."""
    kinds = [c["kind"] for c in record["cores"]]
    aics = kinds.count("AIC")
    aivs = len(kinds) - aics
    per = (aivs // aics if aics else 1) if aivs else 0
    groups = [s if k == "AIC" else (s - aics) // per for s, k in enumerate(kinds)]
    return kinds, groups, per


def launch_wide(codes: list) -> bool:
    """True when some core sets a mode-0 flag or calls SyncAll: the launch's groups are not independent."""
    return any(_joins_launch(code) for code in codes)


def _joins_launch(code) -> bool:
    wide = getattr(code, "wide", None)  # a packed record's code keeps the answer (packed.Code)
    if wide is None:
        wide = any(step[0] == XSYNC or (step[0] == XSET and step[6] == 0) for step in code)
        if hasattr(code, "wide"):
            code.wide = wide
    return wide


def simulate_cores(codes, kinds, groups, plat, share, keep):
    """(BlockTimeline per core, flows) of cores that start together at cycle 0; flows are (source core,
    fire cycle, waiting core, release cycle, label) per set -> wait edge."""
    lat = plat.costs.get("cross_core_latency_cycles")
    if lat is None:
        raise ValueError(f"{plat.name} has no cross-core synchronisation in its platform file: no mix launch model")
    n = len(codes)
    tls, walkers = [], []
    for code in codes:
        _, tl = new_timeline(code, plat)
        tls.append(tl)
        walkers.append(walk_block(code, plat, tl, share, keep))
    raises = defaultdict(deque)  # (core, flag) -> (cycle the counter rose, [(source core, fire cycle)])
    joins = {}  # (mode, key, flag) -> {party: fire cycles of its sets not yet in a round}
    waiting = {}  # core -> (flag, cycle it reached the wait, label)
    sync_rounds = defaultdict(list)  # round -> [(core, reach)]
    sync_count = [0] * n
    parties = defaultdict(int)
    for code in codes:
        for r in range(sum(1 for step in code if step[0] == XSYNC)):
            parties[r] += 1
    flows, runnable = [], deque((i, None) for i in range(n))
    members = defaultdict(list)
    for i, (k, g) in enumerate(zip(kinds, groups, strict=True)):
        members[(k, g)].append(i)

    def take(i, flag, reach, label):
        got = raises[(i, flag)]
        if not got:
            waiting[i] = (flag, reach, label)
            return None
        at, sources = got.popleft()
        release = max(reach, at)
        flows.extend((src, fire, i, release, label) for src, fire in sources)
        return release

    def raise_on(targets, flag, sources):
        at = max(f for _, f in sources) + lat
        for t in targets:
            raises[(t, flag)].append((at, sources))
            if t in waiting and waiting[t][0] == flag:
                _, reach, label = waiting.pop(t)
                runnable.append((t, take(t, flag, reach, label)))

    def on_set(i, mode, flag, fire):
        kind, g = kinds[i], groups[i]
        if mode == 2 and kind == "AIC":
            return raise_on(members[("AIV", g)], flag, [(i, fire)])
        if mode == 0:
            key, parties_ = kind, [j for j in range(n) if kinds[j] == kind]
        elif mode == 1:
            key, parties_ = g, members[("AIV", g)]
        else:  # mode 2 from the AIVs: the AIC once all of them set
            key, parties_ = g, members[("AIV", g)]
        # a round counts once every party has set (its k-th set meets the others' k-th): a core that
        # sets twice before the others waits for their second sets too
        pending = joins.setdefault((mode, key, flag), defaultdict(deque))
        pending[i].append(fire)
        if all(pending[j] for j in parties_):
            got = [(j, pending[j].popleft()) for j in parties_]
            targets = members[("AIC", g)] if mode == 2 else parties_
            raise_on(targets, flag, got)

    while runnable:
        i, value = runnable.popleft()
        walker = walkers[i]
        while True:
            try:
                kind, _pipe, at, mode, flag, label = walker.send(value)
            except StopIteration:
                break
            value = None
            if kind == XSET:
                on_set(i, mode, flag, at)
            elif kind == XWAIT:
                value = take(i, flag, at, label)
                if value is None:
                    break
            else:  # SyncAll
                r = sync_count[i]
                sync_count[i] += 1
                sync_rounds[r].append((i, at))
                if len(sync_rounds[r]) < parties[r]:
                    break
                release = max(a for _, a in sync_rounds[r]) + lat
                runnable.extend((j, release) for j, _ in sync_rounds[r] if j != i)
                value = release
    if waiting:
        raise ValueError(f"the mix launch's cores {sorted(waiting)} wait for flags no core sets (a deadlock)")
    return tls, flows


def simulate_mix(record, code_of, plat, share, keep):
    """(end cycle, placement [(core id, start)], timelines, flows, core names, groups on the chip, cores
    started per kind) of a mix launch; code_of: the compiled code per record slot."""
    kinds, groups, per = layout(record)
    n_groups = max(groups) + 1 if groups else 0
    has_aic = "AIC" in kinds
    chip_groups = min(plat.cube_cores if has_aic else 10**9, plat.vector_cores // per if per else 10**9)
    names = {}

    def core_id(kind, q, sub):
        if kind == "AIC":
            return q
        v = q * per + sub
        return (chip_groups if has_aic else 0) + v

    for q in range(chip_groups):
        if has_aic:
            names[core_id("AIC", q, 0)] = f"AIC {q}"
        for sub in range(per):
            names[core_id("AIV", q, sub)] = f"AIV {q * per + sub} (group {q})"
    slots_of = defaultdict(list)
    for s, g in enumerate(groups):
        slots_of[g].append(s)
    sub_of = {
        s: (0 if kinds[s] == "AIC" else slots_of[groups[s]].index(s) - (1 if has_aic else 0)) for s in range(len(kinds))
    }
    tls, flows_all = [None] * len(kinds), []
    if launch_wide(code_of):
        if n_groups > chip_groups:
            raise ValueError(
                f"kernel {record.get('kernel', '?')!r}: {n_groups} core groups with mode-0 flags or SyncAll on "
                f"{plat.name}'s {chip_groups}: every core must be resident at once (the device hangs)"
            )
        got, flows = simulate_cores(code_of, kinds, groups, plat, share, keep)
        for s in range(len(kinds)):
            tls[s] = got[s]
        starts = dict.fromkeys(range(n_groups), 0.0)
        phys = {g: g for g in range(n_groups)}
        flows_all = [(s, f, w, r, lab) for s, f, w, r, lab in flows]
    else:
        memo, unit_end, unit_flows = {}, {}, {}
        for g in range(n_groups):
            slots = slots_of[g]
            key = tuple(code_of[s] for s in slots)
            if key not in memo:
                memo[key] = simulate_cores(list(key), [kinds[s] for s in slots], [0] * len(slots), plat, share, keep)
            got, flows = memo[key]
            for s, tl in zip(slots, got, strict=True):
                tls[s] = tl
            unit_end[g] = max((tl.cycles for tl in got), default=0.0)
            unit_flows[g] = [(slots[a], f, slots[b], r, lab) for a, f, b, r, lab in flows]
        heap = [(0.0, q) for q in range(chip_groups)]
        starts, phys = {}, {}
        for g in range(n_groups):
            t, q = heapq.heappop(heap)
            starts[g], phys[g] = t, q
            heapq.heappush(heap, (t + unit_end[g], q))
        flows_all = [x for g in range(n_groups) for x in unit_flows[g]]
    placement = [(core_id(kinds[s], phys[groups[s]], sub_of[s]), starts[groups[s]]) for s in range(len(kinds))]
    flows_placed = [
        (placement[a][0], placement[a][1] + f, placement[b][0], placement[b][1] + r, lab)
        for a, f, b, r, lab in flows_all
    ]
    end = max((at + tl.cycles for (_, at), tl in zip(placement, tls, strict=True)), default=0.0)
    return end, placement, tls, flows_placed, names, chip_groups, per, kinds
