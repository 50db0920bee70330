// moe_token_unpermute: out[t] = sum_k probs[t, k] * permuted[sorted_indices[t*K + k]]
// (npu_moe_token_unpermute). OpDef generated from op_proto/moe_token_unpermute.json.
#include "moe_routing_host.h"

namespace optiling {
static ge::graphStatus MoeTokenUnpermuteTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileUnpermuteOp(context, false);
}
}  // namespace optiling

namespace ge {
static graphStatus MoeTokenUnpermuteInferShape(gert::InferShapeContext* context) {
  // unpermuted_tokens [T, H]
  const gert::Shape* permuted = context->GetInputShape(0);
  const gert::Shape* sorted = context->GetInputShape(1);
  gert::Shape* out = context->GetOutputShape(0);
  int64_t t = 0, k = 0;
  if (permuted == nullptr || sorted == nullptr || out == nullptr ||
      !ascendc_ops_host::UnpermuteShape(context->GetAttrs(), *permuted, *sorted, context->GetOptionalInputShape(2), t,
                                        k))
    return GRAPH_FAILED;
  *out = gert::Shape({t, permuted->GetDim(1)});
  return GRAPH_SUCCESS;
}
static graphStatus MoeTokenUnpermuteInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "moe_token_unpermute_def.h"
