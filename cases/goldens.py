"""Expected-data functions for the cases of this directory that carry an error_threshold, in msOpST's calling
convention (calc_expect_func_file "goldens.py:<function>"): each input a dict whose "value" holds its data, each
output a dict with its "dtype", each attribute the case file names by keyword. They compute in float64 through
the project's references and return each output in its own dtype, as msOpST stores expected data."""

import numpy as np

from ascendc_ops.ops import rms_norm_reference, rope_reference


def _as(out: dict, values) -> np.ndarray:
    return np.asarray(values).astype(out["dtype"])


def rms_norm(x, gamma, y, rstd, epsilon=1e-6):
    """(y, rstd); epsilon defaults to op_proto's, which msOpST does not pass when the case omits it."""
    got_y, got_rstd = rms_norm_reference.rms_norm(x["value"], gamma["value"], epsilon)
    return [_as(y, got_y), _as(rstd, got_rstd)]


def rotary_mul(x, r1, r2, y, rotary_mode="half"):
    return _as(y, rope_reference.rotary_mul(x["value"], r1["value"], r2["value"], rotary_mode))
