"""The modelled timeline as files: a Chrome trace (one process per core, one track per pipe; open in
Perfetto or chrome://tracing) and a PNG with one thin row per pipe per core."""
from __future__ import annotations

import json

from .launch import OpModel

TRACK_ORDER = ("MTE2", "V", "MTE3", "S", "MTE1", "M", "FIX")


def placed_events(model: OpModel, hz: float):
    """(core, pipe, name, start us, end us, detail) of every launch, launches back to back."""
    offset_us = 0.0
    for m in model.launches:
        start_us = offset_us + m.launch_us  # blocks start after the launch overhead
        for tl, (core, at) in zip(m.timelines, m.placement):
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
            events.append({"name": "thread_sort_index", "ph": "M", "pid": core, "tid": tid, "args": {"sort_index": tid}})
            seen.add((core, tid))
        ev = {"name": name, "cat": "wait" if name.startswith("wait") else pipe, "ph": "X", "pid": core, "tid": tid,
              "ts": round(s, 4), "dur": round(max(e - s, 0.0), 4), "args": {"kernel": kernel}}
        if detail:
            ev["args"]["detail"] = detail
        events.append(ev)
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": summary}


def write_trace(model: OpModel, hz: float, summary: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(model, hz, summary), f, separators=(",", ":"))


def _canvas():
    from ..plot import BLACK, GREY, LIGHT, Canvas  # harness/plot.py: the dependency-free PNG canvas

    return Canvas, BLACK, GREY, LIGHT


COLORS = {"MTE2": (31, 119, 180), "V": (44, 160, 44), "MTE3": (255, 127, 14), "S": (120, 120, 120),
          "MTE1": (148, 103, 189), "M": (214, 39, 40), "FIX": (140, 86, 75)}
WAIT = (245, 190, 190)


def write_png(model: OpModel, hz: float, title: str, path: str, max_cores: int = 48) -> None:
    """Rows: each pipe of each core (cores in order, at most max_cores); x: time in us."""
    Canvas, BLACK, GREY, LIGHT = _canvas()
    evs = [e for e in placed_events(model, hz) if e[0] < max_cores]
    pipes = [p for p in TRACK_ORDER if any(e[1] == p for e in evs)] or ["MTE2"]
    cores = sorted({e[0] for e in evs}) or [0]
    row_h, core_gap, left, top, plot_w = 3, 3, 60, 40, 1100
    core_h = len(pipes) * row_h + core_gap
    height = top + core_h * len(cores) + 40
    cv = Canvas(left + plot_w + 20, height)
    cv.text(8, 6, title[: (plot_w + left) // 6])
    x = left
    for p in pipes:
        cv.rect(x, 22, x + 10, 30, COLORS[p])
        cv.text(x + 14, 22, p, GREY)
        x += 14 + 6 * len(p) + 12
    cv.rect(x, 22, x + 10, 30, WAIT)
    cv.text(x + 14, 22, "held by WaitFlag", GREY)
    total = max(model.est_us, max((e[4] for e in evs), default=0.0)) or 1.0
    scale = plot_w / total
    for k in range(6):
        xx = left + int(plot_w * k / 5)
        cv.rect(xx, top - 2, xx + 1, top + core_h * len(cores), LIGHT)
        cv.text(xx - 8, top + core_h * len(cores) + 6, f"{total * k / 5:.1f}", GREY)
    cv.text(left + plot_w - 20, top + core_h * len(cores) + 18, "us", GREY)
    row_of = {c: i for i, c in enumerate(cores)}
    for i, c in enumerate(cores):
        if i % 8 == 0:
            cv.text(4, top + i * core_h, f"core {c}", BLACK)
    for core, pipe, name, s, e, _, _ in evs:
        y = top + row_of[core] * core_h + pipes.index(pipe) * row_h
        x0 = left + int(s * scale)
        x1 = max(x0 + 1, left + int(e * scale))
        cv.rect(x0, y, x1, y + row_h - (1 if row_h > 2 else 0), WAIT if name.startswith("wait") else COLORS[pipe])
    with open(path, "wb") as f:
        f.write(cv.png())
