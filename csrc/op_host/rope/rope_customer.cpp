// rope_customer: the tutorial RoPE: x [B, H, L, D], cos/sin [L, D], interleaved pairs reading
// cos/sin at their even lane (ROPE_MODE_TUTORIAL). OpDef generated from op_proto/rope/rope_customer.json.
#include "rope_host.h"

ASCENDC_OP_HOST(RopeCustomer, ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRopeCustomer, false, true),
                ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRopeCustomer, true),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "rope_customer_def.h"
