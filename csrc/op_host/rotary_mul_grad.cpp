// rotary_mul_grad: dx = dy * r1 + rotate^T(dy * r2). OpDef generated from op_proto/rotary_mul_grad.json.
#include "rope_host.h"

namespace optiling {
static ge::graphStatus RotaryMulGradTiling(gert::TilingContext* context) {
  RopeMode mode;
  if (!ascendc_ops_host::RopeModeAttr(context, mode)) return ge::GRAPH_FAILED;
  return ascendc_ops_host::TileRopeOp(context, mode, true, false);
}
}  // namespace optiling

namespace ge {
static graphStatus RotaryMulGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::SameShape(context, 0, 0);
}
static graphStatus RotaryMulGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "rotary_mul_grad_def.h"
