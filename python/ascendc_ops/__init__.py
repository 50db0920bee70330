"""ascendc-ops: fused LLM ops as Ascend C kernels, registered as torch.ops.custom.*.

The kernels run on Ascend NPUs (when built with CANN) and, everywhere, on the CPU twin of the
Ascend C API. `import ascendc_ops` loads the library and registers fake and autograd support.
"""
from ._library import backends, load

library_path = load()

from . import op_proto  # noqa: E402
from .rope import rope_customer, rotary_mul  # noqa: E402
from .glu import swiglu  # noqa: E402
from .norm import add_rms_norm, rms_norm  # noqa: E402
from .kernels import apply_default_kernels, apply_kernel, revert_kernels  # noqa: E402  (HF model patching)

__all__ = ["add_rms_norm", "apply_default_kernels", "apply_kernel", "backends", "revert_kernels", "library_path", "op_proto", "rms_norm", "rope_customer", "rotary_mul", "swiglu"]
from .ops.moe import grouped_matmul, moe_token_permute, moe_token_unpermute; __all__ += ["grouped_matmul", "moe_token_permute", "moe_token_unpermute"]  # noqa: E402,E702
__version__ = "0.1.0"
