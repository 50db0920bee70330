"""fused_rope: HF ``apply_rotary_pos_emb`` on ``torch.ops.custom.rotary_mul`` (npu_rotary_mul, 'half' mode).

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
"""

from __future__ import annotations

import types

import torch
from torch import nn

from .._backends import ALL as BACKENDS
from .base import Kernel, KernelSkip, call_op, model_type, modeling_module, set_instance_attr

GLOBAL_NAME = "apply_rotary_pos_emb"
MODEL_TYPES = ("llama", "qwen2", "qwen3", "mistral")


def _rotary_mul(x, cos, sin):
    return call_op(torch.ops.custom.rotary_mul.default, x, cos, sin, "half")


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    rot = cos.shape[-1]
    if rot == x.shape[-1]:
        if x.dim() == 4 and not x.is_contiguous() and x.transpose(1, 2).is_contiguous():
            # HF's q/k are BNSD views of BSND projections: rotate them as BSND (cos as BS1D), no copy
            return _rotary_mul(x.transpose(1, 2), cos.transpose(1, 2), sin.transpose(1, 2)).transpose(1, 2)
        return _rotary_mul(x, cos, sin)
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    return torch.cat((_rotary_mul(x_rot, cos, sin), x_pass), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Drop-in for HF's ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` on the fused op."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


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


def apply(model: nn.Module) -> list:
    records, globals_copies, foreign = [], {}, []
    for name, m, mod, fwd in _attention_modules(model):
        if "forward" in m.__dict__:
            foreign.append(name)
            continue
        g = globals_copies.get(id(mod))
        if g is None:
            g = globals_copies[id(mod)] = dict(vars(mod))
            g[GLOBAL_NAME] = apply_rotary_pos_emb
        records.append(set_instance_attr(m, "forward", types.MethodType(_forward_with_global(fwd, g), m)))
    if not records:
        why = f" (forward already replaced on {foreign})" if foreign else ""
        raise KernelSkip(f"no attention module calling {GLOBAL_NAME} found in this {model_type(model)} model{why}")
    return records


KERNEL = Kernel(
    "fused_rope",
    MODEL_TYPES,
    BACKENDS,
    apply,
    "apply_rotary_pos_emb -> custom::rotary_mul (half mode; partial rotary, per-sequence positions)",
)
