"""`ascendc-ops estimate OP`: the modelled time of one op call on an Ascend chip (the pipeline model)."""

from __future__ import annotations

import json

from ..harness.pipeline import estimate
from . import options
from .common import UsageError

HELP = "modelled time on an Ascend chip (910B): bound, pipes, trace, timeline"
DESCRIPTION = (
    "Run the op once on the CPU twin with the tiling of the modelled chip, record every instruction, and "
    "estimate its time there with the pipeline model (harness/platforms/*.json): the bound, per-pipe "
    "utilisation, % of the roofline (the least work under the model's L2 rule); writes a Chrome trace "
    "(Perfetto) and, with matplotlib, a PNG timeline. Model estimates, not measurements (`profile` measures the twin)."
)


def add_arguments(parser) -> None:
    options.one_call(parser)
    parser.add_argument("--platform", default="910B", help="a platform file's name or alias: 910B (default), 310P")


def run(args) -> int:
    options.op_or_example(args)
    try:
        if args.example:
            info = estimate.estimate_example(args.example, args.platform, args.out, calibrated=not args.uncalibrated)
        else:
            info = estimate.estimate(
                args.op, args.shape, args.dtype, args.platform, args.mode, args.out, calibrated=not args.uncalibrated
            )
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(json.dumps(info, indent=1, default=str) if args.json else estimate.text(info))
    return 0
