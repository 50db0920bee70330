// gemma_rms_norm: y = x * rstd * (1 + gamma), rstd = 1 / sqrt(mean(x^2) + epsilon) (npu_gemma_rms_norm).
// OpDef generated from op_proto/rms_norm/gemma_rms_norm.json.
#include "rms_norm_host.h"

ASCENDC_OP_HOST(GemmaRmsNorm, ascendc_ops_host::TileNormOp(context, ascendc_ops::kGemmaRmsNorm, false, false),
                ascendc_ops_host::InferNormShape(context, ascendc_ops::kGemmaRmsNorm, false, false),
                ascendc_ops_host::InferNormForwardDtype(context, false))

#include "gemma_rms_norm_def.h"
