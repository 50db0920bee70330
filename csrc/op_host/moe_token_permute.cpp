// moe_token_permute: tokens gathered into expert order (npu_moe_token_permute). OpDef generated
// from op_proto/moe_token_permute.json. One launch runs the three phases the torch path launches
// separately (chunk sort, merge rounds, row gather; csrc/kernels/op_package/moe_token_permute.cpp),
// meeting at SyncAll: every block resident (batch schedule mode), the (score, index) pairs of the
// merge rounds in the user workspace.
#include "moe_routing_host.h"

namespace ascendc_ops_host {
// Rows of permuted_tokens: num_out_tokens (attr 0) when > 0, capped at T * K; else T * K.
inline int64_t PermutedRows(const gert::RuntimeAttrs* attrs, int64_t n) {
  const int64_t* numOut = IntAttr(attrs, 0);
  return numOut != nullptr && *numOut > 0 && *numOut < n ? *numOut : n;
}
// T and K of indices [T, K] or [T].
inline bool PermuteDims(const gert::Shape& tokens, const gert::Shape& indices, int64_t& k) {
  if (tokens.GetDimNum() != 2 || (indices.GetDimNum() != 1 && indices.GetDimNum() != 2) ||
      indices.GetDim(0) != tokens.GetDim(0))
    return false;
  k = indices.GetDimNum() == 2 ? indices.GetDim(1) : 1;
  return k >= 1 && k <= kMoeMaxTopK;
}
}  // namespace ascendc_ops_host

namespace optiling {
static ge::graphStatus MoeTokenPermuteTiling(gert::TilingContext* context) {
  using namespace ascendc_ops_host;
  const gert::Shape* tokens = StorageShapeOf(context->GetInputShape(0));
  const gert::Shape* indices = StorageShapeOf(context->GetInputShape(1));
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  int64_t k = 0;
  tiling::DType dtype;
  if (tokens == nullptr || indices == nullptr || !InputDtype(context, 0, dtype) || BoolAttr(attrs, 1, false) ||
      !PermuteDims(*tokens, *indices, k))
    return ge::GRAPH_FAILED;  // padded_mode=true is not supported, as on the torch path
  const int64_t t = tokens->GetDim(0);
  try {
    const tiling::MoeRoutingTiling r = tiling::TileMoeRouting(
        {t, k, tokens->GetDim(1), PermutedRows(attrs, t * k), dtype, false, false}, NpuPlatform(context));
    if (r.rowBlocks == 0) return ge::GRAPH_FAILED;  // no tokens: no launch
    context->SetScheduleMode(1);  // SyncAll between the phases: all blocks at once
    return Publish(context, r.data, r.rowBlocks, 0, size_t(r.workspaceBytes));
  } catch (const tiling::TilingError&) {
    return ge::GRAPH_FAILED;
  }
}
}  // namespace optiling

namespace ge {
static graphStatus MoeTokenPermuteInferShape(gert::InferShapeContext* context) {
  // permuted_tokens [num_out, H], sorted_indices [T * K]
  const gert::Shape* tokens = context->GetInputShape(0);
  const gert::Shape* indices = context->GetInputShape(1);
  gert::Shape* permuted = context->GetOutputShape(0);
  gert::Shape* sorted = context->GetOutputShape(1);
  int64_t k = 0;
  if (tokens == nullptr || indices == nullptr || permuted == nullptr || sorted == nullptr ||
      !ascendc_ops_host::PermuteDims(*tokens, *indices, k))
    return GRAPH_FAILED;
  const int64_t n = tokens->GetDim(0) * k;
  *permuted = gert::Shape({ascendc_ops_host::PermutedRows(context->GetAttrs(), n), tokens->GetDim(1)});
  *sorted = gert::Shape({n});
  return GRAPH_SUCCESS;
}
static graphStatus MoeTokenPermuteInferDataType(gert::InferDataTypeContext* context) {
  if (ascendc_ops_host::SameDtype(context, 0, 0) != GRAPH_SUCCESS) return GRAPH_FAILED;
  return context->SetOutputDataType(1, DT_INT32);
}
}  // namespace ge

#include "moe_token_permute_def.h"
