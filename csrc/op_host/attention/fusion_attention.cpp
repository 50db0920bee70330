// fusion_attention: torch_npu's npu_fusion_attention forward as a FlashAttention-2 mix kernel (one AIC and
// two AIVs per core group). OpDef generated from op_proto/attention/fusion_attention.json.
#include "attention_host.h"

ASCENDC_OP_HOST(FusionAttention, ascendc_ops_host::TileAttentionOp(context, ascendc_ops::kFusionAttention),
                ascendc_ops_host::InferAttentionShape(context, ascendc_ops::kFusionAttention),
                ascendc_ops_host::InferAttentionDtype(context))

#include "fusion_attention_def.h"
