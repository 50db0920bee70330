#!/usr/bin/env python3
"""Markdown tables for docs/benchmarks.md from `ascendc-ops bench --csv OUT` files.

    .venv/bin/ascendc-ops bench --csv results.csv          # appends rows; each row carries its environment
    python tools/bench_tables.py results.csv [more.csv ...] > tables.md

One section per run date and machine (the CSV's environment columns: time, cpu, cores, threads, torch,
allocator, ...): a machine line, the method line, then one table row per bench row, with the same columns
as the bench's own printout. Standard library only; the numbers are printed as the CSV holds them, rounded.
"""

from __future__ import annotations

import argparse
import csv
import sys

METHOD = (
    "Method: `ascendc-ops bench` (median of per-call `time.perf_counter_ns` after warm-up, p20-p80 in "
    "brackets; providers interleaved; bwd = dx only). 910B columns are the pipeline model's estimate, "
    "not a measurement."
)

HEAD = (
    "| op | shape | dtype | pass | ours ms (p20-p80) | step-by-step ms | torch.compile ms | copy ms "
    "| ours GB/s | % of copy | 910B est. us | % HBM roofline | vs step | vs compile "
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="CSV files written by `ascendc-ops bench --csv`")
    args = ap.parse_args(argv)
    rows = []
    for path in args.csv:
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    if not rows:
        sys.exit("no rows in " + ", ".join(args.csv))
    sys.stdout.write(tables(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
