#!/usr/bin/env python3
"""Markdown tables for docs/benchmarks.md from the files the bench and verify write.

    .venv/bin/ascendc-ops bench --csv results.csv          # appends rows; each row carries its environment
    python tools/bench_tables.py results.csv [more.csv ...] >> docs/benchmarks.md

One section per run date and machine (the CSV's environment columns: time, cpu, cores, threads, torch,
allocator, ...): a machine line, the method line, then one table row per bench row, with the same columns
as the bench's own printout; the numbers as the CSV holds them, rounded (standard library only).

    B=".venv/bin/ascendc-ops bench --preset cann-bench --no-progress --no-accuracy"
    $B --cann-case rms_norm --json a.json; $B --cann-case swi_glu --json b.json     # any split into parts
    .venv/bin/ascendc-ops verify --preset cann-bench --json v.json                  # the accuracy, if wanted
    python tools/bench_tables.py a.json b.json v.json >> docs/benchmarks.md

cann-bench: the runs joined into the preset's own report (cann_bench_report: the table, the summary, each
measured case below 1.0x explained by this tree's rules), a case's estimate from the last bench file holding
it and its accuracy from the last verify file (or bench file run with accuracy) holding it; with
`--accuracy-from EARLIER.md`, the accuracy a verify file does not give is read from the cann-bench table of an
earlier report (when only the model changed), and the summary says so. The "ours" line names each run's
commit, machine and torch as the files record them.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys

METHOD = (
    "Method: `ascendc-ops bench` (median of per-call `time.perf_counter_ns` after warm-up, p20-p80 in "
    "brackets; providers interleaved; bwd = dx only). 910B columns are the pipeline model's estimate, "
    "not a measurement."
)

HEAD = (
    "| op | shape | dtype | pass | ours ms (p20-p80) | step-by-step ms | torch.compile ms | copy ms "
    "| ours GB/s | % of copy | 910B est. us | % of roofline | vs step | vs compile "
    "| peak MB ours/step/compile | target step | target compile | target copy |"
)


def num(v: str) -> float | None:
    return None if v in ("", "None") else float(v)


def ms(r: dict, k: str) -> str:
    med = num(r[f"{k}_median"])
    if med is None:
        return "n/a"
    return f"{med:.3f} ({num(r[f'{k}_p20']):.3f}-{num(r[f'{k}_p80']):.3f})"


def fmt(v: str, spec: str, suffix: str = "") -> str:
    x = num(v)
    return "n/a" if x is None else f"{x:{spec}}{suffix}"


def row(r: dict) -> str:
    shape = r["shape"] + (f" ({r['preset']})" if r.get("preset") else "")
    peak = "/".join(fmt(r[f"{k}_peak_mb"], ".0f") for k in ("ours", "torch", "compile"))
    cells = [
        r["op"],
        shape,
        r["dtype"],
        r["pass"],
        ms(r, "ours"),
        ms(r, "torch"),
        ms(r, "compile"),
        ms(r, "copy"),
        fmt(r["ours_gbs"], ".1f"),
        fmt(r["pct_copy"], ".0f", "%"),
        fmt(r["est_us_910b"], ".1f"),
        fmt(r["roofline_pct_910b"], ".0f", "%"),
        fmt(r["vs_torch"], ".2f", "x"),
        fmt(r["vs_compile"], ".2f", "x"),
        peak,
        r["t_step"],
        r["t_compile"],
        r["t_copy"],
    ]
    return "| " + " | ".join(cells) + " |"


def machine(r: dict) -> str:
    """The machine line. The CSV's `cpu` is the CPU model with torch's CPU capability (the widest ISA level
    torch dispatches to: DEFAULT, AVX2, AVX512, ...) in brackets."""
    model, _, capability = r["cpu"].partition(" (")
    return (
        f"Machine: {model}, {r['cores']} cores ({r['threads']} torch threads), torch CPU capability "
        f"{capability.rstrip(')') or 'unknown'}, ascendc-ops ISA path {r['isa']}; torch {r['torch']}, "
        f"Python {r['python']}, ascendc-ops {r['package']} (commit {r['commit']}); allocator: {r['allocator']}; "
        f"run started {r['time']}; during the run {r['load']}."
    )


def tables(rows: list[dict]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:  # one section per date and machine, in the order the runs appear
        key = (r["time"][:10], r["cpu"], r["cores"], r["isa"], r["threads"], r["torch"], r["allocator"])
        groups.setdefault(key, []).append(r)
    out = []
    for (date, cpu, cores, isa, *_), rs in groups.items():
        out += [
            f"### {date}: {cpu.split(' (')[0]}, {cores} cores, {isa}",
            "",
            machine(rs[0]),
            "",
            METHOD,
            "",
            HEAD,
            "|" + "---|" * (HEAD.count(" | ") + 1),
        ]
        out += [row(r) for r in rs]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- cann-bench: bench and verify JSON joined
def cann_bench_join(docs: list[dict]) -> tuple[list[dict], dict]:
    """(the rows in cann-bench's case order, the runs' provenance) from `bench --preset cann-bench --json`
    and `verify --preset cann-bench --json` documents, later documents winning per case."""
    from ascendc_ops.harness.cann_bench import preset as CB, report as R

    rows, verdicts, runs = {}, {}, []
    for doc in docs:
        if "rows" in doc:  # a bench run
            run = {k: doc.get(k) or "not recorded" for k in ("commit", "machine", "torch")} | {"model": doc["model"]}
            runs.append(run)
            for r in doc["rows"]:
                rows[(r["task"], r["case_id"])] = r | {"run": len(runs) - 1}
        elif "results" in doc:  # a verify run: its records by case
            by_case: dict = {}
            for rec in doc["results"]:
                by_case.setdefault(rec["case"], []).append(rec)
            verdicts.update(by_case)
        else:
            raise ValueError("neither a bench (rows) nor a verify (results) JSON of --preset cann-bench")
    joined = []
    for key, r in rows.items():
        name = CB.case_name(*key)
        if not r["not_run"] and name in verdicts:
            R.judge(r, verdicts[name])
        joined.append(R.score(r) if not r["not_run"] else r)
    order = {(t, c["case_id"]): i for i, (t, c) in enumerate(CB.select(R.D.load()))}
    return sorted(joined, key=lambda r: order.get((r["task"], r["case_id"]), len(order))), {"runs": runs}


def ours_line(rows: list[dict], runs: list[dict]) -> str:
    """The summary's "ours" line for joined runs: the model, then each run's commit, machine and torch with
    the tasks whose estimates it gave."""
    used = sorted({r["run"] for r in rows if "run" in r})
    models = {runs[i]["model"] for i in used}
    parts = []
    for i in used:
        tasks = ", ".join(dict.fromkeys(r["task"] for r in rows if r.get("run") == i))
        run = runs[i]
        parts.append(f"{tasks}: commit {run['commit']}, run on {run['machine']}, torch {run['torch']}")
    return f"ours: pipeline model estimate on {' / '.join(sorted(models))}, not a measurement; " + "; ".join(parts)


ACCURACY_CELLS = {"PASS": True, "FAIL": False}


def accuracy_from_table(text: str) -> dict:
    """{(task, case_id): (passed, passed under the project's default rule)} from an earlier cann-bench report in
    markdown (this tool's or the preset's): each row's accuracy cell, and the summary's "under this project's
    default rule N (fails task id, ...)". For a table whose accuracy stands while the estimates are re-run."""
    head, found, default_fails = None, {}, set()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| task | case |"):
            head = cells
        elif head and line.startswith("| ") and len(cells) == len(head) and cells[1].isdigit():
            acc = cells[head.index("accuracy")]
            if acc in ACCURACY_CELLS:
                found[(cells[0], int(cells[1]))] = ACCURACY_CELLS[acc]
        elif not line.startswith("|"):
            head = None
        m = re.search(r"under this project's default rule \d+ \(fails ([^)]*)\)", line)
        if m:
            default_fails |= {(t, int(i)) for t, i in (f.rsplit(" ", 1) for f in m.group(1).split(", "))}
    if not found:
        raise ValueError("no cann-bench table with an accuracy column (PASS / FAIL cells) in the file")
    return {k: (ok, ok and k not in default_fails) for k, ok in found.items()}


def cann_bench_report(docs: list[dict], accuracy: dict | None = None, accuracy_source: str = "") -> str:
    """The joined report; `accuracy` (accuracy_from_table) gives the rows without a verify verdict theirs, and the
    summary says where it came from."""
    from ascendc_ops.harness.cann_bench import data as D, explain as E, report as R
    from ascendc_ops.harness.pipeline import model_platform

    rows, prov = cann_bench_join(docs)
    carried = 0
    for r in rows:
        key = (r["task"], r["case_id"])
        if accuracy is not None and not r["not_run"] and r.get("accuracy") is None and key in accuracy:
            r["accuracy"], r["default_rule"], r["failures"] = *accuracy[key], []
            R.score(r)
            carried += 1
    facts = D.load()
    calibrated = not any("uncalibrated" in run["model"] for run in prov["runs"])
    plat = model_platform(R.PLATFORM, calibrated)
    err_key = "calibrated_err" if calibrated else "prior_err"
    check = R.check_rows(facts)
    error = E.model_error(check, err_key)
    expl = E.explanations(rows, check, facts, plat, err_key)
    lines = R.summary(rows, facts, ours_line(rows, prov["runs"]), error)
    if carried:
        lines.insert(
            2, f"accuracy of {carried} case(s) carried from {accuracy_source}, not re-run with these estimates"
        )
    out = [R.table(rows, error), "", *(f"- {line}" for line in lines)]
    head, *each = E.lines(expl)
    return "\n".join([*out, "", head, "", *(f"- {line.strip()}" for line in each), ""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="CSV files of `ascendc-ops bench --csv`, or JSON files of `bench/verify --preset cann-bench --json`",
    )
    ap.add_argument(
        "--accuracy-from",
        metavar="MD",
        help="cann-bench: take each case's accuracy, where no verify file gives one, from the cann-bench table in "
        "this markdown file (an earlier report, e.g. `git show COMMIT:docs/benchmarks.md`)",
    )
    args = ap.parse_args(argv)
    if all(p.endswith(".json") for p in args.files):
        docs = []
        for path in args.files:
            with open(path) as f:
                docs.append(json.load(f))
        from ascendc_ops.harness.cann_bench.data import decode

        accuracy = None
        if args.accuracy_from:
            with open(args.accuracy_from) as f:
                accuracy = accuracy_from_table(f.read())
        source = f"the table in {args.accuracy_from}"
        sys.stdout.write(cann_bench_report([decode(d) for d in docs], accuracy, source))
        return 0
    if args.accuracy_from:
        sys.exit("--accuracy-from applies to cann-bench JSON files only")
    if any(p.endswith(".json") for p in args.files):
        sys.exit("give either CSV files (the ops bench) or JSON files (cann-bench), not both")
    rows = []
    for path in args.files:
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    if not rows:
        sys.exit("no rows in " + ", ".join(args.files))
    sys.stdout.write(tables(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
