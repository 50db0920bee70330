"""Charts, drawn with matplotlib (an optional extra: `pip install 'ascendc-ops[plot]'`): `bench --plot`'s
bar chart (speedups over the PyTorch step-by-step code and over torch.compile with the 1x and 3x marks; % of
copy bandwidth with the 50% mark) and the estimate's timeline (one thin row per pipe per core)."""

from __future__ import annotations

import importlib.util

from .pipeline.trace import TRACK_ORDER, placed_events

INSTALL = "pip install 'ascendc-ops[plot]'"
COLORS = {
    "MTE2": "tab:blue",
    "V": "tab:green",
    "MTE3": "tab:orange",
    "S": "tab:gray",
    "MTE1": "tab:purple",
    "M": "tab:red",
    "FIX": "tab:brown",
    "X": "tab:pink",  # cross-core sets, waits and SyncAll (mix launches)
}
WAIT = "#f5bebe"  # a pipe held by WaitFlag


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def pyplot():
    """matplotlib.pyplot without a display (Agg), or an ImportError saying how to install it."""
    if not available():
        raise ImportError(f"plots need matplotlib, an optional extra: {INSTALL}")
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on CI and servers
    import matplotlib.pyplot as plt

    return plt


def bench_chart(rows: list[dict], path: str, title: str = "ascendc-ops bench") -> None:
    """Speedups (vs step-by-step, vs torch.compile) and % of copy bandwidth per bench row, as a PNG."""
    plt = pyplot()
    labels = [f"{r['op']} {r['shape']} {r['dtype']} {r['pass']}" for r in rows]
    ys = range(len(rows))
    fig, (speed, copy) = plt.subplots(1, 2, sharey=True, figsize=(12, 1.5 + 0.35 * len(rows)))
    step = [r["vs_torch"] for r in rows]
    compiled = [r.get("vs_compile") or 0.0 for r in rows]  # None: no torch.compile provider (--no-compile)
    speed.barh([y - 0.2 for y in ys], step, 0.4, color="tab:blue", label="vs step-by-step")
    speed.barh([y + 0.2 for y in ys], compiled, 0.4, color="tab:orange", label="vs torch.compile")
    for mark, color in ((1.0, "gray"), (3.0, "tab:red")):
        speed.axvline(mark, color=color, linestyle="--", linewidth=1)
    speed.set_xlabel("speedup (x)")
    speed.legend(loc="lower right", fontsize="small")
    copy.barh(list(ys), [r["pct_copy"] for r in rows], 0.6, color="tab:green")
    copy.axvline(50.0, color="tab:red", linestyle="--", linewidth=1)
    copy.set_xlabel("% of copy bandwidth")
    speed.set_yticks(list(ys), labels, fontsize="small")
    speed.invert_yaxis()
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def timeline(model, hz: float, title: str, path: str, max_cores: int = 48) -> None:
    """Rows: each pipe of each core (cores in order, at most max_cores); x: time in us."""
    plt = pyplot()
    evs = [e for e in placed_events(model, hz) if e[0] < max_cores]
    pipes = [p for p in TRACK_ORDER if any(e[1] == p for e in evs)] or ["MTE2"]
    cores = sorted({e[0] for e in evs}) or [0]
    row_of = {c: i for i, c in enumerate(cores)}
    fig, ax = plt.subplots(figsize=(14, 1.5 + 0.06 * len(pipes) * len(cores)))
    for core, pipe, name, start, end, _, _ in evs:
        y = row_of[core] * (len(pipes) + 1) + pipes.index(pipe)
        ax.barh(
            y,
            max(end - start, 0.0),
            left=start,
            height=0.9,
            color=WAIT if name.startswith("wait") else COLORS.get(pipe, "black"),
        )
    step = max(1, len(cores) // 6)
    ax.set_yticks([row_of[c] * (len(pipes) + 1) for c in cores[::step]], [f"core {c}" for c in cores[::step]])
    ax.invert_yaxis()
    ax.set_xlabel("us")
    ax.set_xlim(0, max(model.est_us, max((e[4] for e in evs), default=0.0)) or 1.0)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[p]) for p in pipes] + [plt.Rectangle((0, 0), 1, 1, color=WAIT)]
    ax.legend(handles, pipes + ["held by WaitFlag"], ncol=len(pipes) + 1, fontsize="small", loc="upper right")
    ax.set_title(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
