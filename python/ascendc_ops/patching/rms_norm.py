"""fused_rmsnorm: each ``*RMSNorm`` module's forward on ``torch.ops.custom.rms_norm`` (npu_rms_norm).

Covers the decoder norms and Qwen3's ``q_norm`` / ``k_norm`` (over head_dim, on ``(B, S, N, D)``).
The epsilon is the module's own attribute (``variance_epsilon``, or ``eps``), read at every call.

Numerics vs HF: HF rounds ``x * rstd`` to the input dtype before multiplying by the weight; the op multiplies
by the weight in fp32 and rounds once (bit-equal in fp32 up to summation order, <= 1 ulp in bf16). The output
dtype follows HF: ``promote_types(weight.dtype, x.dtype)``.
"""

from __future__ import annotations

import types

import torch
from torch import nn

from .._backends import ALL as BACKENDS
from .base import Kernel, KernelSkip, call_op, model_type, set_instance_attr

MODEL_TYPES = ("llama", "qwen2", "qwen3", "mistral")


def _eps_attr(m: nn.Module) -> str | None:
    for attr in ("variance_epsilon", "eps", "epsilon"):
        if isinstance(getattr(m, attr, None), float):
            return attr
    return None


def rms_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    weight = self.weight
    out_dtype = torch.promote_types(weight.dtype, hidden_states.dtype)
    if hidden_states.dtype == torch.float32 and weight.dtype != torch.float32:
        weight = weight.float()  # (fp32 x, low-precision weight): HF promotes the weight; the op wants fp32/fp32
    y, _ = call_op(torch.ops.custom.rms_norm.default, hidden_states, weight, getattr(self, self._ascendc_eps_attr))
    return y if y.dtype == out_dtype else y.to(out_dtype)


def _is_rms_norm(m: nn.Module) -> bool:
    w = getattr(m, "weight", None)
    return (
        type(m).__name__.endswith("RMSNorm")
        and isinstance(w, nn.Parameter)
        and w.dim() == 1
        and _eps_attr(m) is not None
    )


def apply(model: nn.Module) -> list:
    records = []
    for m in model.modules():
        if not _is_rms_norm(m) or "forward" in m.__dict__:
            continue
        # Gemma-style norms scale by (1 + weight): not this formula; recognise them by their forward's source name.
        if "Gemma" in type(m).__name__:
            continue
        records.append(set_instance_attr(m, "_ascendc_eps_attr", _eps_attr(m)))
        records.append(set_instance_attr(m, "forward", types.MethodType(rms_norm_forward, m)))
    if not records:
        raise KernelSkip(f"no RMSNorm module (weight + variance_epsilon) found in this {model_type(model)} model")
    return records


KERNEL = Kernel(
    "fused_rmsnorm", MODEL_TYPES, BACKENDS, apply, "*RMSNorm.forward -> custom::rms_norm (incl. Qwen3 q_norm/k_norm)"
)
