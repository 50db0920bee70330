// apply_rotary_pos_emb_grad: dquery and dkey rotated back in place.
// OpDef generated from op_proto/rope/apply_rotary_pos_emb_grad.json.
#include "rope_host.h"

ASCENDC_OP_HOST(ApplyRotaryPosEmbGrad,
                ascendc_ops_host::TileApplyRopeOp(context, ascendc_ops::kApplyRotaryPosEmbGrad, true),
                ascendc_ops_host::InferApplyRopeShape(context, ascendc_ops::kApplyRotaryPosEmbGrad),
                ascendc_ops_host::ApplyRopeDtypes(context))

#include "apply_rotary_pos_emb_grad_def.h"
