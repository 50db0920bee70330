// fusion_attention_grad: torch_npu's npu_fusion_attention_grad (dq, dk, dv) as a FlashAttention-2 mix kernel in
// two passes (one AIC and two AIVs per core group). OpDef generated from op_proto/attention/fusion_attention_grad.json.
#include "attention_host.h"

ASCENDC_OP_HOST(FusionAttentionGrad, ascendc_ops_host::TileAttentionGradOp(context, ascendc_ops::kFusionAttentionGrad),
                ascendc_ops_host::InferAttentionGradShape(context, ascendc_ops::kFusionAttentionGrad),
                ascendc_ops_host::InferAttentionGradDtype(context))

#include "fusion_attention_grad_def.h"
