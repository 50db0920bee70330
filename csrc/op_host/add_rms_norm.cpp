// add_rms_norm: x = x1 + x2, then rms_norm(x) (npu_add_rms_norm). OpDef generated from op_proto/add_rms_norm.json.
#include "rms_norm_host.h"

namespace optiling {
static ge::graphStatus AddRmsNormTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileNormOp(context, ascendc_ops::kAddRmsNorm, true, false);
}
}  // namespace optiling

namespace ge {
static graphStatus AddRmsNormInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferNormShape(context, ascendc_ops::kAddRmsNorm, true, false);
}
static graphStatus AddRmsNormInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::InferNormForwardDtype(context, true);
}
}  // namespace ge

#include "add_rms_norm_def.h"
