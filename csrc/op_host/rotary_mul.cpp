// rotary_mul: y = x * r1 + rotate(x) * r2 (npu_rotary_mul). OpDef generated from op_proto/rotary_mul.json.
#include "rope_host.h"

namespace optiling {
static ge::graphStatus RotaryMulTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRotaryMul, false, false);
}
}  // namespace optiling

namespace ge {
static graphStatus RotaryMulInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRotaryMul, false);
}
static graphStatus RotaryMulInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "rotary_mul_def.h"
