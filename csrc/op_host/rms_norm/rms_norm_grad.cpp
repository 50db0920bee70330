// rms_norm_grad: dx and dgamma of rms_norm (dgamma accumulated in fp32, deterministic). OpDef
// generated from op_proto/rms_norm/rms_norm_grad.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(RmsNormGrad, ascendc_ops_host::TileNormOp(context, ascendc_ops::kRmsNormGrad, false, true),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kRmsNormGrad, false, true),
                ascendc_ops_host::InferNormBackwardDtype(context))

#include "rms_norm_grad_def.h"
