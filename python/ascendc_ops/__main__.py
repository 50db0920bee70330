"""Command line: `python -m ascendc_ops bench [...]` (more subcommands to come)."""
from __future__ import annotations

import argparse
import os
import sys


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, no usage dump, no traceback
        self.exit(2, f"{self.prog}: error: {message}\n")


def _shape(text: str) -> tuple:
    try:
        dims = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be B,H,L,D integers, got {text!r}") from None
    if len(dims) != 4 or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"shape must be 4 positive integers B,H,L,D, got {text!r}")
    if dims[-1] % 2:
        raise argparse.ArgumentTypeError(f"the last dim (head_dim) must be even, got {text!r}")
    return dims


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _bench(args) -> int:
    from . import bench

    cfg = bench.Config(ops=tuple(dict.fromkeys(args.op)), shapes=tuple(dict.fromkeys(args.shape)),
                       dtypes=tuple(dict.fromkeys(args.dtype)), passes=tuple(dict.fromkeys(args.mode)),
                       threads=args.threads or 0, tune_malloc=not args.keep_malloc, csv=args.csv)
    if args.quick:
        cfg.target_s, cfg.min_reps, cfg.warmup = 0.1, 5, 1
    bench.run(cfg)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .bench import DTYPES, OPS, PASSES, SHAPES

    parser = _Parser(prog="python -m ascendc_ops", description="ascendc-ops command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    b = sub.add_parser("bench", help="time our ops against PyTorch step-by-step, torch.compile and copy",
                       description="Time each op against the PyTorch step-by-step code it replaces, "
                                   "torch.compile of that code and a same-size copy; print a Markdown table.")
    b.add_argument("--op", nargs="+", choices=list(OPS), default=list(OPS))
    b.add_argument("--shape", nargs="+", type=_shape, default=list(SHAPES), metavar="B,H,L,D",
                   help="default: 1,32,512,128 1,32,4096,128")
    b.add_argument("--dtype", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    b.add_argument("--mode", nargs="+", choices=list(PASSES), default=list(PASSES))
    b.add_argument("--csv", metavar="OUT", help="append the rows, with environment columns, to this CSV file")
    b.add_argument("--quick", action="store_true", help="fewer repeats (~0.1 s per provider, >= 5)")
    b.add_argument("--threads", type=_positive_int, help="torch threads (default: all cores)")
    b.add_argument("--keep-malloc", action="store_true",
                   help="leave glibc malloc's defaults (shows the page-fault trap on large outputs)")
    b.set_defaults(func=_bench)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    csv_path = getattr(args, "csv", None)
    if csv_path and not os.path.isdir(os.path.dirname(os.path.abspath(csv_path))):
        parser.error(f"the folder of --csv {csv_path!r} does not exist")
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
