"""Kernel registry: drop the fused ops into Hugging Face transformers 5 models, one model instance at a time.

    import ascendc_ops.patching as K
    report = K.apply_default_kernels(model)          # every kernel for this model type and backend
    K.apply_kernel("fused_rmsnorm", model)           # one kernel
    K.apply_default_kernels(model, "fused_rope,fused_swiglu")
    K.revert_kernels(model)                          # back to the exact original objects
    K.apply_default_kernels(model, disable_kernels="fused_moe")   # all but one (or ASCENDC_OPS_DISABLE=...)
    K.apply_kernel("fused_linear_cross_entropy", model)  # by id, not in "auto": training loss without logits

Kernels: ``KERNELS``, each declared in ``registry.py`` with what it replaces, found and patched by its family's
module (``rope.py``, ``rms_norm.py``, ...).
No model list: each kernel finds its parts by structure in any model
(transformers 5.x; CI runs requirements.txt's and tools/wheel_check.sh's versions; on 4.x every kernel skips with
that reason) and patches a part only after a probe on a small random input agrees with our op within the fp32
accuracy standard (``probe.py``); parts that look right but disagree (Gemma's (1 + w) norm, GLM's interleaved
RoPE, gelu MLPs) are left and listed in the report with the reason. docs/records/coverage.md (tools/patch_coverage.py)
lists what this gives on every decoder family of the pinned transformers. Backends: cpu-twin, npu.

Switches: each kernel's entry in ``registry.py`` names its LLaMA-Factory id (``alias``, from its kernel plugins'
``KernelPlugin(...)`` ids; ``ALIASES``), accepted wherever an id is taken, and its openMind-style off switch
(``switch``, ``use_fused_rope=False``; ``USE_FLAGS``), a keyword parameter of ``apply_default_kernels``; reports
use our ids. Single fusions are turned off by ``disable_kernels="id1,id2"``, by their switch or, for the whole
process, by the environment variable ``ASCENDC_OPS_DISABLE=id1,id2`` (read at each call); a disabled kernel is
skipped, and the report says which switch turned it off. ``apply.py`` applies and reverts, ``switches.py`` reads
the switches, ``report.py`` says what happened.

Patching only sets instance attributes on the given model's submodules (never a class or module global), so
another model in the process is untouched, and works under ``torch.compile(model, fullgraph=True)``: the ops
are torch.library custom ops with Meta kernels and autograd.
"""

from .apply import applied_kernels, apply_default_kernels, apply_kernel, list_kernels, revert_kernels
from .base import Found, Kernel, KernelSkip
from .registry import ALIASES, KERNELS, USE_FLAGS, canonical_id, register_kernel, unregister_kernel
from .report import KernelReport
from .switches import DISABLE_ENV

__all__ = [
    "ALIASES",
    "DISABLE_ENV",
    "KERNELS",
    "USE_FLAGS",
    "Found",
    "Kernel",
    "KernelReport",
    "KernelSkip",
    "apply_default_kernels",
    "apply_kernel",
    "applied_kernels",
    "canonical_id",
    "list_kernels",
    "register_kernel",
    "revert_kernels",
    "unregister_kernel",
]
