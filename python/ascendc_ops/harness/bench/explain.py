"""The bench's explanation of each row that misses a target: one host profile of the row's call on
the CPU twin (harness/bench/host_profile.py, `ascendc-ops profile OP`), summarised as where its block
time goes (top APIs), how many times its vector instructions pass over the bytes the op must move,
and the GM<->UB copies' share. Run after every row is timed, so no profiling overlaps a timed call."""

from __future__ import annotations

from .host_profile import METHOD, READING, copy_share, host_profile, top_apis, unrecorded, v_passes

TARGET_COLUMNS = (("step", "t_step"), ("compile", "t_compile"), ("copy", "t_copy"))
FIELDS = ("missed", "explain_top", "explain_v_bytes", "explain_copy_pct", "explain_note")
TOP = 4
SKIPPED = "not profiled (--no-explain)"


def missed(row: dict) -> list[str]:
    """The targets a bench row misses, by name (step, compile, copy)."""
    return [name for name, col in TARGET_COLUMNS if str(row.get(col) or "").startswith("MISS")]


def explain_row(row: dict) -> dict:
    """The explain fields of one row, from one profiled call after a warm-up call (host_profile)."""
    shape = tuple(int(d) for d in row["shape"].split("x"))
    info = host_profile(row["op"], shape, row["dtype"], row["pass"], reps=0)
    top = (
        ", ".join(
            f"{api} ({pipe}) {share:.0f}%" if share >= 0.5 else f"{api} ({pipe}) <1%"
            for api, pipe, share in top_apis(info, TOP)
        )
        or "no instruction recorded"
    )
    if unrecorded(info):
        top += f" ({unrecorded(info)})"
    if info["faults"]:
        top += f" ({info['faults']} page faults in the profiled call)"
    return {
        "explain_top": top,
        "explain_v_bytes": v_passes(info),
        "explain_copy_pct": copy_share(info),
        "explain_note": "",
    }


def explain(rows: list, enabled: bool = True, progress=None) -> int:
    """Adds FIELDS to every row (empty where it meets its targets); profiles each missed row when
    `enabled`. Returns how many rows were profiled."""
    todo = []
    for r in rows:
        r.update(dict.fromkeys(FIELDS[1:4]), missed=", ".join(missed(r)), explain_note="")
        if r["missed"]:
            todo.append(r)
    for i, r in enumerate(todo if enabled else ()):
        if progress:
            progress(i, len(todo), f"explaining {r['op']} {r['shape']} {r['dtype']} {r['pass']}")
        try:
            r.update(explain_row(r))
        except (RuntimeError, ValueError) as e:  # one row's failure is shown in its line, the run goes on
            r["explain_note"] = f"profile failed: {type(e).__name__}: {str(e).strip().splitlines()[0]}"
    if progress and enabled and todo:
        progress(len(todo), len(todo), "explained")
    if not enabled:
        for r in todo:
            r["explain_note"] = SKIPPED
    return len(todo) if enabled else 0


def markdown(rows: list) -> str:
    """One line per missed row, and how to read them; the rows went through explain()."""
    rows = [r for r in rows if r.get("missed")]
    if not rows:
        return "Every row meets its targets: nothing to explain."
    if all(r["explain_note"] == SKIPPED for r in rows):
        return f"{len(rows)} row(s) miss a target; {SKIPPED}."
    head = (
        f"| op | shape | dtype | pass | missed | where the block time goes (top {TOP} APIs) "
        "| V bytes / must move | GM<->UB copies |"
    )
    lines = [head, "|---|---|---|---|---|---|---:|---:|"]
    for r in rows:
        if r["explain_note"]:
            what, v, copies = r["explain_note"], "-", "-"
        else:
            what, v, copies = r["explain_top"], f"{r['explain_v_bytes']:.1f}x", f"{r['explain_copy_pct']:.0f}%"
        lines.append(
            f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['pass']} | {r['missed']} | {what} | {v} | {copies} |"
        )
    lines.append("")
    lines.append(
        f"How to read it: one profiled call per missed row on the CPU twin, after the timing ({METHOD}); "
        f"{READING}. A profiled call runs a little slower than an unprofiled one: read shares, not ms."
    )
    return "\n".join(lines)
