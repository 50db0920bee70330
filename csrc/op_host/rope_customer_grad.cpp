// rope_customer_grad: backward of rope_customer. OpDef generated from op_proto/rope_customer_grad.json.
#include "rope_host.h"

namespace optiling {
static ge::graphStatus RopeCustomerGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRopeCustomerGrad, true, true);
}
}  // namespace optiling

namespace ge {
static graphStatus RopeCustomerGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRopeCustomerGrad, true);
}
static graphStatus RopeCustomerGradInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "rope_customer_grad_def.h"
