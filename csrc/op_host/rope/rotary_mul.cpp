// rotary_mul: y = x * r1 + rotate(x) * r2 (npu_rotary_mul). OpDef generated from op_proto/rope/rotary_mul.json.
#include "rope_host.h"

ASCENDC_OP_HOST(RotaryMul, ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRotaryMul, false, false),
                ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRotaryMul, false),
                ascendc_ops_host::SameDtype(context, 0, 0))

#include "rotary_mul_def.h"
