"""The kernel registry: each kernel declared once -- its id, the custom op(s) that show it ran, LLaMA-Factory's id
for it (``alias``) and its ``use_fused_*`` off switch -- next to the family module that finds and patches its parts.

Everything else that names kernels derives from ``KERNELS``: the alias table (``ALIASES``), the switch table
(``USE_FLAGS``) and the keyword parameters of the functions that take the switches (``takes_switches``:
``apply_default_kernels``). ``register_kernel`` keeps all of them current for a kernel added at run time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .._backends import ALL as BACKENDS
from . import add_rms_norm, attention, gated_rms_norm, linear_cross_entropy, moe, rms_norm, rope, swiglu
from .base import Kernel

KERNELS: dict[str, Kernel] = {}
# LLaMA-Factory's kernel ids (src/llamafactory/v1/plugins/model_plugins/kernels/ops/*: KernelPlugin("npu_fused_...")
# and its _AUTO_KERNELS) -> ours. Accepted wherever a kernel id is; reports and applied_kernels use ours.
ALIASES: dict[str, str] = {}
# openMind-style per-fusion switches (``use_fused_rope=False`` turns fused_rope off) -> our ids.
USE_FLAGS: dict[str, str] = {}
# function -> its signature as written (``**switches`` last), re-derived on every registry change
_SWITCH_TAKERS: dict[Callable, inspect.Signature] = {}


def takes_switches(fn: Callable) -> Callable:
    """Decorator for ``fn(..., **switches)``: its signature (``inspect.signature``, help(), IDEs reading it) shows
    one keyword-only ``<switch>: bool | None = None`` per registered kernel in place of ``**switches``."""
    _SWITCH_TAKERS[fn] = inspect.signature(fn)
    _sign(fn)
    return fn


def _sign(fn: Callable) -> None:
    written = _SWITCH_TAKERS[fn]
    params = [p for p in written.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    params += [
        inspect.Parameter(s, inspect.Parameter.KEYWORD_ONLY, default=None, annotation="bool | None") for s in USE_FLAGS
    ]
    fn.__signature__ = written.replace(parameters=params)


def register_kernel(kernel: Kernel, *, replace: bool = False) -> Kernel:
    """Add a kernel (or, with ``replace``, a new version of one) with its alias and switch."""
    if kernel.id in KERNELS and not replace:
        raise ValueError(f"kernel {kernel.id!r} is already registered")
    for table, name in ((ALIASES, kernel.alias), (USE_FLAGS, kernel.switch)):
        if name and table.get(name, kernel.id) != kernel.id:
            raise ValueError(f"{name!r} already names kernel {table[name]!r}")
    # a name that is an id and an alias would resolve to two kernels
    clash = kernel.alias if kernel.alias in KERNELS else kernel.id if kernel.id in ALIASES else ""
    if clash:
        raise ValueError(f"{clash!r} is both an id and an alias")
    old = KERNELS.get(kernel.id)
    if old is not None:
        ALIASES.pop(old.alias, None)
        USE_FLAGS.pop(old.switch, None)
    KERNELS[kernel.id] = kernel
    if kernel.alias:
        ALIASES[kernel.alias] = kernel.id
    if kernel.switch:
        USE_FLAGS[kernel.switch] = kernel.id
    for fn in _SWITCH_TAKERS:
        _sign(fn)
    return kernel


def unregister_kernel(kernel_id: str) -> Kernel:
    """Remove a kernel with its alias and switch (our id or its alias); returns it."""
    kernel = KERNELS.pop(canonical_id(kernel_id))
    ALIASES.pop(kernel.alias, None)
    USE_FLAGS.pop(kernel.switch, None)
    for fn in _SWITCH_TAKERS:
        _sign(fn)
    return kernel


def canonical_id(kernel_id: str) -> str:
    """Our id for a kernel id or an alias (LLaMA-Factory's ``npu_fused_*``); ValueError for an unknown one."""
    kernel_id = ALIASES.get(kernel_id, kernel_id)
    if kernel_id not in KERNELS:
        aliases = ", ".join(f"{a} -> {k}" for a, k in ALIASES.items())
        raise ValueError(f"unknown kernel id {kernel_id!r}; available: {', '.join(KERNELS)} (aliases: {aliases})")
    return kernel_id


# "auto" applies them, and reports list them, in this order
for _kernel in (
    Kernel(
        "fused_rope",
        BACKENDS,
        rope.find,
        rope.patch,
        "apply_rotary_pos_emb(_interleave) -> custom::apply_rotary_pos_emb (q and k in one launch; half or "
        "interleave mode; partial rotary, per-sequence positions, GQA)",
        op="apply_rotary_pos_emb",
        variant_ops=("rotary_mul",),  # the single-tensor functions'
        alias="npu_fused_rope",
        switch="use_fused_rope",
    ),
    Kernel(
        "fused_rmsnorm",
        BACKENDS,
        rms_norm.find,
        rms_norm.patch,
        "RMSNorm-like modules' forward -> custom::rms_norm (incl. q_norm/k_norm), "
        "(1 + w) norms -> custom::gemma_rms_norm",
        op="rms_norm",
        variant_ops=("gemma_rms_norm",),
        alias="npu_fused_rmsnorm",
        switch="use_fused_rms_norm",
    ),
    Kernel(
        "fused_swiglu",
        BACKENDS,
        swiglu.find,
        swiglu.patch,
        "gated MLPs silu(gate)*up (separate or fused gate_up) -> custom::swiglu",
        op="swiglu",
        alias="npu_fused_swiglu",
        switch="use_fused_swiglu",
    ),
    Kernel(
        "fused_moe",
        BACKENDS,
        moe.find,
        moe.patch,
        f"experts -> ALL_EXPERTS_FUNCTIONS[{moe.EXPERTS_IMPL!r}]: permute, grouped_matmul, swiglu, unpermute",
        op="grouped_matmul",
        alias="npu_fused_moe",
        switch="use_fused_moe",
    ),
    Kernel(
        "fused_add_rmsnorm",
        BACKENDS,
        add_rms_norm.find,
        add_rms_norm.patch,
        "decoder layers' residual add + RMSNorm (h = r + h; r = h; h = norm(h)) -> custom::add_rms_norm",
        op="add_rms_norm",
        switch="use_fused_add_rms_norm",  # ours: openMind has no such switch, LLaMA-Factory no such kernel
    ),
    Kernel(
        "fused_gated_rmsnorm",
        BACKENDS,
        gated_rms_norm.find,
        gated_rms_norm.patch,
        "gated RMSNorm modules norm(x) * silu(gate) -> custom::gated_rms_norm (training: once the op has a backward)",
        op="gated_rms_norm",
        switch="use_fused_gated_rms_norm",  # ours too
    ),
    Kernel(
        "fused_attention",
        BACKENDS,
        attention.find,
        attention.patch,
        f"attention layers -> ALL_ATTENTION_FUNCTIONS[{attention.ATTN_IMPL!r}]: custom::fusion_attention (causal, "
        "padding, sliding-window and packed masks, GQA; gradients through fusion_attention_grad; by id, not in 'auto')",
        op="fusion_attention",
        switch="use_fused_attention",
        auto=False,  # it swaps the model's attention implementation: asked for by id
        routed=attention.routed_modules,
    ),
    Kernel(
        "fused_linear_cross_entropy",
        BACKENDS,
        linear_cross_entropy.find,
        linear_cross_entropy.patch,
        "causal LMs' lm_head + loss_function (ForCausalLMLoss; logit scale, softcap) -> custom::linear_cross_entropy "
        "when training on labels, no [tokens, vocab] logits (logits None; by id, not in 'auto')",
        op="linear_cross_entropy",
        switch="use_fused_linear_cross_entropy",  # LLaMA-Factory has no such kernel id (only Liger's "flce" option)
        auto=False,  # it drops a training forward's logits, which some trainers read: asked for by id
        routed=linear_cross_entropy.patched_models,
    ),
):
    register_kernel(_kernel)
