"""The pieces every kernel module shares: the Kernel record, per-instance patch bookkeeping, model lookups.

Patching is per model instance. A kernel never edits a class or a module global: it sets an instance
attribute (``module.forward``) on the submodules of one model, and records what was there before, so
``revert_kernels`` can put back exactly the original objects (or remove the attribute when there was none).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
from collections.abc import Callable

import torch
from torch import nn

from .._backends import for_device

# The attribute on the patched model that holds its patch records: {kernel_id: [PatchRecord, ...]}.
STATE_ATTR = "_ascendc_kernels"
_MISSING = object()


class KernelSkip(Exception):
    """Raised by a kernel's apply function when it cannot (or need not) patch this model; the message says why."""


@dataclasses.dataclass
class Found:
    """What a kernel's ``find`` saw in one model: the parts it will patch (``targets``, whatever its ``patch``
    takes), the parts that looked right but were left alone ({part: why}, e.g. a norm whose probe disagreed),
    and, when there is nothing of the kind at all, what it looked for."""

    targets: list = dataclasses.field(default_factory=list)
    refused: dict[str, str] = dataclasses.field(default_factory=dict)
    looked_for: str = ""

    def skip_reason(self, model: nn.Module) -> str:
        if self.refused:
            return "; ".join(f"{part}: {why}" for part, why in self.refused.items())
        return f"no {self.looked_for} found in this {model_type(model)} model"


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One registry entry (``registry.py`` declares them): an id, the backends it runs on, how it finds its parts
    and patches them, and the names users switch it by.

    ``find(model) -> Found`` looks for the parts by structure (attributes, signatures) and keeps those whose
    probe (``probe.disagreement``) agrees with our op; ``patch(model, targets) -> list[PatchRecord]`` patches
    the instance and returns what it changed, or raises ``KernelSkip(reason)``. Backends are names from
    ``ascendc_ops.backends()`` (``ascendc_ops._backends``: CPU_TWIN, NPU). ``alias``: LLaMA-Factory's id for
    the same kernel, accepted wherever an id is; ``switch``: the keyword ``apply_default_kernels`` takes to turn
    it off (``use_fused_<op>=False``, openMind's spelling where it has one).
    """

    id: str
    backends: tuple[str, ...]
    find: Callable[[nn.Module], Found]
    patch: Callable[[nn.Module, list], list]
    description: str = ""
    op: str = ""  # the custom op (torch.ops.custom.<op>) whose forward call shows the kernel ran
    variant_ops: tuple[str, ...] = ()  # further ops it may call instead (a variant's: gemma_rms_norm)
    alias: str = ""
    switch: str = ""
    auto: bool = True  # applied by include_kernels="auto" (False: only when asked for by id)
    # how many modules run on it once applied, for kernels that patch a config setting rather than forwards
    routed: Callable[[nn.Module], int] | None = None


@dataclasses.dataclass
class PatchRecord:
    """One instance attribute we set: where, which name, and the value it had (``_MISSING`` = none)."""

    owner: object
    name: str
    old: object

    def revert(self) -> None:
        if self.old is _MISSING:
            # Only remove what we put there (leave a later, foreign patch alone? no: revert means "as before us").
            self.owner.__dict__.pop(self.name, None)
        else:
            setattr(self.owner, self.name, self.old)


def call_op(op: torch._ops.OpOverload, *args):
    """``op(*args)``, entering below the autograd layer when grad mode is off (generation, ``no_grad``).

    The ops' autograd kernel is Python (``torch.library.register_autograd``): with grad off it only
    re-dispatches below autograd, after ~10 us of Python per call, about a decode step's whole op. Doing
    that re-dispatch here gives the same result (no graph either way) and runs the same C++ checks. Under
    ``torch.compile`` the plain call is traced, as before.
    """
    if torch.is_grad_enabled() or torch.compiler.is_compiling():
        return op(*args)
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args)


def set_instance_attr(owner: object, name: str, value: object) -> PatchRecord:
    """Set ``owner.name = value`` as an instance attribute, returning the record that undoes it."""
    record = PatchRecord(owner, name, owner.__dict__.get(name, _MISSING))
    # nn.Module.__setattr__ would route Parameters/Modules elsewhere; forwards are plain callables.
    object.__setattr__(owner, name, value)
    return record


def transformers_version() -> str | None:
    """The installed transformers' version (its distribution's: the module object can be swapped at run time)."""
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return None


def transformers_unsupported() -> str | None:
    """Why the installed transformers cannot be patched (None: it can). The kernels patch transformers 5's
    modeling code; 4.x (which LLaMA-Factory still allows) wraps the attention forwards in decorators, so RoPE
    finds no call to replace, and has no experts interface: every kernel skips there rather than half-apply.
    Without transformers no model is a transformers model, and the model-type check says so."""
    version = transformers_version()
    if version is not None and int(version.split(".")[0]) < 5:
        return (
            f"transformers {version} is installed; ascendc_ops patches transformers 5 models only "
            "(the model is left as it is)"
        )
    return None


def model_type(model: nn.Module) -> str | None:
    config = getattr(model, "config", None)
    return getattr(config, "model_type", None)


def model_config(model: nn.Module):
    config = getattr(model, "config", None)
    return getattr(config, "get_text_config", lambda: config)() if config is not None else None


def model_backend(model: nn.Module) -> str:
    """The backend this model's parameters live on: CPU_TWIN for CPU, NPU for PrivateUse1, else the device type."""
    try:
        device = next(model.parameters()).device
    except StopIteration:
        device = torch.device("cpu")
    return for_device(device)


def modeling_module(obj: object):
    """The Python module (e.g. transformers.models.llama.modeling_llama) that defines obj's class."""
    return sys.modules.get(type(obj).__module__)
