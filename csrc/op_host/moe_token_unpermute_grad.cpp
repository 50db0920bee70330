// moe_token_unpermute_grad: dpermuted[s[t*K+k]] = p[t,k] * dout[t], dprobs[t,k] = <permuted[s[t*K+k]], dout[t]>.
// OpDef generated from op_proto/moe_token_unpermute_grad.json; permuted_tokens_grad is zero-filled
// by the framework first (InitValue): rows no sorted index reaches stay 0, as on the torch path.
#include "moe_routing_host.h"

namespace optiling {
static ge::graphStatus MoeTokenUnpermuteGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileUnpermuteOp(context, true);
}
}  // namespace optiling

namespace ge {
static graphStatus MoeTokenUnpermuteGradInferShape(gert::InferShapeContext* context) {
  // permuted_tokens_grad: permuted_tokens' shape; probs_grad: probs' shape ([0] without probs)
  const gert::Shape* permuted = context->GetInputShape(0);
  const gert::Shape* sorted = context->GetInputShape(2);
  const gert::Shape* probs = context->GetOptionalInputShape(3);
  gert::Shape* dprobs = context->GetOutputShape(1);
  int64_t t = 0, k = 0;
  if (permuted == nullptr || sorted == nullptr || dprobs == nullptr ||
      !ascendc_ops_host::UnpermuteShape(context->GetAttrs(), *permuted, *sorted, probs, t, k) ||
      ascendc_ops_host::SameShape(context, 0, 0) != GRAPH_SUCCESS)
    return GRAPH_FAILED;
  *dprobs = probs != nullptr ? *probs : gert::Shape({0});
  return GRAPH_SUCCESS;
}
static graphStatus MoeTokenUnpermuteGradInferDataType(gert::InferDataTypeContext* context) {
  const DataType probs = context->GetOptionalInputDataType(3);
  if (ascendc_ops_host::SameDtype(context, 0, 0) != GRAPH_SUCCESS) return GRAPH_FAILED;
  return context->SetOutputDataType(1, probs == DT_UNDEFINED ? context->GetInputDataType(0) : probs);
}
}  // namespace ge

#include "moe_token_unpermute_grad_def.h"
