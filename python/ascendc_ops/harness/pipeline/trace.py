"""The modelled timeline as a Chrome trace (one process per core, one track per pipe; open in Perfetto or
chrome://tracing); harness/plot.py draws the same events as a PNG."""

from __future__ import annotations

import json

from .launch import OpModel

TRACK_ORDER = ("MTE2", "V", "MTE3", "S", "MTE1", "M", "FIX", "X")  # X: cross-core sets, waits, SyncAll (mix)
TRACK_NAMES = {"X": "cross-core"}


def placed_events(model: OpModel, hz: float):
    """(core, pipe, name, start us, end us, detail) of every launch, launches back to back."""
    offset_us = 0.0
    for m in model.launches:
        start_us = offset_us + m.launch_us  # blocks start after the launch overhead
        for tl, (core, at) in zip(m.timelines, m.placement, strict=True):
            base = start_us + at / hz * 1e6
            for pipe, name, s, e, detail in tl.events:
                yield core, pipe, f"{name}", base + s / hz * 1e6, base + e / hz * 1e6, detail, m.kernel
        offset_us += m.est_us


def flow_events(model: OpModel, hz: float) -> list:
    """A mix launch's set -> wait edges as Chrome flow events (an arrow from the set to the wait it released)."""
    out, offset_us, ident = [], 0.0, 0
    tid = TRACK_ORDER.index("X") + 1
    for m in model.launches:
        start_us = offset_us + m.launch_us
        for src, fire, dst, release, label in m.flows:
            ident += 1
            common = {"name": label, "cat": "cross-core", "id": ident, "tid": tid}
            out.append({**common, "ph": "s", "pid": src, "ts": round(start_us + fire / hz * 1e6, 4)})
            out.append({**common, "ph": "f", "bp": "e", "pid": dst, "ts": round(start_us + release / hz * 1e6, 4)})
        offset_us += m.est_us
    return out


def core_name(model: OpModel, core: int) -> str:
    """A core's process name: "AIC 0" / "AIV 1 (group 0)" in a mix launch, "core N" otherwise."""
    for m in model.launches:
        if core in m.core_names:
            return m.core_names[core]
    return f"core {core}"


def chrome_trace(model: OpModel, hz: float, summary: dict) -> dict:
    return {"traceEvents": list(trace_events(model, hz)), "displayTimeUnit": "ns", "otherData": summary}


def trace_events(model: OpModel, hz: float):
    """The trace's events in file order: each core's and track's names where it first appears, every placed
    event, then the flow arrows of mix launches."""
    seen = set()
    for core, pipe, name, s, e, detail, kernel in placed_events(model, hz):
        tid = TRACK_ORDER.index(pipe) + 1 if pipe in TRACK_ORDER else 9
        if (core, tid) not in seen:
            if not any(k[0] == core for k in seen):
                yield {"name": "process_name", "ph": "M", "pid": core, "args": {"name": core_name(model, core)}}
                yield {"name": "process_sort_index", "ph": "M", "pid": core, "args": {"sort_index": core}}
            yield {
                "name": "thread_name",
                "ph": "M",
                "pid": core,
                "tid": tid,
                "args": {"name": TRACK_NAMES.get(pipe, pipe)},
            }
            yield {"name": "thread_sort_index", "ph": "M", "pid": core, "tid": tid, "args": {"sort_index": tid}}
            seen.add((core, tid))
        ev = {
            "name": name,
            "cat": "wait" if name.startswith("wait") else pipe,
            "ph": "X",
            "pid": core,
            "tid": tid,
            "ts": round(s, 4),
            "dur": round(max(e - s, 0.0), 4),
            "args": {"kernel": kernel},
        }
        if detail:
            ev["args"]["detail"] = detail
        yield ev
    yield from flow_events(model, hz)


CHUNK = 4096  # events encoded per json.dumps call: the C encoder's speed, a bounded share of memory


def write_trace(model: OpModel, hz: float, summary: dict, path: str) -> None:
    """The bytes json.dumps(chrome_trace(...), separators=(",", ":")) would give, written a chunk of events
    at a time: a training shape's trace holds millions of events, which as one list of dicts took GBs."""
    compact = {"separators": (",", ":")}
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        first, chunk = True, []
        for ev in trace_events(model, hz):
            chunk.append(ev)
            if len(chunk) == CHUNK:
                f.write(("" if first else ",") + json.dumps(chunk, **compact)[1:-1])
                first, chunk = False, []
        if chunk:
            f.write(("" if first else ",") + json.dumps(chunk, **compact)[1:-1])
        f.write('],"displayTimeUnit":"ns","otherData":' + json.dumps(summary, **compact) + "}")
