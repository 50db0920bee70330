// Grouped matmul bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation, tiling.
#pragma once
#include <ATen/ATen.h>

#include "grouped_matmul_tiling.h"
#include "op_proto_table.h"

namespace ascendc_ops {

// grouped_matmul (weightGrad false: a = x, b = weight) and grouped_matmul_weight_grad (a = x, b = dy).
struct GroupedMatmulLaunch {
  at::Tensor a, b, groupList, out;
  tiling::GroupedMatmulTiling tiling;
};
// Checks the arguments (group_list values included: they are read here, on the host) and allocates
// the output with the rows past the last group (forward) or the empty groups' dweight (weight grad)
// already zero: the kernels write only the groups' blocks.
ASCENDC_OPS_API GroupedMatmulLaunch PrepareGroupedMatmul(const OpProto& op, const at::Tensor& a, const at::Tensor& b,
                                                         const at::Tensor& groupList, int64_t groupListType,
                                                         bool transposeWeight, bool weightGrad,
                                                         const tiling::CubePlatform& platform);

}  // namespace ascendc_ops
