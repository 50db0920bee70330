"""What every command shares: the parser (one-line errors, exit 2), UsageError, the argument types, suites as
subcommands with the older spelling of a suite kept working, and the call that maps failures to exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import NamedTuple

from ..op_proto import resolve

PROG = "ascendc-ops"


class UsageError(Exception):
    """A bad argument or input file found after parsing: one line, exit 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors; unknown arguments are refused by the (sub)command that got them, so the
    error names it (`ascendc-ops bench moe: error: unrecognized arguments: --rounds`)."""

    older_spelling: Callable[[list], list] | None = None  # rewrites an older argument spelling before parsing

    def parse_known_args(self, args=None, namespace=None):
        if args is not None and self.older_spelling is not None:
            args = self.older_spelling(list(args))
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error("unrecognized arguments: " + " ".join(extras))
        return namespace, extras

    def error(self, message):  # one line and exit code 2, no usage dump, no traceback
        self.exit(2, f"{self.prog}: error: {message}\n")


# ---------------------------------------------------------------- argument types
def shape(text: str) -> tuple:
    try:
        dims = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be comma-separated integers, got {text!r}") from None
    if min(dims) < 1:
        raise argparse.ArgumentTypeError(f"shape dims must be positive, got {text!r}")
    return dims


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def out_path(text: str) -> str:
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"the folder of {text!r} does not exist")
    return text


def op_name(text: str) -> str:
    """--op takes the torch op name or the prototype's op type (RopeCustomer), in any case."""
    return resolve(text) or text  # an unknown name is left for argparse's choices to reject


def in_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


# ---------------------------------------------------------------- suites
class Suite(NamedTuple):
    """A command's subcommand: its own options, so argparse refuses another suite's."""

    name: str
    help: str
    description: str
    add_arguments: Callable
    run: Callable


def add_suites(parser, suites: tuple[Suite, ...], suite_option: str | None = None) -> None:
    """The suites as subcommands of `parser`, the first one the default. The spelling from before they were
    subcommands stays an alias: `COMMAND [OPTIONS]` is the first suite, `--preset cann-bench` the cann-bench
    suite and, when given, `suite_option S` (bench's `--suite moe`) the suite S."""
    sub = parser.add_subparsers(dest="suite", metavar="SUITE", required=True)
    for suite in suites:
        p = sub.add_parser(suite.name, help=suite.help, description=suite.description)
        suite.add_arguments(p)
        p.set_defaults(prog=p.prog)
    names = [s.name for s in suites]
    parser.older_spelling = lambda argv: suite_first(argv, names, suite_option)


def run_suite(suites: tuple[Suite, ...], args) -> int:
    return next(s for s in suites if s.name == args.suite).run(args)


CANN_BENCH = "cann-bench"


def suite_first(argv: list, names: list, suite_option: str | None) -> list:
    """argv with its suite named first: as given, or taken from the older spelling (see add_suites)."""
    if not argv:
        return names[:1]
    if argv[0] in names or argv[0] in ("-h", "--help") or not argv[0].startswith("-"):
        return argv  # a suite (or a word argparse will refuse as one) is named first, or help is asked for
    rest = list(argv)
    for i, word in enumerate(rest):
        if suite_option and word == suite_option and i + 1 < len(rest):
            return [rest[i + 1], *rest[:i], *rest[i + 2 :]]
        if suite_option and word.startswith(suite_option + "="):
            return [word.partition("=")[2], *rest[:i], *rest[i + 1 :]]
    if CANN_BENCH not in names:
        return [names[0], *rest]
    suite, i = names[0], 0
    while i < len(rest):  # every --preset list loses cann-bench (and the option when nothing is left)
        if rest[i] == "--preset=" + CANN_BENCH:
            suite = CANN_BENCH
            del rest[i]
            continue
        if rest[i] == "--preset":
            end = i + 1
            while end < len(rest) and not rest[end].startswith("-"):
                end += 1
            values = rest[i + 1 : end]
            if CANN_BENCH in values:
                suite = CANN_BENCH
                values = [v for v in values if v != CANN_BENCH]
                rest[i:end] = ["--preset", *values] if values else []
                continue
        i += 1
    return [suite, *rest]


# ---------------------------------------------------------------- running a command
def call(args) -> int:
    """Run the parsed command: its exit code, or 2 for a UsageError, 130 when interrupted and 3 for an
    unexpected error, each as one line on stderr."""
    try:
        return args.run(args)
    except UsageError as e:
        print(f"{args.prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback, unless asked for
        if os.environ.get("ASCENDC_OPS_TRACEBACK"):
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(
            f"{args.prog}: internal error: {type(e).__name__}: {msg} (ASCENDC_OPS_TRACEBACK=1 shows the traceback)",
            file=sys.stderr,
        )
        return 3
