"""Expected data for the RoPE cases of this directory that carry an error_threshold, in msOpST's calling
convention (calc_expect_func_file "rope_goldens.py:<function>", a path relative to the case file; see
cases/rms_norm/rms_norm_goldens.py): computed in float64 through the project's reference, returned in the
output's dtype, as msOpST stores expected data."""

import numpy as np

from ascendc_ops.ops import rope_reference


def rotary_mul(x, r1, r2, y, rotary_mode="half"):
    return np.asarray(rope_reference.rotary_mul(x["value"], r1["value"], r2["value"], rotary_mode)).astype(y["dtype"])
