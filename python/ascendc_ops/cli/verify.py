"""`ascendc-ops verify [ops|cann-bench]`: accuracy against the float64 NumPy goldens, on our cases (the default
suite or case files) or on cann-bench's."""

from __future__ import annotations

import os
import sys

from ..harness.cann_bench import preset as cann_bench_preset, report as cann_bench_report
from ..harness.environment import progress
from ..harness.verify import suite
from ..harness.verify.cases import CaseError
from . import options
from .common import Suite, UsageError, add_suites, in_file, run_suite

HELP = "check accuracy against the float64 NumPy goldens"
DESCRIPTION = (
    "Judge each op's outputs against the float64 NumPy golden. Suites: ops (the default when none is named) "
    "and cann-bench; `ascendc-ops verify SUITE -h` lists a suite's options. Exits 1 when any output fails."
)


def _judging(parser, smaller: str) -> None:
    """What both suites filter and judge by, and where the results go."""
    options.ops(parser, suite.OPS)
    options.dtypes(parser, suite.DTYPES, "all")
    parser.add_argument(
        "--standard",
        choices=suite.STANDARDS,
        default="auto",
        help="auto (default): the case's error_threshold by msOpST's rule if any, else mere_mare for "
        "fp16/bf16 and ratio (double benchmark vs PyTorch) for fp32, with msOpST's default rule on top",
    )
    options.json_out(parser, "every result")
    options.quick(parser, smaller)
    options.no_progress(parser)


def _add_ops(parser) -> None:
    _judging(parser, "a smaller default suite (no model shape)")
    parser.add_argument(
        "--cases", nargs="+", action="extend", type=in_file, metavar="FILE.json", help="msOpST-style case files"
    )


def _add_cann_bench(parser) -> None:
    _judging(parser, "the cases whose largest tensor holds at most 4 Mi elements")
    options.cann_bench(parser)


def _progress(args):
    return progress if sys.stderr.isatty() and not args.no_progress else None


def _run_ops(args) -> int:
    try:
        cases = suite.load_cases(args.cases, ops=args.op, dtypes=args.dtype, quick=args.quick)
    except CaseError as e:
        raise UsageError(str(e)) from None
    if not cases:
        raise UsageError("no cases left after the --op/--dtype filters")
    return suite.run(cases, args.standard, args.json, progress=_progress(args))


def _run_cann_bench(args) -> int:
    facts, only = options.cann_bench_facts(args)
    try:
        cases, skipped = cann_bench_preset.verify_cases(facts, only, args.quick)
    except CaseError as e:
        raise UsageError(str(e)) from None
    cases = [c for c in cases if (not args.op or c.op in args.op) and (not args.dtype or c.dtype in args.dtype)]
    if not cases:
        raise UsageError("no cann-bench cases left after the filters")
    for line in skipped:
        print(f"not run: {line}")
    s = facts["source"]
    print(f"cases: {s['repository']} @ {s['commit']} ({len(cases)} run, {len(skipped)} not run)")
    records: list = []
    rc = suite.run(cases, args.standard, args.json, progress=_progress(args), records=records)
    # the same run as bench reports it: our estimate, the baseline and HAP per case, then the model check
    cann_bench_report.verify_report(facts, cases, records, not args.uncalibrated, sys.stdout)
    return rc


SUITES = (
    Suite(
        "ops",
        "our cases: the default suite or case files",
        "Run the default suite (every op, mode and dtype on odd shapes - head dims 40/80/128, rows 1/7/83, "
        "hidden 1/8/769/5125 - and one model shape per op) or the cases of msOpST-style case files, and judge "
        "each output against the float64 NumPy golden. Exits 1 when any output fails.",
        _add_ops,
        _run_ops,
    ),
    Suite(
        "cann-bench",
        "the cases of hicann/cann-bench's tasks our ops implement (also: --preset cann-bench)",
        "Judge our ops on cann-bench's cases (its shapes, dtypes and value ranges), then report them as "
        "`bench cann-bench` does: our 910B estimate, the built-in's baseline, HAP and the model check. Exits 1 "
        "when any output fails.",
        _add_cann_bench,
        _run_cann_bench,
    ),
)


def add_arguments(parser) -> None:
    add_suites(parser, SUITES)


def run(args) -> int:
    os.environ.setdefault("ASCENDC_TWIN_SANITIZE", "1")  # verify runs the twin sanitizer on every launch
    return run_suite(SUITES, args)
