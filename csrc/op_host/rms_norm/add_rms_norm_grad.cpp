// add_rms_norm_grad: dx (plus the residual branch's dx_out) and dgamma of add_rms_norm. OpDef
// generated from op_proto/rms_norm/add_rms_norm_grad.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(AddRmsNormGrad, ascendc_ops_host::TileNormOp(context, ascendc_ops::kAddRmsNormGrad, true, true),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kAddRmsNormGrad, true, true),
                ascendc_ops_host::InferNormBackwardDtype(context))

#include "add_rms_norm_grad_def.h"
