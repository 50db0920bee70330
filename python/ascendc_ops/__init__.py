"""ascendc-ops: fused LLM ops as Ascend C kernels, registered as torch.ops.custom.*.

The kernels run on Ascend NPUs (when built with CANN) and, everywhere, on the CPU twin of the
Ascend C API. `import ascendc_ops` loads the library and registers fake and autograd support.

Layout by role: ops/ (wrappers, autograd, float64 NumPy references),
harness/ (the `ascendc-ops` commands in wings: verify/, bench/, pipeline/ (the 910B model), cann_bench/; info;
harness/families/ holds each op family's harness knowledge), patching/ (the HF model kernel registry).
"""

from ._library import backends, isa, load

library_path = load()

from . import (  # noqa: E402,F401  (npu: torch_npu's names, sys.modules["torch_npu"] = ascendc_ops.npu)
    npu,
    op_proto,
    optim,  # FusedAdamW
)
from .ops.attention import fusion_attention, fusion_attention_grad  # noqa: E402
from .ops.cross_entropy import cross_entropy_loss  # noqa: E402
from .ops.grouped_matmul import grouped_matmul  # noqa: E402
from .ops.linear_cross_entropy import LinearCrossEntropyLoss, linear_cross_entropy  # noqa: E402
from .ops.linear_cross_entropy_parallel import vocab_parallel_linear_cross_entropy  # noqa: E402
from .ops.moe_routing import moe_token_permute, moe_token_unpermute  # noqa: E402
from .ops.optimizer import apply_adam_w_, foreach_adam_w_, foreach_norm  # noqa: E402
from .ops.rms_norm import add_rms_norm, gated_rms_norm, gemma_rms_norm, rms_norm  # noqa: E402
from .ops.rope import apply_rotary_pos_emb, apply_rotary_pos_emb_, rope_customer, rotary_mul  # noqa: E402
from .ops.swiglu import swiglu  # noqa: E402
from .optim import clip_grad_norm_  # noqa: E402
from .patching import apply_default_kernels, apply_kernel, revert_kernels  # noqa: E402  (HF model patching)

__all__ = [
    "add_rms_norm",
    "apply_default_kernels",
    "apply_kernel",
    "backends",
    "isa",
    "revert_kernels",
    "library_path",
    "op_proto",
    "rms_norm",
    "rope_customer",
    "rotary_mul",
    "swiglu",
    "grouped_matmul",
    "moe_token_permute",
    "moe_token_unpermute",
    "gemma_rms_norm",
    "apply_rotary_pos_emb",
    "apply_rotary_pos_emb_",
    "gated_rms_norm",
    "fusion_attention",
    "fusion_attention_grad",
    "linear_cross_entropy",
    "LinearCrossEntropyLoss",
    "vocab_parallel_linear_cross_entropy",
    "cross_entropy_loss",
    "apply_adam_w_",
    "foreach_adam_w_",
    "foreach_norm",
    "clip_grad_norm_",
    "optim",
]

__version__ = "0.1.0"
