// rotary_mul_grad: dx = dy * r1 + rotate^T(dy * r2). OpDef generated from op_proto/rope/rotary_mul_grad.json.
#include "rope_host.h"

ASCENDC_OP_HOST(RotaryMulGrad, ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRotaryMulGrad, true, false),
                ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRotaryMulGrad, false),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "rotary_mul_grad_def.h"
