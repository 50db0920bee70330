// Host side of the MoE routing ops (moe_token_permute, moe_token_unpermute + grad), tiled by
// tiling/moe_routing_tiling.h. The argument rules are the torch path's (csrc/torch/moe_routing_ops.h);
// values on the device (expert ids) cannot be checked here.
#pragma once
#include "moe_routing_tiling.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

constexpr int64_t kMoeMaxTopK = MOE_MAX_TOPK;  // tiling/moe_routing_tiling_data.h

// Tokens T and topK K of an unpermute: from probs [T, K], else restore_shape [T, H], else K = 1.
inline bool UnpermuteTokens(int64_t n, int64_t hidden, const gert::Shape* probs,
                            const gert::TypedContinuousVector<int64_t>* restore, int64_t& t, int64_t& k) {
  if (probs != nullptr && probs->GetShapeSize() > 0) {
    if (probs->GetDimNum() != 2 || probs->GetShapeSize() != n) return false;
    t = probs->GetDim(0), k = probs->GetDim(1);
  } else if (restore != nullptr && restore->GetSize() > 0) {
    const int64_t* r = restore->GetData();
    if (restore->GetSize() != 2 || r[0] <= 0 || n % r[0] != 0 || r[1] != hidden) return false;
    t = r[0], k = n / r[0];
  } else {
    t = n, k = 1;
  }
  return k <= kMoeMaxTopK;
}

// moe_token_unpermute and its grad: T and K from the shapes of permuted [rows, H], sorted_indices
// [T*K] and probs (absent: nullptr) and the attrs padded_mode (0, must be false) and restore_shape (1).
inline bool UnpermuteShape(const gert::RuntimeAttrs* attrs, const gert::Shape& permuted, const gert::Shape& sorted,
                           const gert::Shape* probs, int64_t& t, int64_t& k) {
  if (BoolAttr(attrs, 0, false) || permuted.GetDimNum() != 2 || sorted.GetDimNum() != 1) return false;
  const auto* restore = attrs == nullptr ? nullptr : attrs->GetListInt(1);
  const int64_t n = sorted.GetDim(0);
  return UnpermuteTokens(n, permuted.GetDim(1), probs, restore, t, k) && permuted.GetDim(0) <= n;
}

inline const gert::Shape* StorageShapeOf(const gert::StorageShape* s) {
  return s == nullptr ? nullptr : &s->GetStorageShape();
}

inline ge::graphStatus TileUnpermuteOp(gert::TilingContext* context, bool grad) {
  const gert::Shape* permuted = StorageShapeOf(context->GetInputShape(0));
  const gert::Shape* sorted = StorageShapeOf(context->GetInputShape(grad ? 2 : 1));
  const gert::StorageShape* probs = context->GetOptionalInputShape(grad ? 3 : 2);
  int64_t t = 0, k = 0;
  tiling::DType dtype;
  if (permuted == nullptr || sorted == nullptr || !InputDtype(context, 0, dtype) ||
      !UnpermuteShape(context->GetAttrs(), *permuted, *sorted, StorageShapeOf(probs), t, k))
    return ge::GRAPH_FAILED;
  const bool hasProbs = probs != nullptr && probs->GetStorageShape().GetShapeSize() > 0;
  try {
    const tiling::MoeRoutingTiling r = tiling::TileMoeRouting(
        {t, k, permuted->GetDim(1), permuted->GetDim(0), dtype, hasProbs, true}, NpuPlatform(context));
    if (r.rowBlocks == 0) return ge::GRAPH_FAILED;  // no tokens: no launch
    return Publish(context, r.data, r.rowBlocks, 0);
  } catch (const tiling::TilingError&) {
    return ge::GRAPH_FAILED;
  }
}

}  // namespace ascendc_ops_host
