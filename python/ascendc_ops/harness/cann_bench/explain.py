"""Why a measured cann-bench case is below 1.0x, from the model, so that no case below 1.0x stands
unexplained: for each such row of
`bench --preset cann-bench`, what binds our kernel and how far it is from the least work either kernel must
do (pipeline/calibration.py's figure: one kernel start plus its bytes at HBM or its FLOPs at the cube's peak), what the
built-in's measured time implies against that least work, and a class:

- "built-in beyond the model's measured error": the built-in ran faster than the least work by more than
  the band (no kernel ties it in this model: the model, not our kernel, is what the case questions);
- "floor above the built-in, within the band": the least work alone is slower than the built-in measured,
  by less than the band; ours does more than the least work too (named), but no kernel reaches 1.0x in this
  model, so the case questions the model's error, not that excess;
- "ours does more work": a pipe binds ours, or ours is more than the slack above the least work, and the
  least work would beat the built-in (a kernel deficit: the pipe and the excess are named);
- "tie within the model's measured error": ours sits at the least work's floor (bound by HBM, the L2, the
  launch or the cube, at most the slack above it) and the floor is within the band of the built-in.

Two tolerances, each measured: the band, for the model against a measurement, is the most any held-out
built-in case of the built-in's bound ran under the model's least work (model / measured - 1, 0 when none
did; all held-out cases when that bound has none): the least work is a floor (a lower envelope,
pipeline/calibration.py), so a built-in slower than it is no model error, one faster is; the slack, for our
estimate against the least work (the same model on both sides), is how far the model puts an ideal stream
of the same bytes above its own least work, run beside it (pipeline/ideal_stream.py)."""

from __future__ import annotations

from ..pipeline import calibration, load_platform
from ..pipeline.ideal_stream import stream_slack
from . import data as D
from .work import builtin_work

TIE = "tie within the model's measured error"
MORE_WORK = "ours does more work"
BEYOND = "built-in beyond the model's measured error"
ABOVE = "floor above the built-in, within the band"
FLOOR_BOUNDS = ("HBM", "L2", "launch overhead", "cube")  # ours binds on what the least work is priced by


def band(check_rows: list[dict], bound: str, err_key: str) -> float:
    """The most a held-out case of `bound` (all held-out cases if none has it) ran under the model's floor."""
    held = [r for r in check_rows if r["set"].startswith("held out")]
    same = [r for r in held if r["bound"] == bound] or held
    return max([0.0, *(r[err_key] for r in same)])


def model_error(check_rows: list[dict], err_key: str) -> float:
    """The model's demonstrated error, for ratios between two of its figures' subjects: the most any held-out
    built-in, whatever its bound, ran under the model's least work (docs/records/calibration.md's held-out errors)."""
    return band(check_rows, "", err_key)


TIE_MARK, FASTER, SLOWER = "tie", "faster", "slower"


def verdict(speedup: float, error: float) -> str:
    """A measured speedup (built-in / ours) against the model's error: inside [1 / (1 + error), 1 + error] the
    model cannot tell the two kernels apart."""
    if 1 / (1 + error) <= speedup <= 1 + error:
        return TIE_MARK
    return FASTER if speedup > 1 else SLOWER


def classify(est_us: float, ours_bound: str, least_us: float, baseline_us: float, tol: float, slack: float) -> str:
    """The class of a case below 1.0x (see the module); tol is the band, slack the model's own excess of an
    ideal kernel over the least work, both fractions."""
    if least_us > baseline_us * (1 + tol):
        return BEYOND
    at_floor = ours_bound in FLOOR_BOUNDS and est_us <= least_us * (1 + slack)
    if at_floor:
        return TIE
    return ABOVE if least_us > baseline_us else MORE_WORK


def _busiest(pipes: dict) -> str:
    if not pipes:
        return ""
    p = max(pipes, key=pipes.get)
    return f"{p} {100 * pipes[p]:.0f}% busy"


def _implied(work: calibration.Work, measured: float, plat) -> str:
    """What the built-in's measured time says against the model's fitted figures."""
    launch = calibration.terms(work, plat)["launch"]
    if measured <= launch:
        return f"its whole time is below the model's launch ({launch:.2f} us)"
    if work.flops and work.flops / plat.cube_peak_flops(work.dtype) > work.bytes / plat.hbm_bytes_per_s:
        peak = plat.cube_peak_flops(work.dtype) / 1e12
        return f"{work.flops / measured / 1e6:.0f} TFLOPS over its whole time (cube peak {peak:.0f})"
    return (
        f"{work.bytes / measured / 1e6:.2f} TB/s over its whole time, {work.bytes / (measured - launch) / 1e6:.2f} "
        f"after the model's launch (model HBM {plat.hbm_bytes_per_s / 1e12:.3g} TB/s)"
    )


def explain(row: dict, work: calibration.Work, bound: str, tol: float, plat, note: str = "") -> dict:
    """One below-1.0x row's explanation: the figures and the class (`work`: the built-in's least work,
    `bound`: its bound in the model check's rule; `note`: said before the class)."""
    least = calibration.predict(work, plat)
    est, base = row["est_us"], row["baseline_us"]
    slack = stream_slack(work.bytes, plat)
    cls = classify(est, row["bound"], least, base, tol, slack)
    ours = f"ours {est:.1f} us, binds {row['bound']}" + (
        f" ({_busiest(row['pipes'])})" if row["bound"] in FLOOR_BOUNDS and row["pipes"] else ""
    )
    if est > least * (1 + slack):
        ours += f", {est / least:.2f}x the least work (+{est - least:.1f} us; slack {slack:.1%})"
    else:
        ours += f", {100 * least / est:.0f}% of floor (slack {slack:.1%})"
    return {
        "task": row["task"],
        "case_id": row["case_id"],
        "speedup": row["speedup"],
        "class": cls,
        "least_us": least,
        "band": tol,
        "slack": slack,
        "text": (
            f"{ours}; least work {work.bytes / 1e6:.1f} MB"
            + (f", {work.flops / 1e9:.2f} GFLOP" if work.flops else "")
            + f" = {least:.1f} us; built-in {base:.2f} us: {_implied(work, base, plat)}; model error on the "
            f"built-in {least / base - 1:+.0%} ({bound}-bound, held-out band {tol:.0%}){note} -> {cls}"
        ),
    }


def behind(rows: list[dict]) -> list[dict]:
    """The rows below 1.0x on a measured baseline, then (marked pre_cap, counted apart) the capped rows below
    1.0x on the measurement the cap replaced, as rows against that measurement."""
    out = [r for r in rows if r["baseline_kind"] == "measured" and r.get("speedup") is not None and r["speedup"] < 1]
    return out + [
        r | {"baseline_us": r["precap"]["us"], "speedup": r["precap_speedup"], "pre_cap": True}
        for r in rows
        if r.get("precap_speedup") is not None and r["precap_speedup"] < 1
    ]


def explanations(rows: list[dict], check_rows: list[dict], facts: dict, plat, err_key: str) -> list[dict]:
    """An explanation per measured row below 1.0x. A baseline outside the model check (several built-in
    kernels) is compared with the least work of one kernel, its bound by the check's rule, and says so; a
    task without a work model gets that reason instead of a class."""
    by_case = {(r["task"], r["case_id"]): r for r in check_rows}
    prior = load_platform(plat.name)
    fixed = load_platform(plat.name, calibrated=True).launch_us(prior.vector_cores)  # the check's rule
    out = []
    for r in behind(rows):
        case = next(c for c in D.all_tasks(facts)[r["task"]]["cases"] if c["case_id"] == r["case_id"])
        work = builtin_work(r["task"], case)
        if work is None:
            out.append({"task": r["task"], "case_id": r["case_id"], "speedup": r["speedup"], "class": None,
                        "text": f"no least-work model for {r['task']}"})  # fmt: skip
            continue
        chk = by_case.get((r["task"], r["case_id"]))
        bound = chk["bound"] if chk else calibration.bound(work, prior, fixed)
        n = calibration.kernels(case)
        note = "" if chk else f"; its baseline ran {n or 'an unknown number of'} kernels, the least work is one's"
        if r.get("pre_cap"):
            note += f"; against its {r['precap']['kind']} ({r['precap']['capped_by'][:7]})"
        out.append(
            explain(r, work, bound, band(check_rows, bound, err_key), plat, note) | {"pre_cap": bool(r.get("pre_cap"))}
        )
    return out


def lines(expl: list[dict]) -> list[str]:
    out = []
    for pre, what in ((False, "a measured baseline"), (True, "the measurement before the cap (counted apart)")):
        part = [e for e in expl if bool(e.get("pre_cap")) == pre]
        counts = {c: sum(e["class"] == c for e in part) for c in (TIE, ABOVE, MORE_WORK, BEYOND)}
        if pre and not part:
            continue
        out.append(
            f"below 1.0x on {what}: {len(part)} case(s), explained from the model: "
            + ", ".join(f"{n} {c}" for c, n in counts.items())
        )
        out += [f"  {e['task']} {e['case_id']} ({e['speedup']:.2f}x): {e['text']}" for e in part]
    return out
