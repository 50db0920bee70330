// rms_norm: y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + epsilon) (npu_rms_norm). OpDef generated
// from op_proto/rms_norm/rms_norm.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(RmsNorm, ascendc_ops_host::TileNormOp(context, ascendc_ops::kRmsNorm, false, false),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kRmsNorm, false, false),
                ascendc_ops_host::InferNormForwardDtype(context, false))

#include "rms_norm_def.h"
