// Host side of the MoE ops: grouped_matmul (+ weight grad) on the cube cores, tiled by
// tiling/grouped_matmul_tiling.h for the chip's cube resources, and the routing ops
// (moe_token_permute, moe_token_unpermute + grad) tiled by tiling/moe_routing_tiling.h. The
// argument rules are the torch path's (csrc/torch/moe_ops.h); values on the device (group_list,
// expert ids) cannot be checked here.
#pragma once
#include "grouped_matmul_tiling.h"
#include "moe_routing_tiling.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

constexpr int64_t kMoeMaxTopK = 512;  // the unpermute kernels hold one token's routes in UB (MOE_MAX_TOPK)

// The chip's cube cores and their L1 / L0 buffers.
inline tiling::CubePlatform NpuCubePlatform(const gert::TilingContext* context) {
  platform_ascendc::PlatformAscendC soc(context->GetPlatformInfo());
  uint64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
  return {"Ascend910B", soc.GetCoreNumAic(), uint32_t(l1), uint32_t(l0a), uint32_t(l0b), uint32_t(l0c)};
}

inline const int64_t* IntAttr(const gert::RuntimeAttrs* attrs, size_t index) {
  return attrs == nullptr ? nullptr : attrs->GetInt(index);
}
inline bool BoolAttr(const gert::RuntimeAttrs* attrs, size_t index, bool fallback) {
  const bool* v = attrs == nullptr ? nullptr : attrs->GetBool(index);
  return v == nullptr ? fallback : *v;
}

// grouped_matmul: x [M, K], weight [E, K, N] ([E, N, K] transposed), group_list [E] -> y [M, N].
// grouped_matmul_weight_grad: x [M, K], dy [M, N], group_list [E] -> dweight [E, K, N].
inline bool GroupedMatmulDims(const std::vector<int64_t>& x, const std::vector<int64_t>& b,
                              const std::vector<int64_t>& groupList, bool transpose, bool weightGrad,
                              tiling::GroupedMatmulProblem& p) {
  if (x.size() != 2 || groupList.size() != 1 || groupList[0] < 1) return false;
  p.m = x[0], p.k = x[1], p.groups = groupList[0];
  if (weightGrad) {
    if (b.size() != 2 || b[0] != p.m) return false;
    p.n = b[1];
  } else {
    if (b.size() != 3 || b[0] != p.groups || (transpose ? b[2] : b[1]) != p.k) return false;
    p.n = transpose ? b[1] : b[2];
  }
  p.transposeWeight = transpose && !weightGrad;
  p.weightGrad = weightGrad;
  return true;
}

inline ge::graphStatus TileGroupedMatmulOp(gert::TilingContext* context, bool weightGrad) {
  std::vector<int64_t> x, b, groupList;
  tiling::GroupedMatmulProblem p{};
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  const int64_t* listType = IntAttr(attrs, 0);
  p.groupListType = int32_t(listType == nullptr ? 1 : *listType);
  const bool transpose = !weightGrad && BoolAttr(attrs, 1, false);
  if (!InputDims(context, 0, x) || !InputDims(context, 1, b) || !InputDims(context, 2, groupList) ||
      !InputDtype(context, 0, p.dtype) || !GroupedMatmulDims(x, b, groupList, transpose, weightGrad, p))
    return ge::GRAPH_FAILED;
  try {
    const tiling::GroupedMatmulTiling t = tiling::TileGroupedMatmul(p, NpuCubePlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty output: no launch
    return Publish(context, t.data, t.blockDim, 0);  // workspace: the Matmul API's system workspace
  } catch (const tiling::TilingError&) {
    return ge::GRAPH_FAILED;
  }
}

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
