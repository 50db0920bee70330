// Host side of grouped_matmul (+ weight grad) on the cube cores, tiled by tiling/grouped_matmul_tiling.h
// for the chip's cube resources. The argument rules are the torch path's (csrc/torch/grouped_matmul_ops.h);
// values on the device (group_list) cannot be checked here.
#pragma once
#include "grouped_matmul_tiling.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// The chip's cube cores and their L1 / L0 buffers.
inline tiling::CubePlatform NpuCubePlatform(const gert::TilingContext* context) {
  platform_ascendc::PlatformAscendC soc(context->GetPlatformInfo());
  uint64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
  soc.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
  return {tiling::kA2Name, soc.GetCoreNumAic(), uint32_t(l1), uint32_t(l0a), uint32_t(l0b), uint32_t(l0c)};
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

}  // namespace ascendc_ops_host
