// moe_token_unpermute_grad: dpermuted[s[t*K+k]] = p[t,k] * dout[t], dprobs[t,k] = <permuted[s[t*K+k]], dout[t]>.
// OpDef generated from op_proto/moe_token_unpermute_grad.json; permuted_tokens_grad is zero-filled
// by the framework first (InitValue): rows no sorted index reaches stay 0, as on the torch path.
#include "moe_routing_host.h"

namespace optiling {
static ge::graphStatus MoeTokenUnpermuteGradTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileUnpermuteOp(context, ascendc_ops::kMoeTokenUnpermuteGrad, true);
}
}  // namespace optiling

namespace ge {
static graphStatus MoeTokenUnpermuteGradInferShape(gert::InferShapeContext* context) {
  return ascendc_ops_host::InferUnpermuteShape(context, ascendc_ops::kMoeTokenUnpermuteGrad, true);
}
static graphStatus MoeTokenUnpermuteGradInferDataType(gert::InferDataTypeContext* context) {
  const DataType probs = context->GetOptionalInputDataType(3);
  if (ascendc_ops_host::SameDtype(context, 0, 0) != GRAPH_SUCCESS) return GRAPH_FAILED;
  return context->SetOutputDataType(1, probs == DT_UNDEFINED ? context->GetInputDataType(0) : probs);
}
}  // namespace ge

#include "moe_token_unpermute_grad_def.h"
