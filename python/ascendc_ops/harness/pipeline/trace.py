"""The modelled timeline as a Chrome trace (one process per core, one track per pipe; open in Perfetto or
chrome://tracing); harness/plot.py draws the same events as a PNG."""

from __future__ import annotations

import json

from .launch import OpModel

TRACK_ORDER = ("MTE2", "V", "MTE3", "S", "MTE1", "M", "FIX")


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


def chrome_trace(model: OpModel, hz: float, summary: dict) -> dict:
    events, seen = [], set()
    for core, pipe, name, s, e, detail, kernel in placed_events(model, hz):
        tid = TRACK_ORDER.index(pipe) + 1 if pipe in TRACK_ORDER else 9
        if (core, tid) not in seen:
            if not any(k[0] == core for k in seen):
                events.append({"name": "process_name", "ph": "M", "pid": core, "args": {"name": f"core {core}"}})
                events.append({"name": "process_sort_index", "ph": "M", "pid": core, "args": {"sort_index": core}})
            events.append({"name": "thread_name", "ph": "M", "pid": core, "tid": tid, "args": {"name": pipe}})
            events.append(
                {"name": "thread_sort_index", "ph": "M", "pid": core, "tid": tid, "args": {"sort_index": tid}}
            )
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
        events.append(ev)
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": summary}


def write_trace(model: OpModel, hz: float, summary: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(model, hz, summary), f, separators=(",", ":"))
