"""fused_rope: HF ``apply_rotary_pos_emb`` on ``torch.ops.custom.apply_rotary_pos_emb`` (npu_apply_rotary_pos_emb:
q and k in one launch; 'half' or 'interleave' mode, whichever the probe shows the model's function computes).

HF transformers 5 attention modules call the module global ``apply_rotary_pos_emb(q, k, cos, sin)`` of
their ``modeling_<model>.py``. Rebinding that global would patch every model of that type in the process,
so instead each attention module of the patched model gets its own ``forward``: the class's forward
function re-created over a copy of the module's globals in which ``apply_rotary_pos_emb`` is ours. The
class, the module global and every other model stay untouched; revert deletes the instance attribute.
(The globals copy is taken at apply time: a later rebinding of another global in that modeling module
is not seen by the patched model until it is reverted and patched again.)

q, k are ``(B, N, S, D)`` views, cos/sin ``(B, S, R)`` (B = 1 or the batch: per-sequence position ids);
``unsqueeze_dim=1`` gives the B1SD / 11SD broadcast layouts the op takes, ``unsqueeze_dim=2`` BS1D / 1S1D.
Partial rotary (R < D): the first R dims are rotated, the rest pass through unchanged.

Found by structure: any attention module whose class forward calls its modeling module's
``apply_rotary_pos_emb``, whatever the model type. That function is patched only if it takes
``(q, k, cos, sin, unsqueeze_dim)`` and its probe agrees with ours (``probe.disagreement``; BNSD and BSND,
full and, where the function accepts it, partial rotary): GLM's interleaved pairs or a function doing its own
partial split differently are left with the reason. Another op variant is one more ``Variant`` entry.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable

import torch
from torch import nn

from .._backends import ALL as BACKENDS
from ..ops.rope import apply_rotary_pos_emb as _apply
from . import probe
from .base import Found, Kernel, modeling_module, set_instance_attr

GLOBAL_NAME = "apply_rotary_pos_emb"
SIGNATURE = ("q", "k", "cos", "sin", "unsqueeze_dim")


def _fused(q, k, cos, sin, unsqueeze_dim, mode):
    """(q, k) rotated by custom::apply_rotary_pos_emb, one launch for both, through its functional form
    (fresh outputs: HF's function leaves q and k alone, and a model may still read them)."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    layout = "BNSD" if unsqueeze_dim == 1 else "BSND"
    if layout == "BNSD" and all(x.dim() == 4 and x.transpose(1, 2).is_contiguous() for x in (q, k)):
        # HF's q/k are BNSD views of BSND projections: rotate them as BSND (cos as BS1D), no copy to BNSD
        qo, ko = _apply(q.transpose(1, 2), k.transpose(1, 2), cos.transpose(1, 2), sin.transpose(1, 2), "BSND", mode)
        return qo.transpose(1, 2), ko.transpose(1, 2)
    return _apply(q, k, cos, sin, layout, mode)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Drop-in for HF's ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` on the fused q+k op;
    partial rotary (cos narrower than q): the first dims rotate, the rest pass through."""
    return _fused(q, k, cos, sin, unsqueeze_dim, "half")


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    """The same with the pair rotation ``(-x[2i+1], x[2i])`` (Cohere's and similar ``rotate_half``)."""
    return _fused(q, k, cos, sin, unsqueeze_dim, "interleave")


def _forward_with_global(cls_forward: types.FunctionType, fn_globals: dict) -> types.FunctionType:
    f = types.FunctionType(
        cls_forward.__code__, fn_globals, cls_forward.__name__, cls_forward.__defaults__, cls_forward.__closure__
    )
    f.__kwdefaults__ = cls_forward.__kwdefaults__
    f.__dict__.update(cls_forward.__dict__)
    f.__qualname__ = cls_forward.__qualname__
    f.__doc__ = cls_forward.__doc__
    return f


def _attention_modules(model: nn.Module):
    for name, m in model.named_modules():
        mod = modeling_module(m)
        if mod is None or not callable(getattr(mod, GLOBAL_NAME, None)):
            continue
        fwd = getattr(type(m), "forward", None)
        code = getattr(fwd, "__code__", None)
        if code is not None and GLOBAL_NAME in code.co_names:
            yield name, m, mod, fwd


@dataclasses.dataclass(frozen=True)
class Variant:
    """A rotary formula our op computes: its name (for reports) and the drop-in for ``apply_rotary_pos_emb``."""

    formula: str
    function: Callable  # (q, k, cos, sin, unsqueeze_dim=1) -> (q_rotated, k_rotated)


VARIANTS = (
    Variant("x * cos + rotate_half(x) * sin", apply_rotary_pos_emb),
    Variant("x * cos + rotate_interleave(x) * sin", apply_rotary_pos_emb_interleave),
)


def _probe_inputs(rotary: int, layout_bsnd: bool):
    gen = probe.generator()
    B, N, S, D = 2, 3, 5, 16
    shape = (B, S, N, D) if layout_bsnd else (B, N, S, D)
    q, k = (torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(2))
    pos = torch.arange(S, dtype=torch.float64)[None, :, None] + torch.tensor([0.0, 9.0])[:, None, None]
    freqs = pos * 10000.0 ** (-torch.arange(0, rotary, 2, dtype=torch.float64) / rotary)
    emb = torch.cat((freqs, freqs), dim=-1)  # HF's (B, S, R) layout: the half-split frequencies twice
    return (q, k, emb.cos(), emb.sin(), 2 if layout_bsnd else 1)


def _disagreement(fn: Callable, ours: Callable) -> str | None:
    """Full rotary in both layouts must agree; partial rotary must agree where fn accepts it at all."""
    names = tuple(inspect.signature(fn).parameters)
    if names != SIGNATURE:
        return f"{GLOBAL_NAME}({', '.join(names)}) is not ({', '.join(SIGNATURE)})"
    if inspect.signature(fn).parameters["k"].default is not inspect.Parameter.empty:  # Qwen4-Exp's indexer
        return f"{GLOBAL_NAME}'s k is optional: the model also rotates a tensor alone through it"
    carrier = nn.Module()  # the function has no parameters: an empty part to run it on
    for rotary, bsnd in ((16, False), (16, True), (8, False)):
        args = _probe_inputs(rotary, bsnd)
        why = probe.disagreement(carrier, lambda _, *a: fn(*a), lambda _, *a: ours(*a), args, {})
        if why is not None and rotary < 16 and why.startswith("it fails"):
            continue  # fn rotates every dim only: the model cannot be using partial rotary through it
        if why is not None:
            return f"{'partial' if rotary < 16 else 'full'} rotary, {'BSND' if bsnd else 'BNSD'}: {why}"
    return None


def find(model: nn.Module) -> Found:
    found = Found(looked_for=f"attention module calling {GLOBAL_NAME}")
    globals_copies, verdicts = {}, {}
    for name, m, mod, fwd in _attention_modules(model):
        part = f"{mod.__name__.rsplit('.', 1)[-1]}.{GLOBAL_NAME}"
        if "forward" in m.__dict__:
            found.refused[type(m).__name__] = f"forward already replaced on {name}"
            continue
        fn = getattr(mod, GLOBAL_NAME)
        if id(fn) not in verdicts:
            verdicts[id(fn)] = (None, "")
            for v in VARIANTS:
                why = _disagreement(fn, v.function)
                verdicts[id(fn)] = (v, "") if why is None else (None, why)
                if why is None:
                    break
        variant, why = verdicts[id(fn)]
        if variant is None:
            found.refused[part] = why
            continue
        g = globals_copies.get(id(mod))
        if g is None:
            g = globals_copies[id(mod)] = dict(vars(mod))
            g[GLOBAL_NAME] = variant.function
        found.targets.append((m, _forward_with_global(fwd, g)))
    return found


def patch(model: nn.Module, targets: list) -> list:
    return [set_instance_attr(m, "forward", types.MethodType(fwd, m)) for m, fwd in targets]


KERNEL = Kernel(
    "fused_rope",
    BACKENDS,
    find,
    patch,
    "apply_rotary_pos_emb -> custom::apply_rotary_pos_emb (q and k in one launch; half or interleave mode; "
    "partial rotary, per-sequence positions, GQA)",
    op="apply_rotary_pos_emb",
)
