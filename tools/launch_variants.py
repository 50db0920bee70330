#!/usr/bin/env python3
"""Other forms of the 910B model's fixed cost, fitted as harness/pipeline/calibration.py fits the committed one
(least squares in log time on the odd case ids, the even ones held out, the same cases and bounds) and scored by
the held-out error on the built-ins' measured cann-bench times (docs/harness.md, "The launch model").

    tools/launch_variants.py    # one block per variant: its fitted values and error per bound and set

Each variant prices a built-in's least work (calibration.builtin_work) as fixed cost + max(HBM, cube) terms:
- committed: launch + 0.01 us x cores, launch fitted on the launch cases, then HBM on the HBM cases;
- joint: the same form, launch and HBM fitted together on every calibration case (mixed ones too);
- per block: a start plus a cost per block the built-in runs, blocks = min(cores, its least bytes / 192 KiB,
  the UB: an assumption, the built-ins' tilings are not published);
- overlapped: a serial start plus a per-core start that overlaps the work, start + max(per-core, work).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from ascendc_ops.harness.cann_bench import data as D  # noqa: E402
from ascendc_ops.harness.pipeline import calibration as M, load_platform  # noqa: E402

UB_TILE = 192 * 1024  # bytes a block of a streaming kernel holds at once (the UB), for the per-block variant


def _work_us(w: M.Work, plat, hbm: float) -> float:
    t = M.terms(w, plat.with_hbm(hbm))
    return max(t["HBM"], t["cube"])


def _cores(w: M.Work, plat) -> int:
    return plat.cube_cores if w.cube else plat.vector_cores


def _blocks(w: M.Work, plat) -> int:
    return min(_cores(w, plat), max(1, math.ceil(w.bytes / UB_TILE)))


def variants(plat) -> dict:
    """name -> (parameter names, start values, time(work, params), fit on the bound-selected sets only)."""
    per_core = plat.costs["launch_us_per_core"]
    return {
        "joint": (("launch_us", "log10 HBM B/s"), (8.0, 12.1),
                  lambda w, p: p[0] + per_core * _cores(w, plat) + _work_us(w, plat, 10 ** p[1])),
        "per block": (("start_us", "us per block", "log10 HBM B/s"), (6.0, 0.05, 12.1),
                      lambda w, p: p[0] + p[1] * _blocks(w, plat) + _work_us(w, plat, 10 ** p[2])),
        "overlapped": (("serial_us", "per-core start_us", "log10 HBM B/s"), (2.0, 6.0, 12.1),
                       lambda w, p: p[0] + max(abs(p[1]), _work_us(w, plat, 10 ** p[2]))),
    }  # fmt: skip


def nelder_mead(f, x0, steps: int = 20000) -> list:
    """The minimum of f near x0 (a plain Nelder-Mead: the fits have two or three parameters)."""
    n = len(x0)
    pts = [list(x0)] + [[x + (0.5 if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(steps):
        order = sorted(range(n + 1), key=vals.__getitem__)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] < 1e-14:
            break
        c = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        worst = pts[-1]

        def at(t, c=c, worst=worst):
            return [c[j] + t * (worst[j] - c[j]) for j in range(n)]

        xr = at(-1.0)
        fr = f(xr)
        if fr < vals[0]:
            xe = at(-2.0)
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = at(0.5)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [[pts[0][j] + 0.5 * (p[j] - pts[0][j]) for j in range(n)] for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    return pts[0]


def _log_err(time, cases, p) -> float:
    preds = [time(c["work"], p) for c in cases]
    if min(preds) <= 0:
        return math.inf
    return sum((math.log(t) - math.log(c["measured_us"])) ** 2 for t, c in zip(preds, cases, strict=True))


def scored(cases, prior, time) -> dict:
    """Per bound and set: n, median and largest |error| of `time` (work -> us)."""
    fixed = load_platform("910B", calibrated=True)
    out: dict = {}
    for c in cases:
        key = f"{M.bound(c['work'], prior, fixed.launch_us(fixed.vector_cores))}, "
        key += "held out" if M.held_out(c["case_id"]) else "calibration"
        out.setdefault(key, []).append(abs(time(c["work"]) / c["measured_us"] - 1))
    return {k: (len(v), M.median(sorted(v)), max(v)) for k, v in sorted(out.items())}


def main() -> int:
    prior = load_platform("910B")
    cases, _ = M.check_cases(D.load())
    fit = [c for c in cases if not M.held_out(c["case_id"])]
    cal = load_platform("910B", calibrated=True)
    blocks = {"committed": ("launch_us 8.106, HBM 1.332 TB/s (platforms/calibration)",
                            lambda w: M.predict(w, cal))}  # fmt: skip
    for name, (names, x0, time) in variants(prior).items():
        p = nelder_mead(lambda p, time=time: _log_err(time, fit, p), x0)
        vals = ", ".join(
            f"HBM {10**v / 1e12:.3g} TB/s" if "log10" in n else f"{n} {v:.3g}" for n, v in zip(names, p, strict=True)
        )
        blocks[name] = (vals, lambda w, time=time, p=p: time(w, p))
    for name, (vals, time) in blocks.items():
        print(f"{name}: {vals}")
        for key, (n, med, top) in scored(cases, prior, time).items():
            print(f"  {key} ({n}): median {100 * med:.0f}%, largest {100 * top:.0f}%")
        held = sorted(abs(time(c["work"]) / c["measured_us"] - 1) for c in cases if M.held_out(c["case_id"]))
        med, top = 100 * M.median(held), 100 * held[-1]
        print(f"  every held-out case ({len(held)}): median {med:.0f}%, largest {top:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
