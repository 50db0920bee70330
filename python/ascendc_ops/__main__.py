"""Command line: `ascendc-ops COMMAND` or `python -m ascendc_ops COMMAND`.

- verify: accuracy of every op against the float64 NumPy goldens (default suite or case files)
- bench:  latency against PyTorch step-by-step, torch.compile and a same-size copy
- info:   build backends, platform parameters of the tiling, library path, versions
- profile: modelled time of one op call on an Ascend chip (pipeline model): bound, pipes, trace

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
    from .harness import verify
    from .harness.cases import CaseError
    from .harness.environment import progress

    try:
        cases = verify.load_cases(args.cases, ops=args.op, dtypes=args.dtype, quick=args.quick)
    except CaseError as e:
        raise UsageError(str(e)) from None
    if not cases:
        raise UsageError("no cases left after the --op/--dtype filters")
    show = progress if sys.stderr.isatty() and not args.no_progress else None
    return verify.run(cases, args.standard, args.json, progress=show)


def _bench(args) -> int:
    from .harness import bench

    cfg = bench.Config(
        ops=tuple(dict.fromkeys(args.op)),
        shapes=tuple(dict.fromkeys(args.shape or ())),
        presets=tuple(dict.fromkeys(args.preset or ())),
        seq=args.seq or 0,
        dtypes=tuple(dict.fromkeys(args.dtype)),
        passes=tuple(dict.fromkeys(args.mode)),
        threads=args.threads or 0,
        tune_malloc=not args.keep_malloc,
        compile=not args.no_compile,
        csv=args.csv,
        plot=args.plot,
        progress=not args.no_progress,
        explain=not args.no_explain,
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


def _profile(args) -> int:
    import json

    from .harness import host_profile, profile

    try:
        if args.host:
            info = host_profile.host_profile(args.op, args.shape, args.dtype, args.mode)
        else:
            info = profile.profile(args.op, args.shape, args.dtype, args.platform, args.mode, args.out)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(json.dumps(info, indent=1, default=str))
    else:
        print(host_profile.text(info) if args.host else profile.text(info))
    return 0


def _info(args) -> int:
    from .harness import info

    return info.main(args.json)


def build_parser() -> argparse.ArgumentParser:
    from .harness import bench, verify

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
        type=_op_name,
        choices=list(verify.OPS),
        help="only these ops, by torch name or op type (RopeCustomer), any case (default: all)",
    )
    v.add_argument("--dtype", nargs="+", choices=list(verify.DTYPES), help="only cases of these dtypes")
    v.add_argument("--cases", nargs="+", type=_in_file, metavar="FILE.json", help="msOpST-style case files")
    v.add_argument(
        "--standard",
        choices=verify.STANDARDS,
        default="auto",
        help="auto (default): the case's error_threshold if any, else mere_mare for fp16/bf16 and "
        "ratio (double benchmark vs PyTorch) for fp32",
    )
    v.add_argument("--json", type=_out_path, metavar="OUT", help="write every result to this JSON file")
    v.add_argument("--quick", action="store_true", help="a smaller default suite (no model shape)")
    v.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    v.set_defaults(func=_verify)

    b = sub.add_parser(
        "bench",
        help="time our ops against PyTorch step-by-step, torch.compile and copy",
        description="Time each op against the PyTorch step-by-step code it replaces, "
        "torch.compile of that code and a same-size copy; print a Markdown table.",
    )
    b.add_argument(
        "--op",
        nargs="+",
        type=_op_name,
        choices=list(bench.OPS),
        default=list(bench.OPS),
        help="these ops, by torch name or op type (RmsNorm), any case (default: all)",
    )
    b.add_argument(
        "--preset",
        nargs="+",
        choices=list(bench.PRESETS),
        help="model shapes (RoPE: q [1, heads, seq, head_dim] and k [1, kv_heads, seq, head_dim]; "
        "RMSNorm: [seq, hidden]; SwiGLU: [seq, 2 x intermediate])",
    )
    b.add_argument("--seq", type=_positive_int, help="sequence length for --preset (default: 4096)")
    b.add_argument(
        "--shape",
        nargs="+",
        type=_shape,
        metavar="DIMS",
        help="comma-separated dims, e.g. 1,32,512,128 (RoPE: B,H,L,D; RMSNorm: rows,hidden; "
        "SwiGLU: T,2I); default without --preset: each op's shapes from its issue",
    )
    b.add_argument("--dtype", nargs="+", choices=list(bench.DTYPES), default=list(bench.DEFAULT_DTYPES))
    b.add_argument(
        "--mode",
        nargs="+",
        choices=list(bench.PASSES),
        default=list(bench.DEFAULT_PASSES),
        help="fwd, bwd (dx only) and/or full (forward with grad + backward); default: fwd bwd",
    )
    b.add_argument(
        "--csv", type=_out_path, metavar="OUT", help="append the rows, with environment columns, to this CSV file"
    )
    b.add_argument("--plot", type=_out_path, metavar="OUT.png", help="draw speedups and %% of copy bandwidth")
    b.add_argument("--quick", action="store_true", help="fewer repeats (~0.1 s per provider, >= 5)")
    b.add_argument("--no-compile", action="store_true", help="skip the torch.compile provider (saves compile time)")
    b.add_argument(
        "--no-explain",
        action="store_true",
        help="skip the table explaining each missed row (one host profile per such row: "
        "its top APIs, vector passes and copy share)",
    )
    b.add_argument("--threads", type=_positive_int, help="torch threads (default: all cores)")
    b.add_argument(
        "--keep-malloc",
        action="store_true",
        help="leave glibc malloc's defaults (shows the page-fault trap on large outputs)",
    )
    b.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    b.set_defaults(func=_bench)

    p = sub.add_parser(
        "profile",
        help="modelled time on an Ascend chip (910B): bound, pipes, trace, timeline",
        description="Run the op once on the CPU twin with the tiling of the modelled chip, record "
        "every instruction, and estimate its time there with the pipeline model "
        "(harness/platforms/*.json): the bound, per-pipe utilisation, % of the HBM "
        "roofline; writes a Chrome trace (Perfetto) and a PNG timeline. Model "
        "estimates, not measurements.",
    )
    p.add_argument("op", choices=list(bench.OPS))
    p.add_argument(
        "--shape",
        type=_shape,
        metavar="DIMS",
        help="comma-separated dims (default: the bench's first default shape for the op)",
    )
    p.add_argument("--dtype", choices=list(bench.DTYPES), default="bfloat16")
    p.add_argument("--platform", default="910B", help="a platform file's name or alias: 910B (default), 310P")
    p.add_argument("--mode", choices=("fwd", "bwd", "full"), default="fwd", help="fwd (default), bwd (dx), full")
    p.add_argument("--out", default="profile", metavar="DIR", help="folder for the trace and PNG (default: ./profile)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    p.add_argument(
        "--host",
        action="store_true",
        help="instead of the model: where the CPU twin's time goes in one call, measured per Ascend C "
        "API from the host clock in its instruction record (the twin's own tiling)",
    )
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
