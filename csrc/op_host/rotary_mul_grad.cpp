// rotary_mul_grad: dx = dy * r1 + rotate^T(dy * r2). OpDef generated from op_proto/rotary_mul_grad.json.
#include "rope_host.h"

namespace optiling {
static ge::graphStatus RotaryMulGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRotaryMulGrad, true, false);
}
}  // namespace optiling

namespace ge {
static graphStatus RotaryMulGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRotaryMulGrad, false);
}
static graphStatus RotaryMulGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "rotary_mul_grad_def.h"
