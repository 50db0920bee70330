"""Command line: `ascendc-ops COMMAND` or `python -m ascendc_ops COMMAND`; each command is a module of
ascendc_ops.cli that owns its parser (`add_arguments`) and its run (`run`), registered here.

- verify: accuracy of every op against the float64 NumPy goldens (suites: ops, cann-bench)
- bench:  latency (suites: ops, moe, model, attention, cann-bench)
- estimate: modelled time of one op call on an Ascend chip (pipeline model): bound, pipes, trace
- profile: measured: where the CPU twin's time goes in one op call, per Ascend C API
- info:   build backends, platform parameters of the tiling, library path, versions

Exit codes: 0 success; 1 an accuracy case failed (verify); 2 bad arguments or a malformed case
file (one line on stderr, no traceback); 3 an unexpected internal error (one line; set
ASCENDC_OPS_TRACEBACK=1 to see the traceback); 130 interrupted.
"""

from __future__ import annotations

import sys

from .cli import bench, estimate, info, profile, verify
from .cli.common import PROG, Parser, call

COMMANDS = (verify, bench, estimate, profile, info)


def build_parser() -> Parser:
    parser = Parser(prog=PROG, description="ascendc-ops: accuracy and latency harness for the Ascend C kernels")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.__name__.rpartition(".")[2], help=command.HELP, description=command.DESCRIPTION)
        command.add_arguments(p)
        p.set_defaults(run=command.run, prog=p.prog)
    return parser


def main(argv=None) -> int:
    return call(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
