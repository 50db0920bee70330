// foreach_norm: the p-norm (p 1, 2 or inf) of each tensor of a list in one launch (cann-bench's foreach_norm).
// OpDef generated from op_proto/optimizer/foreach_norm.json (a dynamic input and output).
#include "optimizer_host.h"

ASCENDC_OP_HOST(ForeachNorm, ascendc_ops_host::TileForeachNormOp(context, ascendc_ops::kForeachNorm),
                ascendc_ops_host::InferForeachNormShape(context, ascendc_ops::kForeachNorm),
                ascendc_ops_host::ForeachNormDtypes(context))

#include "foreach_norm_def.h"
