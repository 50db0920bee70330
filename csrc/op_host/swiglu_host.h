// Host side of swiglu and swiglu_grad: x viewed as [outer, 2, inner] around the split dim
// (attr 0, `dim`), tiled by tiling/swiglu_tiling.h.
#pragma once
#include "op_host_common.h"
#include "swiglu_tiling.h"

namespace ascendc_ops_host {

// `dim` normalised against `rank`; false when out of range.
inline bool SwigluDim(const int64_t* attr, size_t rank, size_t& dim) {
  const int64_t d = attr == nullptr ? -1 : *attr, r = int64_t(rank);
  if (d < -r || d >= r) return false;
  dim = size_t(d < 0 ? d + r : d);
  return true;
}

inline ge::graphStatus TileSwigluOp(gert::TilingContext* context, size_t xIndex, bool backward) {
  std::vector<int64_t> x;
  tiling::DType dtype;
  size_t dim = 0;
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  if (!InputDims(context, xIndex, x) || !InputDtype(context, xIndex, dtype) ||
      !SwigluDim(attrs == nullptr ? nullptr : attrs->GetInt(0), x.size(), dim) || x[dim] % 2 != 0)
    return ge::GRAPH_FAILED;
  int64_t outer = 1, inner = x[dim] / 2;
  for (size_t k = 0; k < dim; ++k) outer *= x[k];
  for (size_t k = dim + 1; k < x.size(); ++k) inner *= x[k];
  try {
    const tiling::SwigluTiling t = tiling::TileSwiglu({outer, inner, dtype, backward}, NpuPlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty x: no launch (aclnn skips empty outputs)
    return Publish(context, t.data, t.blockDim, t.tilingKey);
  } catch (const tiling::TilingError&) {
    return ge::GRAPH_FAILED;
  }
}

}  // namespace ascendc_ops_host
