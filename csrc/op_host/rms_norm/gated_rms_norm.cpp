// gated_rms_norm: y = x * rstd * gamma * silu(z), rstd = 1 / sqrt(mean(x^2) + epsilon) (HF Qwen3NextRMSNormGated).
// OpDef generated from op_proto/rms_norm/gated_rms_norm.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(GatedRmsNorm, ascendc_ops_host::TileNormOp(context, ascendc_ops::kGatedRmsNorm, false, false),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kGatedRmsNorm, false, false),
                ascendc_ops_host::InferNormForwardDtype(context, false))

#include "gated_rms_norm_def.h"
