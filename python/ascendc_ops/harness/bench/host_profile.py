"""`ascendc-ops profile`: where the CPU twin's time goes in one op call, measured.

A consumer of the twin's instruction record (the one the sanitizer and the pipeline model read,
csrc/twin/twin_host_profile.h) reads the host clock as each instruction is issued: the time from
one instruction being recorded to the next one's issue is that instruction's execution on the
host (its data movement runs after it is recorded) plus the next one's checks. Summed per Ascend C
API, with the bytes each moved, this shows which passes a bench row pays for. The profiled call
is a little slower than an unprofiled one; both are printed."""

from __future__ import annotations

import resource
import statistics
import time

import torch

from .. import runner
from ..environment import tune_glibc_malloc
from ..twin_record import host_profiling

REPS = 5
PROFILED_MAX = 5  # profiled calls at most: as the bench warms up, until one takes no page faults
METHOD = (
    "host clock at each instruction's issue, read by a consumer of the twin's instruction record "
    "(csrc/twin/twin_host_profile.h)"
)
# How to read a profile's summary: the one text for `profile` and the bench's explain table.
READING = (
    "share = an Ascend C API's host time as a % of the call's block time summed over its blocks; "
    "V bytes = bytes the vector (V) instructions read and write / bytes the op must move (inputs read "
    "once + outputs written once): each V instruction is a pass over UB tiles on the host, so 1x is one "
    "fused pass and more is extra passes; copies = the GM->UB (MTE2) and UB->GM (MTE3) copies' share"
)
COPY_PIPES = ("MTE2", "MTE3")


def aggregate(launches: list) -> dict:
    """Per (API, pipe) over the launches: calls, host ns, UB and GM bytes; and the block times."""
    per: dict = {}
    for launch in launches:
        for a in launch["apis"]:
            row = per.setdefault((a["op"], a["pipe"]), {"calls": 0, "host_ns": 0, "ub_bytes": 0, "gm_bytes": 0})
            row["calls"] += a["calls"]
            row["host_ns"] += a["ns"]
            row["ub_bytes"] += a["ub_bytes"]
            row["gm_bytes"] += a["gm_bytes"]
    return {
        "apis": per,
        "block_ns": sum(x["block_ns"] for x in launches),
        "setup_ns": sum(x["setup_ns"] for x in launches),
        "blocks": sum(x["block_dim"] for x in launches),
        "launches": [f"{x['kernel']} ({x['block_dim']} blocks)" for x in launches],
    }


def host_profile(name: str, shape=None, dtype: str = "float32", pass_: str = "fwd", reps: int = REPS) -> dict:
    """The profile of one call after a warm-up call: profiled calls are repeated (up to PROFILED_MAX) until
    one takes no page faults, as the bench warms up until its heap has grown; `reps` unprofiled calls are
    timed first (0: none, wall_ns None)."""
    tune_glibc_malloc()  # as the bench does: no page-fault trap on fresh outputs (inputs included)
    shape, inputs = runner.make_inputs(name, shape, dtype)
    make = runner.calls(name, inputs, pass_)
    make()()  # warm: first-touch pages and caches
    walls = []
    for _ in range(reps):
        call = make()
        t = time.perf_counter_ns()
        call()
        walls.append(time.perf_counter_ns() - t)
    for _ in range(PROFILED_MAX):  # the profiler's own allocations can move the output to fresh pages
        call = make()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        with host_profiling() as launches:
            t = time.perf_counter_ns()
            call()
            recorded_ns = time.perf_counter_ns() - t
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        if faults == 0:
            break
    agg = aggregate(launches)
    agg["apis"] = [{"op": op_, "pipe": pipe, **v} for (op_, pipe), v in agg["apis"].items()]
    must = runner.OPS[name].bytes_moved(inputs, None, pass_).total
    return {
        "op": name,
        "pass": pass_,
        "dtype": dtype,
        "shape": list(shape),
        "inputs": runner.output_shapes(inputs),
        "threads": torch.get_num_threads(),
        "wall_ns": statistics.median(walls) if walls else None,
        "reps": reps,
        "recorded_ns": recorded_ns,
        "faults": faults,
        "must_bytes": must,
        **agg,
        "method": METHOD,
    }


def top_apis(info: dict, n: int = 4) -> list[tuple[str, str, float]]:
    """The n (API, pipe, % of block time) that took the most host time."""
    busy = info["block_ns"] or 1
    apis = sorted(info["apis"], key=lambda r: -r["host_ns"])[:n]
    return [(r["op"], r["pipe"], 100 * r["host_ns"] / busy) for r in apis]


def v_passes(info: dict) -> float:
    """Bytes the V instructions read and write / bytes the op must move."""
    return sum(r["ub_bytes"] for r in info["apis"] if r["pipe"] == "V") / (info["must_bytes"] or 1)


def copy_share(info: dict) -> float:
    """% of block time in the GM->UB and UB->GM copies (MTE2/MTE3 APIs that move GM bytes; not their waits)."""
    ns = sum(r["host_ns"] for r in info["apis"] if r["pipe"] in COPY_PIPES and r["gm_bytes"] > 0)
    return 100 * ns / (info["block_ns"] or 1)


def unrecorded(info: dict) -> str:
    """A caveat when the record holds under half the op's GM traffic (the cube unit's Matmul is not
    recorded): that work's time lands on the instruction issued before it. Empty otherwise."""
    gm = sum(r["gm_bytes"] for r in info["apis"])
    if not info["must_bytes"] or gm >= info["must_bytes"] / 2:
        return ""
    return (
        f"the record holds {100 * gm / info['must_bytes']:.0f}% of the op's GM traffic: unrecorded work "
        "(the cube's Matmul) is timed under the instruction issued before it"
    )


def text(info: dict) -> str:
    ms, mb = 1e6, 1e6
    apis = sorted(info["apis"], key=lambda r: -r["host_ns"])
    busy = info["block_ns"] or 1
    must = info["must_bytes"] or 1
    wall = "" if info["wall_ns"] is None else f"{info['wall_ns'] / ms:.2f} ms per call (median of {info['reps']}), "
    lines = [
        f"{info['op']} {info['pass']} {info['dtype']} inputs {info['inputs']} on the CPU twin "
        f"({info['threads']} threads): {wall}{info['recorded_ns'] / ms:.2f} ms profiled",
        f"  launches: {', '.join(info['launches'])}; block time {info['block_ns'] / ms:.2f} ms summed over "
        f"{info['blocks']} blocks; the op must move {info['must_bytes'] / mb:.1f} MB",
        "  | API | pipe | calls | host ms | share | UB MB | x must-move | GM MB |",
        "  |---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in apis:
        if r["host_ns"] < busy * 0.005:
            continue
        lines.append(
            f"  | {r['op']} | {r['pipe']} | {r['calls']} | {r['host_ns'] / ms:.2f} | {100 * r['host_ns'] / busy:.0f}% "
            f"| {r['ub_bytes'] / mb:.1f} | {r['ub_bytes'] / must:.2f} | {r['gm_bytes'] / mb:.1f} |"
        )
    lines.append(
        f"  | (block start to first instruction) | - | {info['blocks']} | {info['setup_ns'] / ms:.2f} "
        f"| {100 * info['setup_ns'] / busy:.0f}% | | | |"
    )
    lines.append(f"  V bytes {v_passes(info):.2f}x, copies {copy_share(info):.0f}%")
    lines += [f"  note: {unrecorded(info)}"] if unrecorded(info) else []
    lines += [f"  note: {info['faults']} page faults in the profiled call"] if info["faults"] else []
    lines.append(f"  how to read: {READING}")
    return "\n".join(lines)
