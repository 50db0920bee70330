"""`ascendc-ops profile OP`: measured, where the CPU twin's time goes in one op call, per Ascend C API."""

from __future__ import annotations

import json

from ..harness.bench import host_profile
from ..harness.pipeline import estimate
from ..harness.twin_record import host_profiling
from . import options
from .common import UsageError

HELP = "measured: where the CPU twin's time goes in one op call, per Ascend C API"
DESCRIPTION = (
    "Run the op on the CPU twin (its own tiling) and measure where one call's time goes, per Ascend C API, "
    "from the host clock in its instruction record; the bench's explain table is this profile. A measurement "
    "of the twin on this host (`estimate` models an Ascend chip)."
)


def add_arguments(parser) -> None:
    options.one_call(parser)
    parser.add_argument("--no-estimate", action="store_true", help="skip the 910B model's estimate after the profile")


def run(args) -> int:
    options.op_or_example(args)
    if args.example:
        return run_example(args)
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


def run_example(args) -> int:
    """The host profile of one launch of a template kernel and, per core kind, its 910B model."""
    ex = estimate.EXAMPLES[args.example]
    inputs = ex.inputs()
    ex.call(inputs)  # warm
    with host_profiling() as launches:
        ex.call(inputs)
    agg = host_profile.aggregate(launches)
    modelled = (
        None
        if args.no_estimate
        else estimate.estimate_example(args.example, "910B", args.out, calibrated=not args.uncalibrated)
    )
    if args.json:
        apis = [{"op": o, "pipe": p, **v} for (o, p), v in agg["apis"].items()]
        print(json.dumps({**agg, "apis": apis, "estimate": modelled}, indent=1, default=str))
        return 0
    print(
        f"example {args.example} ({ex.kernel_type}: {ex.cores} per launch) on the CPU twin: "
        f"{', '.join(agg['launches'])}, block time {agg['block_ns'] / 1e6:.3f} ms summed over the cores"
    )
    for (op_, pipe), v in sorted(agg["apis"].items(), key=lambda kv: -kv[1]["host_ns"]):
        print(f"  | {op_} | {pipe} | {v['calls']} calls | {v['host_ns'] / 1e6:.3f} ms | GM {v['gm_bytes']} B |")
    if modelled is not None:
        print(
            f"  910B model (an estimate, not a measurement): est {modelled['est_us']:.2f} us, bound "
            f"{modelled['bound']}; trace: {modelled['trace']}"
        )
        print("\n".join(estimate.kinds_text(modelled)))
    return 0
