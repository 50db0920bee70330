// add_rms_norm_grad: dx (plus the residual branch's dx_out) and dgamma of add_rms_norm. OpDef
// generated from op_proto/add_rms_norm_grad.json.
#include "rms_norm_host.h"

namespace optiling {
static ge::graphStatus AddRmsNormGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileNormOp(context, ascendc_ops::kAddRmsNormGrad, true, true);
}
}  // namespace optiling

namespace ge {
static graphStatus AddRmsNormGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferNormShape(context, ascendc_ops::kAddRmsNormGrad, true, true);
}
static graphStatus AddRmsNormGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::InferNormBackwardDtype(context);
}
}  // namespace ge

#include "add_rms_norm_grad_def.h"
