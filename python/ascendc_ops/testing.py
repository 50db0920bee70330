"""Test support: the simulated NPU (csrc/sim_npu, README "The simulated NPU").

``simulated_npu()`` loads build/sim_npu/_sim_npu_<isa path>.so (the one linked to the loaded _C*.so) into this
process and names torch's PrivateUse1 device "npu", as torch_npu does. Tensors on "npu" then live in host memory,
and the custom ops on them run the real PrivateUse1 launchers of csrc/torch/npu, whose ACL launch runs the twin
kernel.
Irreversible for the process (torch allows one PrivateUse1 name); ``import ascendc_ops`` never calls it.
Call it before the process's first backward: torch's autograd engine sizes its per-device queues then,
and a device added later fails its first backward with an internal assert (engine.cpp device_ready_queues_).
"""

from __future__ import annotations

import os
import types
from pathlib import Path

import torch

NAME = "npu"
# build/ of the source tree this package is installed (editable) from; ASCENDC_OPS_SIM_NPU overrides
SIM_DIR = Path(__file__).resolve().parents[2] / "build" / "sim_npu"


def library() -> Path:
    """The simulator for the ISA path in use: it links that path's library, which is already loaded."""
    from ._library import isa

    return Path(os.environ.get("ASCENDC_OPS_SIM_NPU") or SIM_DIR / f"_sim_npu_{isa()}.so")


_loaded: Path | None = None


def _device_module() -> types.ModuleType:
    """torch.npu for the simulated device: the few queries torch's generated methods make (one device)."""
    module = types.ModuleType("torch.npu", "the simulated NPU (ascendc_ops.testing)")
    module.is_available = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    module.synchronize = lambda device=None: None  # launches run synchronously
    module._is_in_bad_fork = lambda: False
    module.manual_seed_all = lambda seed: None  # random ops fall back to the CPU generator
    return module


def simulated_npu() -> Path:
    """Makes "npu" a torch device backed by the simulated NPU (once per process); returns the library path."""
    global _loaded
    if _loaded is not None:
        return _loaded
    import ascendc_ops  # noqa: F401  (_C first: the simulator links its Prepare* functions)

    path = library()
    if not path.exists():
        raise RuntimeError(
            f"the simulated NPU library {path} is not built; run ./build.sh "
            "(cmake/sim_npu.cmake builds it unless ASCENDC_OPS_SIM_NPU=OFF or CANN is present)"
        )
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", NAME):
        raise RuntimeError(
            f"PrivateUse1 is already named {current!r} in this process; the simulated NPU needs {NAME!r}"
        )
    torch.ops.load_library(str(path))
    if current != NAME:
        torch.utils.rename_privateuse1_backend(NAME)
        torch._register_device_module(NAME, _device_module())
        torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    _loaded = path
    return path


def launch_count(kernel: str) -> int:
    """How many times the simulated ACL launch ran ``kernel`` (e.g. "swiglu_float") in this process."""
    return int(torch.ops.sim_npu.launch_count(kernel))
