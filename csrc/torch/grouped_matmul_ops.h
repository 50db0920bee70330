// Grouped matmul bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation, tiling.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>

#include "grouped_matmul_problem.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"

namespace ascendc_ops {

// grouped_matmul (weightGrad false: a = x, b = weight) and grouped_matmul_weight_grad (a = x, b = dy).
struct GroupedMatmulLaunch {
  at::Tensor a, b, groupList, bias, out;  // bias: undefined when absent
  tiling::GroupedMatmulTiling tiling;

  // The entries' GM tensors (EntryArgs): GROUPED_MATMUL_PARAMS (an absent bias null: the kernel reads it only with
  // isBias), GROUPED_MATMUL_WEIGHT_GRAD_PARAMS.
  auto Tensors() const { return std::tie(a, b, groupList, bias, out); }
  auto WeightGradTensors() const { return std::tie(a, b, groupList, out); }
};
// Checks the arguments (group_list values included: they are read here, on the host) and allocates
// the output with the rows past the last group (forward) or the empty groups' dweight (weight grad)
// already zero: the kernels write only the groups' blocks.
ASCENDC_OPS_API GroupedMatmulLaunch PrepareGroupedMatmul(const OpProto& op, const at::Tensor& a, const at::Tensor& b,
                                                         const at::Tensor& groupList, const at::Tensor& bias,
                                                         int64_t groupListType, bool transposeWeight, bool weightGrad,
                                                         const tiling::CubePlatform& platform);

// One implementation of both ops: (op, a, b, group_list, bias (undefined: none; the weight grad has
// none), group_list_type, transpose_weight, weight_grad).
using GroupedMatmulImpl = at::Tensor (*)(const OpProto& op, const at::Tensor& a, const at::Tensor& b,
                                         const at::Tensor& groupList, const at::Tensor& bias, int64_t groupListType,
                                         bool transposeWeight, bool weightGrad);

// Registers `Impl` for grouped_matmul (a = x, b = weight) and grouped_matmul_weight_grad (a = x, b = dy)
// under one dispatch key (the twin's CPU, the NPU's PrivateUse1, Meta).
template <GroupedMatmulImpl Impl>
void ImplGroupedMatmul(torch::Library& m) {
  m.impl("grouped_matmul", [](const at::Tensor& x, const at::Tensor& weight, const at::Tensor& groupList,
                              const c10::optional<at::Tensor>& bias, int64_t groupListType, bool transposeWeight) {
    return Impl(kGroupedMatmul, x, weight, groupList, bias.value_or(at::Tensor()), groupListType, transposeWeight,
                false);
  });
  m.impl("grouped_matmul_weight_grad",
         [](const at::Tensor& x, const at::Tensor& dy, const at::Tensor& groupList, int64_t groupListType) {
           return Impl(kGroupedMatmulWeightGrad, x, dy, groupList, at::Tensor(), groupListType, false, true);
         });
}

}  // namespace ascendc_ops
