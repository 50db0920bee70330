"""The ops: Python wrappers over torch.ops.custom.*, their fake kernels and autograd (rope, norm, glu),
readable argument checks (checks) and the float64 NumPy references the harness and tests judge against
(reference). Importing this package registers the fake kernels and autograd formulas."""

from .glu import swiglu
from .norm import add_rms_norm, rms_norm
from .rope import rope_customer, rotary_mul

__all__ = ["add_rms_norm", "rms_norm", "rope_customer", "rotary_mul", "swiglu"]
