// moe_token_permute: tokens gathered into expert order (npu_moe_token_permute). OpDef generated
// from op_proto/moe_token_permute.json. One launch runs the three phases the torch path launches
// separately (chunk sort, merge rounds, row gather; csrc/kernels/op_package/moe_token_permute.cpp),
// meeting at SyncAll: every block resident (batch schedule mode), the (score, index) pairs of the
// merge rounds in the user workspace.
#include "moe_routing_host.h"

namespace optiling {
static ge::graphStatus MoeTokenPermuteTiling(gert::TilingContext* context) {
  using namespace ascendc_ops_host;
  return Checked([&] {
    const tiling::MoeRoutingTiling r = tiling::TileMoeRouting(
        tiling::MoeRoutingProblemOf(PermuteArgsOf(context, ascendc_ops::kMoeTokenPermute), InputArg(context, 0).dtype),
        NpuPlatform(context));
    if (r.rowBlocks == 0) return ge::GRAPH_FAILED;  // no tokens: no launch
    context->SetScheduleMode(1);  // SyncAll between the phases: all blocks at once
    return Publish(context, r.data, r.rowBlocks, 0, size_t(r.workspaceBytes));
  });
}
}  // namespace optiling

namespace ge {
static graphStatus MoeTokenPermuteInferShape(gert::InferShapeContext* context) {
  // permuted_tokens [num_out, H], sorted_indices [T * K]
  using namespace ascendc_ops_host;
  return Checked([&] {
    const tiling::PermuteArgs<int64_t> a = PermuteArgsOf(context, ascendc_ops::kMoeTokenPermute);
    if (SetOutputShape(context, 0, a.permuted) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return SetOutputShape(context, 1, a.sortedIndices);
  });
}
static graphStatus MoeTokenPermuteInferDataType(gert::InferDataTypeContext* context) {
  if (ascendc_ops_host::SameDtype(context, 0, 0) != GRAPH_SUCCESS) return GRAPH_FAILED;
  return context->SetOutputDataType(1, DT_INT32);
}
}  // namespace ge

#include "moe_token_permute_def.h"
