// gated_rms_norm_grad: dx, dgamma (accumulated in fp32, deterministic) and dz of gated_rms_norm. OpDef
// generated from op_proto/rms_norm/gated_rms_norm_grad.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(GatedRmsNormGrad, ascendc_ops_host::TileNormOp(context, ascendc_ops::kGatedRmsNormGrad, false, true),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kGatedRmsNormGrad, false, true),
                ascendc_ops_host::InferNormBackwardDtype(context, true))

#include "gated_rms_norm_grad_def.h"
