// moe_token_unpermute: out[t] = sum_k probs[t, k] * permuted[sorted_indices[t*K + k]]
// (npu_moe_token_unpermute). OpDef generated from op_proto/moe_token_unpermute.json.
#include "moe_routing_host.h"

namespace optiling {
static ge::graphStatus MoeTokenUnpermuteTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileUnpermuteOp(context, ascendc_ops::kMoeTokenUnpermute, false);
}
}  // namespace optiling

namespace ge {
static graphStatus MoeTokenUnpermuteInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferUnpermuteShape(context, ascendc_ops::kMoeTokenUnpermute, false);
}
static graphStatus MoeTokenUnpermuteInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "moe_token_unpermute_def.h"
