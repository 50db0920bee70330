// apply_adam_w: one AdamW step, var / m / v (and amsgrad's maximum) updated in place (npu_apply_adam_w).
// OpDef generated from op_proto/optimizer/apply_adam_w.json.
#include "optimizer_host.h"

ASCENDC_OP_HOST(ApplyAdamW, ascendc_ops_host::TileApplyAdamWOp(context, ascendc_ops::kApplyAdamW),
                ascendc_ops_host::InferApplyAdamWShape(context, ascendc_ops::kApplyAdamW),
                ascendc_ops_host::ApplyAdamWDtypes(context))

#include "apply_adam_w_def.h"
