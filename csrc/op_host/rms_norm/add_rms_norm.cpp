// add_rms_norm: x = x1 + x2, then rms_norm(x) (npu_add_rms_norm). OpDef generated from
// op_proto/rms_norm/add_rms_norm.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(AddRmsNorm, ascendc_ops_host::TileNormOp(context, ascendc_ops::kAddRmsNorm, true, false),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kAddRmsNorm, true, false),
                ascendc_ops_host::InferNormForwardDtype(context, true))

#include "add_rms_norm_def.h"
