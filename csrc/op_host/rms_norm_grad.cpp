// rms_norm_grad: dx and dgamma of rms_norm (dgamma accumulated in fp32, deterministic). OpDef
// generated from op_proto/rms_norm_grad.json.
#include "rms_norm_host.h"

namespace optiling {
static ge::graphStatus RmsNormGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileNormOp(context, ascendc_ops::kRmsNormGrad, false, true);
}
}  // namespace optiling

namespace ge {
static graphStatus RmsNormGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferNormShape(context, ascendc_ops::kRmsNormGrad, false, true);
}
static graphStatus RmsNormGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::InferNormBackwardDtype(context);
}
}  // namespace ge

#include "rms_norm_grad_def.h"
