"""`ascendc-ops info`: what this build is: backends, platform parameters of the tiling, library, versions."""

from __future__ import annotations

from ..harness import info
from . import options

HELP = "backends, platform parameters, library path, versions"
DESCRIPTION = (
    "Print the build backends, the platform parameters the tiling uses (vector cores, UB size and budget), "
    "the library path and versions."
)


def add_arguments(parser) -> None:
    options.json_out(parser, "the same report as well")


def run(args) -> int:
    return info.main(args.json)
