// grouped_matmul / grouped_matmul_weight_grad arguments -> the problem (M, K, N, E) and the output's
// shape, or an ArgError. Called by the torch binding, its Meta kernel and the op_host. The values of
// group_list live on the device: the bindings check them where they read them (run time).
#pragma once
#include <string>
#include <vector>

#include "grouped_matmul_tiling.h"
#include "op_spec.h"

namespace tiling {

// Size comparisons that may be undecidable while tracing: under torch.compile group_list's length can
// come from the data (bincount), an unbacked c10::SymInt. Such a check answers false there (torch's
// guard_or_false) and the binding makes it on the real sizes. The Meta kernels specialize this for
// c10::SymInt (csrc/torch/grouped_matmul_ops.cpp); plain sizes compare as they are.
template <class Int>
struct MaybeUnbacked {
  static bool Less(const Int& a, int64_t b) { return a < b; }
  static bool Differ(const Int& a, const Int& b) { return a != b; }
};

template <class Int>
struct GroupedMatmulArgs {
  Int m, k, n, groups;
  std::vector<Int> out;  // grouped_matmul: y [M, N]; the weight grad: dweight [E, K, N]
  DType biasDtype = DType::kOther;  // grouped_matmul's bias [E, N]; kOther: none
};

// grouped_matmul: a = x [M, K], b = weight [E, K, N] ([E, N, K] with transposeWeight), group_list [E],
// bias [E, N] or nullptr (its dtype per op_proto: x's for fp16/fp32, float for bf16: the A2 Matmul
// takes a half or float bias, no bfloat16 one).
// grouped_matmul_weight_grad (weightGrad): a = x [M, K], b = dy [M, N], group_list [E], no bias.
template <class Int>
GroupedMatmulArgs<Int> CheckGroupedMatmul(const OpSpec& op, const TensorArg<Int>& a, const TensorArg<Int>& b,
                                          const TensorArg<Int>& groupList, int64_t groupListType, bool transposeWeight,
                                          bool weightGrad, const NotDeduced<TensorArg<Int>>* bias = nullptr) {
  using Maybe = MaybeUnbacked<Int>;
  const char* an = op.inputs[0];
  const char* bn = op.inputs[1];
  if (groupListType != 0 && groupListType != 1)
    Fail(ArgError::kValue, op, "group_list_type must be 0 (cumulative ends) or 1 (counts), got ", groupListType);
  if (a.dim() != 2) Fail(ArgError::kValue, op, an, " must be 2-D [M, K], got shape ", a.shape);
  if (groupList.dim() != 1 || Maybe::Less(groupList.shape[0], 1))
    Fail(ArgError::kValue, op, op.inputs[2], " must be 1-D with one entry per group (at least 1), got shape ",
         groupList.shape);
  CheckDtype(op, 0, a.dtype);
  CheckDtype(op, 1, b.dtype);
  CheckDtype(op, 2, groupList.dtype);
  CheckSameDtype(op, 1, b.dtype, 0, a.dtype);
  CheckDtypes(op, {a.dtype, b.dtype, groupList.dtype});
  const Int &m = a.shape[0], &k = a.shape[1], &groups = groupList.shape[0];
  if (weightGrad) {
    if (b.dim() != 2 || b.shape[0] != m)
      Fail(ArgError::kValue, op, bn, " must be 2-D [M, N] with M = ", m, " (", an, " rows), got shape ", b.shape);
    return {m, k, b.shape[1], groups, {groups, k, b.shape[1]}};
  }
  if (b.dim() != 3 || Maybe::Differ(b.shape[0], groups))
    Fail(ArgError::kValue, op, bn, " must be 3-D [E, ", transposeWeight ? "N, K" : "K, N", "] with E = ", groups, " (",
         op.inputs[2], " entries), got shape ", b.shape);
  if ((transposeWeight ? b.shape[2] : b.shape[1]) != k)
    Fail(ArgError::kValue, op, bn, " must have K = ", k, " (", an, ".size(1)) in dim ", transposeWeight ? 2 : 1,
         " (transpose_weight=", transposeWeight ? "True" : "False", "), got shape ", b.shape);
  const Int& n = transposeWeight ? b.shape[1] : b.shape[2];
  GroupedMatmulArgs<Int> args{m, k, n, groups, {m, n}};
  if (bias == nullptr || !bias->defined) return args;
  CheckDtype(op, 3, bias->dtype);
  CheckDtypes(op, {a.dtype, b.dtype, groupList.dtype, bias->dtype});
  if (bias->dim() != 2 || Maybe::Differ(bias->shape[0], groups) || bias->shape[1] != n)
    Fail(ArgError::kValue, op, op.inputs[3], " must be 2-D [E, N] = [", groups, ", ", n, "] (", op.inputs[2],
         " entries, ", bn, "'s N), got shape ", bias->shape);
  args.biasDtype = bias->dtype;
  return args;
}

inline GroupedMatmulProblem GroupedMatmulProblemOf(const GroupedMatmulArgs<int64_t>& a, DType dtype,
                                                   int64_t groupListType, bool transposeWeight, bool weightGrad) {
  return {a.m,        a.k,        a.n, a.groups, dtype, int32_t(groupListType), transposeWeight && !weightGrad,
          weightGrad, a.biasDtype};
}

}  // namespace tiling
