// grouped_matmul_weight_grad: dweight[e] = x_e^T @ dy_e (npu_grouped_matmul split along K), on the
// cube cores. OpDef generated from op_proto/grouped_matmul_weight_grad.json; dweight is zero-filled
// by the framework first (InitValue): the kernel leaves an empty group's slice untouched.
#include "grouped_matmul_host.h"

namespace optiling {
static ge::graphStatus GroupedMatmulWeightGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileGroupedMatmulOp(context, true);
}
}  // namespace optiling

namespace ge {
static graphStatus GroupedMatmulWeightGradInferShape(gert::InferShapeContext* context) {
  // dweight: [E, K, N] from group_list [E], x [M, K], dy [M, N]
  const gert::Shape* x = context->GetInputShape(0);
  const gert::Shape* dy = context->GetInputShape(1);
  const gert::Shape* groupList = context->GetInputShape(2);
  gert::Shape* dw = context->GetOutputShape(0);
  if (x == nullptr || dy == nullptr || groupList == nullptr || dw == nullptr || x->GetDimNum() != 2 ||
      dy->GetDimNum() != 2 || groupList->GetDimNum() != 1)
    return GRAPH_FAILED;
  *dw = gert::Shape({groupList->GetDim(0), x->GetDim(1), dy->GetDim(1)});
  return GRAPH_SUCCESS;
}
static graphStatus GroupedMatmulWeightGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "grouped_matmul_weight_grad_def.h"
