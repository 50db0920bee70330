// rms_norm: y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + epsilon) (npu_rms_norm). OpDef generated
// from op_proto/rms_norm.json.
#include "rms_norm_host.h"

namespace optiling {
static ge::graphStatus RmsNormTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileNormOp(context, ascendc_ops::kRmsNorm, false, false);
}
}  // namespace optiling

namespace ge {
static graphStatus RmsNormInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferNormShape(context, ascendc_ops::kRmsNorm, false, false);
}
static graphStatus RmsNormInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::InferNormForwardDtype(context, false);
}
}  // namespace ge

#include "rms_norm_def.h"
