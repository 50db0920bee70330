"""torch_npu's names and signatures on our kernels, so code written for torch_npu runs unchanged:

    import ascendc_ops.npu as torch_npu                  # or, before the caller imports it:
    sys.modules["torch_npu"] = ascendc_ops.npu

Signatures follow Ascend/op-plugin's op_plugin_functions.yaml (torchgen names the ``self`` argument
``input`` in Python, as torch_npu does). Every function runs our ``torch.ops.custom`` kernels and is
differentiable through their autograd (torch_npu's ``npu_add_rms_norm`` and ``npu_grouped_matmul`` are not).
One module per op family key (rope, rms_norm, swiglu, grouped_matmul, moe_routing, attention, cross_entropy,
optimizer; torch_npu's optim subpackage is optim.py), each
importing only the ops it wraps and ``errors``; this face re-exports them. Provided: ``PROVIDED``. Any other
``torch_npu`` attribute (``npu_format_cast``, the ``torch_npu.npu`` device module, quantized variants, ...)
raises AttributeError naming what exists, so ``hasattr(torch_npu, name)`` probes answer honestly.
"""

from __future__ import annotations

from . import optim as optim
from .attention import (
    npu_fusion_attention as npu_fusion_attention,
    npu_fusion_attention_grad as npu_fusion_attention_grad,
    npu_fusion_attention_grad_v2 as npu_fusion_attention_grad_v2,
    npu_fusion_attention_grad_v3 as npu_fusion_attention_grad_v3,
    npu_fusion_attention_v2 as npu_fusion_attention_v2,
    npu_fusion_attention_v3 as npu_fusion_attention_v3,
)
from .cross_entropy import (
    npu_cross_entropy_loss as npu_cross_entropy_loss,
    npu_cross_entropy_loss_backward as npu_cross_entropy_loss_backward,
)
from .grouped_matmul import npu_grouped_matmul as npu_grouped_matmul
from .moe_routing import (
    npu_moe_token_permute as npu_moe_token_permute,
    npu_moe_token_unpermute as npu_moe_token_unpermute,
    npu_moe_token_unpermute_grad as npu_moe_token_unpermute_grad,
)
from .optimizer import npu_apply_adam_w as npu_apply_adam_w
from .rms_norm import (
    npu_add_rms_norm as npu_add_rms_norm,
    npu_gemma_rms_norm as npu_gemma_rms_norm,
    npu_rms_norm as npu_rms_norm,
    npu_rms_norm_backward as npu_rms_norm_backward,
)
from .rope import (
    npu_apply_rotary_pos_emb as npu_apply_rotary_pos_emb,
    npu_rotary_mul as npu_rotary_mul,
    npu_rotary_mul_backward as npu_rotary_mul_backward,
)
from .swiglu import npu_swiglu as npu_swiglu, npu_swiglu_backward as npu_swiglu_backward

PROVIDED = (
    "npu_rotary_mul",
    "npu_rotary_mul_backward",
    "npu_apply_rotary_pos_emb",
    "npu_rms_norm",
    "npu_rms_norm_backward",
    "npu_add_rms_norm",
    "npu_swiglu",
    "npu_swiglu_backward",
    "npu_grouped_matmul",
    "npu_moe_token_permute",
    "npu_moe_token_unpermute",
    "npu_moe_token_unpermute_grad",
    "npu_gemma_rms_norm",
    "npu_fusion_attention",
    "npu_fusion_attention_grad",
    "npu_fusion_attention_v2",
    "npu_fusion_attention_grad_v2",
    "npu_fusion_attention_v3",
    "npu_fusion_attention_grad_v3",
    "npu_cross_entropy_loss",
    "npu_cross_entropy_loss_backward",
    "npu_apply_adam_w",
    "optim",
)
__all__ = list(PROVIDED)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"ascendc_ops.npu (standing in for torch_npu) has no {name!r}; it provides {', '.join(PROVIDED)}"
    )
