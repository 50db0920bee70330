"""`ascendc-ops profile OP`: measured, where the CPU twin's time goes in one op call, per Ascend C API."""

from __future__ import annotations

import json

from ..harness.bench import host_profile
from ..harness.pipeline import estimate
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
