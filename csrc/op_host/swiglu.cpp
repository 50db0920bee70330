// swiglu: y = silu(A) * B over the two halves of `dim` (npu_swiglu). OpDef generated from op_proto/swiglu.json.
#include "swiglu_host.h"

namespace optiling {
static ge::graphStatus SwigluTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileSwigluOp(context, 0, false);
}
}  // namespace optiling

namespace ge {
static graphStatus SwigluInferShape(gert::InferShapeContext* context) {
  // y: x's shape with `dim` halved
  const gert::Shape* x = context->GetInputShape(0);
  gert::Shape* y = context->GetOutputShape(0);
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  size_t dim = 0;
  if (x == nullptr || y == nullptr ||
      !ascendc_ops_host::SwigluDim(attrs == nullptr ? nullptr : attrs->GetInt(0), x->GetDimNum(), dim))
    return GRAPH_FAILED;
  *y = *x;
  y->SetDim(dim, x->GetDim(dim) / 2);
  return GRAPH_SUCCESS;
}
static graphStatus SwigluInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "swiglu_def.h"
