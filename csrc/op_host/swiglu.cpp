// swiglu: y = silu(A) * B over the two halves of `dim` (npu_swiglu). OpDef generated from op_proto/swiglu.json.
#include "swiglu_host.h"

namespace optiling {
static ge::graphStatus SwigluTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileSwigluOp(context, ascendc_ops::kSwiglu, false);
}
}  // namespace optiling

namespace ge {
static graphStatus SwigluInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferSwigluShape(context, ascendc_ops::kSwiglu, false);
}
static graphStatus SwigluInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "swiglu_def.h"
