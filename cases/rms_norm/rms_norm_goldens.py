"""Expected data for the RMSNorm cases of this directory that carry an error_threshold, in msOpST's calling
convention (calc_expect_func_file "rms_norm_goldens.py:<function>", a path relative to the case file): each
input a dict whose "value" holds its data, each output a dict with its "dtype", each attribute the case file
names by keyword. They compute in float64 through the project's references and return each output in its own
dtype, as msOpST stores expected data."""

import numpy as np

from ascendc_ops.ops import rms_norm_reference


def rms_norm(x, gamma, y, rstd, epsilon=1e-6):
    """(y, rstd); epsilon defaults to op_proto's, which msOpST does not pass when the case omits it."""
    got_y, got_rstd = rms_norm_reference.rms_norm(x["value"], gamma["value"], epsilon)
    return [np.asarray(got_y).astype(y["dtype"]), np.asarray(got_rstd).astype(rstd["dtype"])]
