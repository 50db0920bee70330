// apply_rotary_pos_emb: query and key rotated in place (npu_apply_rotary_pos_emb).
// OpDef generated from op_proto/rope/apply_rotary_pos_emb.json.
#include "rope_host.h"

ASCENDC_OP_HOST(ApplyRotaryPosEmb, ascendc_ops_host::TileApplyRopeOp(context, ascendc_ops::kApplyRotaryPosEmb, false),
                ascendc_ops_host::InferApplyRopeShape(context, ascendc_ops::kApplyRotaryPosEmb),
                ascendc_ops_host::ApplyRopeDtypes(context))

#include "apply_rotary_pos_emb_def.h"
