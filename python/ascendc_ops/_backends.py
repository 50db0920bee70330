"""The backend names, as the compiled library spells them (csrc/torch/backend_names.h): the only Python
source of ``"cpu-twin"`` / ``"npu"``, so patching, the harness and ``backends()`` can never disagree."""

import torch

# ascendc_ops/__init__.py has loaded the library before any submodule is imported
CPU_TWIN, NPU = torch.ops.ascendc_ops.backend_names()
ALL = (CPU_TWIN, NPU)


def for_device(device: torch.device) -> str:
    """The backend that runs the kernels on tensors of ``device``: CPU -> cpu-twin, PrivateUse1 -> npu."""
    if device.type == "cpu":
        return CPU_TWIN
    if device.type == torch._C._get_privateuse1_backend_name():
        return NPU
    return device.type
