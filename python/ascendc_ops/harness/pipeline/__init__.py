"""The twin's pipeline model: recorded instruction streams -> modelled time on an Ascend chip.

platform.py (one JSON file per chip) -> timeline.py (one block, pipe by pipe) -> launch.py (blocks
on cores, HBM shared) -> trace.py (Chrome trace). Estimates from a model, not measurements.
"""

from .launch import LaunchModel, OpModel, model_launch, model_launches
from .platform import Platform, is_calibrated, load_platform, model_platform, platform_files
from .timeline import simulate_block

__all__ = [
    "LaunchModel",
    "OpModel",
    "Platform",
    "is_calibrated",
    "load_platform",
    "model_launch",
    "model_launches",
    "model_platform",
    "platform_files",
    "simulate_block",
]
