// swiglu_grad: dx = [dA, dB] of swiglu. OpDef generated from op_proto/swiglu_grad.json.
#include "swiglu_host.h"

namespace optiling {
static ge::graphStatus SwigluGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileSwigluOp(context, ascendc_ops::kSwigluGrad, true);
}
}  // namespace optiling

namespace ge {
static graphStatus SwigluGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferSwigluShape(context, ascendc_ops::kSwigluGrad, true);
}
static graphStatus SwigluGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 1, 0);
}
}  // namespace ge

#include "swiglu_grad_def.h"
