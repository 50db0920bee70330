"""Command line: `ascendc-ops COMMAND` or `python -m ascendc_ops COMMAND`.

- verify: accuracy of every op against the float64 NumPy goldens (default suite or case files)
- bench:  latency; --suite ops (default): each op against PyTorch step-by-step, torch.compile and a
          same-size copy; --suite moe: the MoE experts block and a Qwen3-MoE step against HF;
          --suite model: a Llama-shaped HF model with and without the kernels
- estimate: modelled time of one op call on an Ascend chip (pipeline model): bound, pipes, trace
- profile: measured: where the CPU twin's time goes in one op call, per Ascend C API
- info:   build backends, platform parameters of the tiling, library path, versions

Exit codes: 0 success; 1 an accuracy case failed (verify); 2 bad arguments or a malformed case
file (one line on stderr, no traceback); 3 an unexpected internal error (one line; set
ASCENDC_OPS_TRACEBACK=1 to see the traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

PROG = "ascendc-ops"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, no usage dump, no traceback
        self.exit(2, f"{self.prog}: error: {message}\n")


class UsageError(Exception):
    """A bad argument or input file found after parsing: one line, exit 2."""


def _shape(text: str) -> tuple:
    try:
        dims = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be comma-separated integers, got {text!r}") from None
    if min(dims) < 1:
        raise argparse.ArgumentTypeError(f"shape dims must be positive, got {text!r}")
    return dims


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _out_path(text: str) -> str:
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist")
    return text


def _op_name(text: str) -> str:
    """--op takes the torch op name or the prototype's op type (RopeCustomer), in any case."""
    from .op_proto import resolve

    return resolve(text) or text  # an unknown name is left for argparse's choices to reject


def _in_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


# ---------------------------------------------------------------- commands
def _verify(args) -> int:
    os.environ.setdefault("ASCENDC_TWIN_SANITIZE", "1")  # verify runs the twin sanitizer on every launch
    from .harness.environment import progress
    from .harness.verify import suite as verify
    from .harness.verify.cases import CaseError

    if args.preset:
        return _verify_cann_bench(args)
    if args.cann_case or args.cann_bench_checkout or args.uncalibrated:
        raise UsageError("--cann-case, --cann-bench-checkout, --uncalibrated: only with --preset cann-bench")
    try:
        cases = verify.load_cases(args.cases, ops=args.op, dtypes=args.dtype, quick=args.quick)
    except CaseError as e:
        raise UsageError(str(e)) from None
    if not cases:
        raise UsageError("no cases left after the --op/--dtype filters")
    show = progress if sys.stderr.isatty() and not args.no_progress else None
    return verify.run(cases, args.standard, args.json, progress=show)


CANN_BENCH = "cann-bench"


def _cann_bench_facts(args):
    """(facts, case filter) of --preset cann-bench: our snapshot, or --cann-bench-checkout read directly."""
    from .harness.cann_bench import data as cann_bench_data, preset as cann_bench

    try:
        return cann_bench_data.load(args.cann_bench_checkout), cann_bench.parse_only(args.cann_case)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _verify_cann_bench(args) -> int:
    from .harness.cann_bench import preset as cann_bench, report as cann_bench_report
    from .harness.environment import progress
    from .harness.verify import suite as verify
    from .harness.verify.cases import CaseError

    if args.cases:
        raise UsageError("--cases and --preset: give one of them")
    facts, only = _cann_bench_facts(args)
    try:
        cases, skipped = cann_bench.verify_cases(facts, only, args.quick)
    except CaseError as e:
        raise UsageError(str(e)) from None
    cases = [c for c in cases if (not args.op or c.op in args.op) and (not args.dtype or c.dtype in args.dtype)]
    if not cases:
        raise UsageError("no cann-bench cases left after the filters")
    for line in skipped:
        print(f"not run: {line}")
    s = facts["source"]
    print(f"cases: {s['repository']} @ {s['commit']} ({len(cases)} run, {len(skipped)} not run)")
    show = progress if sys.stderr.isatty() and not args.no_progress else None
    records: list = []
    rc = verify.run(cases, args.standard, args.json, out=sys.stdout, progress=show, records=records)
    # the same run as bench reports it: our estimate, the baseline and HAP per case, then the model check
    cann_bench_report.verify_report(facts, cases, records, not args.uncalibrated, sys.stdout)
    return rc


def _bench_cann(args) -> int:
    from .harness.cann_bench import report as cann_bench_report
    from .harness.environment import progress

    if args.preset != [CANN_BENCH]:
        raise UsageError("--preset cann-bench: give it alone (not with model presets)")
    given = [k for k, v in BENCH_DEFAULTS.items() if k != "suite" and getattr(args, k) != v]
    other = [k for k in given if k not in CANN_BENCH_OPTIONS]
    if other or args.suite != "ops":
        names = ", ".join("--" + k.replace("_", "-") for k in other) or "--suite " + args.suite
        raise UsageError(f"{names}: not an option of --preset cann-bench")
    facts, only = _cann_bench_facts(args)
    show = progress if sys.stderr.isatty() and not args.no_progress else None
    return cann_bench_report.run_bench(
        facts,
        only,
        args.quick,
        accuracy=not args.no_accuracy,
        json_path=args.json,
        progress=show,
        calibrated=not args.uncalibrated,
    )


# Which bench options each suite takes; a suite's own defaults come from its module.
SUITE_OPTIONS = {
    "ops": {
        "op",
        "preset",
        "seq",
        "shape",
        "dtype",
        "mode",
        "csv",
        "plot",
        "quick",
        "no_compile",
        "no_explain",
        "uncalibrated",
        "threads",
        "keep_malloc",
        "no_progress",
    },
    "moe": {"quick", "case", "dtype", "no_eager", "no_memory", "no_model", "no_gmm"},
    "model": {"quick", "rounds", "no_profile", "steps_only"},
}
CANN_BENCH_OPTIONS = {
    "preset",
    "quick",
    "no_progress",
    "cann_case",
    "cann_bench_checkout",
    "no_accuracy",
    "json",
    "uncalibrated",
}
BENCH_DEFAULTS = {
    "suite": "ops",
    "op": None,
    "preset": None,
    "seq": None,
    "shape": None,
    "dtype": None,
    "mode": None,
    "csv": None,
    "plot": None,
    "quick": False,
    "no_compile": False,
    "no_explain": False,
    "threads": None,
    "keep_malloc": False,
    "no_progress": False,
    "case": None,
    "no_eager": False,
    "no_memory": False,
    "no_model": False,
    "no_gmm": False,
    "rounds": None,
    "no_profile": False,
    "steps_only": False,
    "cann_case": None,
    "cann_bench_checkout": None,
    "no_accuracy": False,
    "json": None,
    "uncalibrated": False,
}


def _bench(args) -> int:
    if args.preset and CANN_BENCH in args.preset:
        return _bench_cann(args)
    given = [k for k, v in BENCH_DEFAULTS.items() if k != "suite" and getattr(args, k) != v]
    other = [k for k in given if k not in SUITE_OPTIONS[args.suite]]
    if other:  # an option of another suite would be silently ignored: say so instead
        names = ", ".join("--" + k.replace("_", "-") for k in other)
        raise UsageError(f"{names}: not an option of --suite {args.suite}")
    return {"ops": _bench_ops, "moe": _bench_moe, "model": _bench_model}[args.suite](args)


def _bench_ops(args) -> int:
    from .harness import plot
    from .harness.bench import ops as bench

    if args.plot and not plot.available():  # before the run, not after it
        raise UsageError(f"--plot needs matplotlib: {plot.INSTALL}")
    cfg = bench.Config(
        ops=tuple(dict.fromkeys(args.op or bench.OPS)),
        shapes=tuple(dict.fromkeys(args.shape or ())),
        presets=tuple(dict.fromkeys(args.preset or ())),
        seq=args.seq or 0,
        dtypes=tuple(dict.fromkeys(args.dtype or bench.DEFAULT_DTYPES)),
        passes=tuple(dict.fromkeys(args.mode or bench.DEFAULT_PASSES)),
        threads=args.threads or 0,
        tune_malloc=not args.keep_malloc,
        compile=not args.no_compile,
        csv=args.csv,
        plot=args.plot,
        progress=not args.no_progress,
        explain=not args.no_explain,
        calibrated=not args.uncalibrated,
    )
    if args.quick:
        cfg.target_s, cfg.min_reps, cfg.warmup = 0.1, 5, 1
    try:
        bench.cases(cfg)
        if cfg.csv:
            bench.check_csv(cfg.csv)
    except ValueError as e:
        raise UsageError(str(e)) from None
    bench.run(cfg)
    return 0


def _bench_moe(args) -> int:
    from .harness.bench import moe as bench_moe

    dtypes = tuple(dict.fromkeys(args.dtype or ()))
    if set(dtypes) - set(bench_moe.DTYPES):
        raise UsageError(f"--suite moe runs in {' and '.join(bench_moe.DTYPES)}, not {', '.join(dtypes)}")
    return bench_moe.run(
        bench_moe.Options(
            quick=args.quick,
            cases=tuple(dict.fromkeys(args.case or ())),
            dtypes=dtypes,
            eager=not args.no_eager,
            memory=not args.no_memory,
            model=not args.no_model,
            gmm=not args.no_gmm,
        )
    )


def _bench_model(args) -> int:
    from .harness.bench import hf_fusions as bench_fusions, hf_model as bench_model

    if not args.steps_only:  # the Llama table, then the Qwen3 / Qwen3-MoE steps by fusion level
        bench_model.run(quick=args.quick, rounds=args.rounds or bench_model.ROUNDS, profile_ops=not args.no_profile)
    return bench_fusions.run(quick=args.quick, rounds=args.rounds or bench_fusions.ROUNDS)


def _estimate(args) -> int:
    import json

    from .harness.pipeline import estimate

    try:
        info = estimate.estimate(
            args.op, args.shape, args.dtype, args.platform, args.mode, args.out, calibrated=not args.uncalibrated
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(json.dumps(info, indent=1, default=str) if args.json else estimate.text(info))
    return 0


def _profile(args) -> int:
    import json

    from .harness.bench import host_profile
    from .harness.pipeline import estimate

    try:
        info = host_profile.host_profile(args.op, args.shape, args.dtype, args.mode)
        # Beside the measurement, the same call as the pipeline model sees it on the 910B (`estimate`).
        modelled = (
            None
            if args.no_estimate
            else estimate.estimate(
                args.op, args.shape, args.dtype, "910B", args.mode, args.out, calibrated=not args.uncalibrated
            )
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps({**info, "estimate": modelled}, indent=1, default=str))
        return 0
    print(host_profile.text(info))
    if modelled is not None:
        print(
            f"  910B model, {'calibrated' if modelled['calibrated'] else 'uncalibrated'} (an estimate, not a "
            "measurement; `ascendc-ops estimate` in full): est "
            f"{modelled['est_us']:.2f} us, bound {modelled['bound']}, {modelled['roofline_pct']:.1f}% of the "
            f"{modelled['roofline']} roofline; trace: {modelled['trace']}"
        )
    return 0


def _info(args) -> int:
    from .harness import info

    return info.main(args.json)


def _one_call_args(parser) -> None:
    """The arguments of one op call, shared by `estimate` and `profile`."""
    from .harness.bench import ops as bench

    parser.add_argument("op", choices=list(bench.OPS))
    parser.add_argument(
        "--shape",
        type=_shape,
        metavar="DIMS",
        help="comma-separated dims (default: the bench's first default shape for the op)",
    )
    parser.add_argument("--dtype", choices=list(bench.DTYPES), default="bfloat16")
    parser.add_argument("--mode", choices=("fwd", "bwd", "full"), default="fwd", help="fwd (default), bwd (dx), full")
    parser.add_argument("--uncalibrated", action="store_true", help=UNCALIBRATED_HELP)


UNCALIBRATED_HELP = (
    "the 910B model with the platform file's prior launch and HBM values instead of those fitted to the "
    "built-in kernels' measured times (platforms/calibration/; the default everywhere)"
)


def _cann_bench_args(parser) -> None:
    parser.add_argument(
        "--cann-case",
        nargs="+",
        action="extend",
        metavar="TASK[:ID,...]",
        help="cann-bench: only these tasks / case ids, e.g. rms_norm:1,5 swi_glu (default: all; --quick: "
        "the cases whose largest tensor holds at most 4 Mi elements)",
    )
    parser.add_argument(
        "--cann-bench-checkout",
        metavar="DIR",
        help="cann-bench: read the cases and times from this checkout (work tree or git dir) instead of our "
        "snapshot (harness/data/cann_bench_910b2.json)",
    )
    parser.add_argument("--uncalibrated", action="store_true", help="cann-bench, ops: " + UNCALIBRATED_HELP)


def build_parser() -> argparse.ArgumentParser:
    from .harness.bench import ops as bench
    from .harness.bench.moe import CASES as MOE_CASES
    from .harness.verify import suite as verify

    parser = _Parser(prog=PROG, description="ascendc-ops: accuracy and latency harness for the Ascend C kernels")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    v = sub.add_parser(
        "verify",
        help="check accuracy against the float64 NumPy goldens",
        description="Run the default suite (every op, mode and dtype on odd shapes - head dims "
        "40/80/128, rows 1/7/83, hidden 1/8/769/5125 - and one model shape per op) or "
        "the cases of msOpST-style case files, and judge each output against the "
        "float64 NumPy golden. Exits 1 when any output fails.",
    )
    v.add_argument(
        "--op",
        nargs="+",
        action="extend",
        type=_op_name,
        choices=list(verify.OPS),
        help="only these ops, by torch name or op type (RopeCustomer), any case (default: all)",
    )
    v.add_argument(
        "--dtype", nargs="+", action="extend", choices=list(verify.DTYPES), help="only cases of these dtypes"
    )
    v.add_argument(
        "--cases", nargs="+", action="extend", type=_in_file, metavar="FILE.json", help="msOpST-style case files"
    )
    v.add_argument(
        "--standard",
        choices=verify.STANDARDS,
        default="auto",
        help="auto (default): the case's error_threshold by msOpST's rule if any, else mere_mare for "
        "fp16/bf16 and ratio (double benchmark vs PyTorch) for fp32, with msOpST's default rule on top",
    )
    v.add_argument("--json", type=_out_path, metavar="OUT", help="write every result to this JSON file")
    v.add_argument("--quick", action="store_true", help="a smaller default suite (no model shape)")
    v.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    v.add_argument(
        "--preset",
        choices=[CANN_BENCH],
        help="cann-bench: the cases of hicann/cann-bench's tasks our ops implement (--quick: the small ones)",
    )
    _cann_bench_args(v)
    v.set_defaults(func=_verify)

    b = sub.add_parser(
        "bench",
        help="time our ops (--suite ops), the MoE block (moe) or a model (model) against PyTorch",
        description="--suite ops (default): time each op against the PyTorch step-by-step code it "
        "replaces, torch.compile of that code and a same-size copy; print a Markdown "
        "table. --suite moe: the MoE experts block against HF transformers' eager loop "
        "and grouped_mm, and a tiny Qwen3-MoE training step. --suite model: a "
        "Llama-shaped HF model's training step and generation with and without the "
        "kernels. Each option names the suites that take it.",
    )
    b.add_argument("--suite", choices=list(SUITE_OPTIONS), default="ops", help="what to time (default: ops)")
    b.add_argument(
        "--quick",
        action="store_true",
        help="all suites: ops: fewer repeats (~0.1 s per provider, >= 5); moe: 256 tokens per block "
        "case, a shorter model sequence; model: smaller shapes (< 1 min)",
    )
    b.add_argument(
        "--dtype",
        nargs="+",
        action="extend",
        choices=list(bench.DTYPES),
        help="ops, moe: these dtypes (default: float32 bfloat16; moe takes no float16)",
    )
    b.add_argument(
        "--op",
        nargs="+",
        action="extend",
        type=_op_name,
        choices=list(bench.OPS),
        help="ops: these ops, by torch name or op type (RmsNorm), any case (default: all)",
    )
    b.add_argument(
        "--preset",
        nargs="+",
        action="extend",
        choices=[*bench.PRESETS, CANN_BENCH],
        help="ops: cann-bench: the cases of hicann/cann-bench's tasks our ops implement, with the built-in "
        "kernels' 910B2 times, our 910B estimates and HAP (docs/benchmarks.md); or model shapes (RoPE: q "
        "[1, heads, seq, head_dim] and k [1, kv_heads, seq, head_dim]; "
        "RMSNorm: [seq, hidden]; SwiGLU: [seq, 2 x intermediate])",
    )
    b.add_argument("--seq", type=_positive_int, help="ops: sequence length for --preset (default: 4096)")
    b.add_argument(
        "--shape",
        nargs="+",
        action="extend",
        type=_shape,
        metavar="DIMS",
        help="ops: comma-separated dims, e.g. 1,32,512,128 (RoPE: B,H,L,D; RMSNorm: rows,hidden; "
        "SwiGLU: T,2I); default without --preset: each op's shapes from its issue",
    )
    b.add_argument(
        "--mode",
        nargs="+",
        action="extend",
        choices=list(bench.PASSES),
        help="ops: fwd, bwd (dx only) and/or full (forward with grad + backward); default: fwd bwd",
    )
    b.add_argument(
        "--csv", type=_out_path, metavar="OUT", help="ops: append the rows, with environment columns, to this CSV file"
    )
    b.add_argument(
        "--plot",
        type=_out_path,
        metavar="OUT.png",
        help="ops: draw speedups and %% of copy bandwidth (needs matplotlib: pip install 'ascendc-ops[plot]')",
    )
    b.add_argument(
        "--no-compile", action="store_true", help="ops: skip the torch.compile provider (saves compile time)"
    )
    b.add_argument(
        "--no-explain",
        action="store_true",
        help="ops: skip the table explaining each missed row (one host profile per such row: "
        "its top APIs, vector passes and copy share)",
    )
    b.add_argument("--threads", type=_positive_int, help="ops: torch threads (default: all cores)")
    b.add_argument(
        "--keep-malloc",
        action="store_true",
        help="ops: leave glibc malloc's defaults (shows the page-fault trap on large outputs)",
    )
    b.add_argument("--no-progress", action="store_true", help="ops: no progress bar on stderr")
    b.add_argument(
        "--case", nargs="+", action="extend", choices=list(MOE_CASES), help="moe: experts block case(s) (default: all)"
    )
    b.add_argument("--no-eager", action="store_true", help="moe: skip HF eager (the slowest: ~9 s per E=64 step)")
    b.add_argument("--no-memory", action="store_true", help="moe: skip the peak memory subprocesses")
    b.add_argument("--no-model", action="store_true", help="moe: skip the Qwen3-MoE training step")
    b.add_argument("--no-gmm", action="store_true", help="moe: skip grouped_matmul vs torch._grouped_mm")
    b.add_argument(
        "--rounds",
        type=_positive_int,
        help="model: subprocess runs per variant, interleaved, the best shown (default: 2)",
    )
    b.add_argument("--no-profile", action="store_true", help="model: skip the per-op profile")
    b.add_argument(
        "--steps-only",
        action="store_true",
        help="model: only the Qwen3 / Qwen3-MoE training steps by fusion level (not the Llama table)",
    )
    b.add_argument("--no-accuracy", action="store_true", help="cann-bench: skip each case's accuracy run on the twin")
    b.add_argument("--json", type=_out_path, metavar="OUT", help="cann-bench: also write the rows as JSON")
    _cann_bench_args(b)
    b.set_defaults(func=_bench)

    e = sub.add_parser(
        "estimate",
        help="modelled time on an Ascend chip (910B): bound, pipes, trace, timeline",
        description="Run the op once on the CPU twin with the tiling of the modelled chip, record "
        "every instruction, and estimate its time there with the pipeline model "
        "(harness/platforms/*.json): the bound, per-pipe utilisation, % of the HBM "
        "roofline; writes a Chrome trace (Perfetto) and, with matplotlib, a PNG "
        "timeline. Model estimates, not measurements (`profile` measures the twin).",
    )
    _one_call_args(e)
    e.add_argument("--platform", default="910B", help="a platform file's name or alias: 910B (default), 310P")
    e.add_argument(
        "--out", default="estimate", metavar="DIR", help="folder for the trace and PNG (default: ./estimate)"
    )
    e.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    e.set_defaults(func=_estimate)

    p = sub.add_parser(
        "profile",
        help="measured: where the CPU twin's time goes in one op call, per Ascend C API",
        description="Run the op on the CPU twin (its own tiling) and measure where one call's time "
        "goes, per Ascend C API, from the host clock in its instruction record; the "
        "bench's explain table is this profile. A measurement of the twin on this "
        "host (`estimate` models an Ascend chip).",
    )
    _one_call_args(p)
    p.add_argument("--no-estimate", action="store_true", help="skip the 910B model's estimate after the profile")
    p.add_argument(
        "--out", default="estimate", metavar="DIR", help="folder for the estimate's trace (default: ./estimate)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    p.set_defaults(func=_profile)

    i = sub.add_parser(
        "info",
        help="backends, platform parameters, library path, versions",
        description="Print the build backends, the platform parameters the tiling uses "
        "(vector cores, UB size and budget), the library path and versions.",
    )
    i.add_argument("--json", type=_out_path, metavar="OUT", help="also write it as JSON")
    i.set_defaults(func=_info)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"{PROG} {args.command}"
    try:
        return args.func(args)
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback, unless asked for
        if os.environ.get("ASCENDC_OPS_TRACEBACK"):
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(
            f"{prog}: internal error: {type(e).__name__}: {msg} (ASCENDC_OPS_TRACEBACK=1 shows the traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
