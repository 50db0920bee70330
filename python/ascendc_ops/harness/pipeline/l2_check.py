"""Are cann-bench's measured times warm in L2? cann-bench (msprof) times 20 runs of the same built-in on the
same tensors, so a launch whose bytes fit the 192 MB L2 could find them resident (pipeline/l2.py). Both
states of the model are fitted as calibration.py fits the committed one (launch, then the effective HBM rate,
on the odd case ids, bounds by its rule under that state's prior) and the state whose fit has the smaller
error on the calibration cases (median |error|, then largest) is the one the model runs in. The held-out
cases are not read by the choice; their error under both states is reported beside it."""

from __future__ import annotations

from . import calibration as M
from .platform import Platform

STATES = {"cold": False, "warm": True}


def state_fit(facts: dict, prior: Platform, warm: bool) -> dict:
    """The model check under one L2 state: its fit, its calibrated platform and its rows."""
    p = prior.with_l2_warm(warm)
    cases, _ = M.check_cases(facts)
    fit = M.calibrate(cases, p)
    cal = p.with_values({k: M.sig(fit[k]["value"]) for k in M.FITTED})
    return {"fit": fit, "platform": cal, "rows": M.rows(facts, p, cal)}


def _abs_errs(rows: list[dict], held: bool) -> tuple[float, float]:
    v = sorted(abs(r["calibrated_err"]) for r in rows if (r["set"] == "held out") == held)
    return M.median(v), v[-1]


def decide(facts: dict, prior: Platform) -> dict:
    """Both states' fits and errors, the chosen state, and the cases whose least work fits the L2 sorted
    into those the warm state fits better (support) and those it fits worse (against)."""
    per = {name: state_fit(facts, prior, warm) for name, warm in STATES.items()}
    calib = {name: _abs_errs(s["rows"], held=False) for name, s in per.items()}
    chosen = min(per, key=lambda n: calib[n])
    by_case = {name: {(r["task"], r["case_id"]): r for r in s["rows"]} for name, s in per.items()}
    cases, _ = M.check_cases(facts)
    support, against = [], []
    for c in cases:
        if c["work"].bytes > prior.l2_bytes:
            continue
        key = (c["task"], c["case_id"])
        cold, warm = (abs(by_case[n][key]["calibrated_err"]) for n in ("cold", "warm"))
        (support if warm < cold else against).append(f"{c['task']}:{c['case_id']}")
    states = {}
    for name, s in per.items():
        held = _abs_errs(s["rows"], held=True)
        states[name] = {
            "launch_us": M.sig(s["fit"]["launch_us"]["value"]),
            "hbm_bytes_per_s": M.sig(s["fit"]["hbm_bytes_per_s"]["value"]),
            "calibration_abs_err_median": M.sig(calib[name][0]),
            "calibration_abs_err_max": M.sig(calib[name][1]),
            "held_out_abs_err_median": M.sig(held[0]),
            "held_out_abs_err_max": M.sig(held[1]),
        }
    return {"chosen": chosen, "warm": STATES[chosen], "states": states, "support": support, "against": against,
            "hbm_cases": {n: s["fit"]["hbm_bytes_per_s"]["cases"] for n, s in per.items()}}  # fmt: skip


def lines(evidence: dict) -> list[str]:
    """The decision as the model check prints it."""
    out = [f"L2 across launches: {evidence['chosen']} (the state with the smaller error on the calibration cases)"]
    for name, s in evidence["states"].items():
        out.append(
            f"  {name}: launch {s['launch_us']:.3f} us, HBM {s['hbm_bytes_per_s'] / 1e12:.3f} TB/s "
            f"(fitted on {', '.join(evidence['hbm_cases'][name]) or 'none'}); calibration |error| median "
            f"{100 * s['calibration_abs_err_median']:.0f}%, largest {100 * s['calibration_abs_err_max']:.0f}%; "
            f"held out {100 * s['held_out_abs_err_median']:.0f}%, {100 * s['held_out_abs_err_max']:.0f}%"
        )
    n = len(evidence["support"]) + len(evidence["against"])
    out.append(
        f"  of the {n} cases whose bytes fit the L2, warm fits better: {', '.join(evidence['support']) or 'none'}"
    )
    return out
