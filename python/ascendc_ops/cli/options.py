"""Options more than one parser takes, each defined here once; a parameter carries what differs between
them (the choices, or what --quick makes smaller in that suite)."""

from __future__ import annotations

from ..harness.bench import ops as bench_ops
from ..harness.cann_bench import data as cann_bench_data, preset as cann_bench_preset
from ..harness.pipeline.estimate import EXAMPLES
from .common import UsageError, op_name, out_path, shape

UNCALIBRATED_HELP = (
    "the 910B model with the platform file's prior launch and HBM values instead of those fitted to the "
    "built-in kernels' measured times (platforms/calibration/; the default everywhere)"
)


def ops(parser, choices) -> None:
    parser.add_argument(
        "--op",
        nargs="+",
        action="extend",
        type=op_name,
        choices=list(choices),
        help="only these ops, by torch name or op type (RmsNorm, RopeCustomer), any case (default: all)",
    )


def shapes(parser, what: str) -> None:
    parser.add_argument("--shape", nargs="+", action="extend", type=shape, metavar="DIMS", help=what)


def dtypes(parser, choices, default: str) -> None:
    parser.add_argument(
        "--dtype", nargs="+", action="extend", choices=list(choices), help=f"only these dtypes (default: {default})"
    )


def providers(parser, choices, what: str = "only these (default: all)") -> None:
    """The training benches' providers (bench attention, bench cross-entropy), each run in its own process."""
    parser.add_argument("--provider", nargs="+", action="extend", choices=list(choices), help=what)


def quick(parser, smaller: str) -> None:
    parser.add_argument("--quick", action="store_true", help=f"a quicker run: {smaller}")


def no_progress(parser) -> None:
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def json_out(parser, what: str) -> None:
    parser.add_argument("--json", type=out_path, metavar="OUT", help=f"write {what} to this JSON file")


def uncalibrated(parser) -> None:
    parser.add_argument("--uncalibrated", action="store_true", help=UNCALIBRATED_HELP)


def cann_bench(parser) -> None:
    """Which of cann-bench's cases run, from which copy of its facts (verify and bench cann-bench)."""
    parser.add_argument(
        "--cann-case",
        nargs="+",
        action="extend",
        metavar="TASK[:ID,...]",
        help="only these tasks / case ids (FIRST-LAST: a range), e.g. rms_norm:1,5 mha:7-18 swi_glu (default: all; "
        "--quick: the cases whose largest tensor holds at most 4 Mi elements)",
    )
    parser.add_argument(
        "--cann-bench-checkout",
        metavar="DIR",
        help="read the cases and times from this checkout of cann-bench (work tree or git dir) instead of our "
        "snapshot (harness/data/cann_bench_910b2.json)",
    )
    uncalibrated(parser)


def cann_bench_facts(args):
    """(facts, case filter) from the cann_bench options: our snapshot or the checkout, and --cann-case."""
    try:
        return cann_bench_data.load(args.cann_bench_checkout), cann_bench_preset.parse_only(args.cann_case)
    except ValueError as e:
        raise UsageError(str(e)) from None


def one_call(parser) -> None:
    """One op call and where its 910B estimate goes (estimate and profile): each takes a single value here."""
    parser.add_argument("op", nargs="?", choices=list(bench_ops.OPS), help="the op (or --example)")
    parser.add_argument(
        "--example",
        choices=list(EXAMPLES),
        help="a template kernel of csrc/kernels/examples/ instead of an op (its fixed shapes)",
    )
    parser.add_argument(
        "--shape",
        type=shape,
        metavar="DIMS",
        help="comma-separated dims (default: the bench's first default shape for the op)",
    )
    parser.add_argument("--dtype", choices=list(bench_ops.DTYPES), default="bfloat16")
    parser.add_argument("--mode", choices=("fwd", "bwd", "full"), default="fwd", help="fwd (default), bwd (dx), full")
    uncalibrated(parser)
    parser.add_argument(
        "--out",
        default="estimate",
        metavar="DIR",
        help="folder for the 910B estimate's trace and PNG timeline (default: ./estimate)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")


def op_or_example(args) -> None:
    """UsageError unless exactly one of OP and --example is given."""
    if (args.op is None) == (args.example is None):
        raise UsageError("give an op or --example NAME (one of them)")
