// rope_customer: the tutorial RoPE: x [B, H, L, D], cos/sin [L, D], interleaved pairs reading
// cos/sin at their even lane (ROPE_MODE_TUTORIAL). OpDef generated from op_proto/rope_customer.json.
#include "rope_host.h"

namespace optiling {
static ge::graphStatus RopeCustomerTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileRopeOp(context, ascendc_ops::kRopeCustomer, false, true);
}
}  // namespace optiling

namespace ge {
static graphStatus RopeCustomerInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferRopeShape(context, ascendc_ops::kRopeCustomer, true);
}
static graphStatus RopeCustomerInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "rope_customer_def.h"
