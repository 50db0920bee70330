// The MoE ops on the NPU (PrivateUse1): the CPU twin's Prepare* (csrc/torch/moe_ops.h: checks,
// output allocation, tiling) with the chip's cube / vector resources, then direct launches of
// csrc/kernels/grouped_matmul*.cpp and moe_token_*.cpp on torch_npu's current stream, in the order
// the twin runs them (permute: chunk sort, merge rounds, gather). Compiled only when CANN and
// torch_npu are present (cmake/npu.cmake).
#include <torch/library.h>

#include <utility>
#include <vector>

#include "moe_ops.h"
#include "npu_launch.h"
#include "op_proto_gen.h"

#include "aclrtlaunch_grouped_matmul_bfloat16.h"
#include "aclrtlaunch_grouped_matmul_float.h"
#include "aclrtlaunch_grouped_matmul_half.h"
#include "aclrtlaunch_grouped_matmul_weight_grad_bfloat16.h"
#include "aclrtlaunch_grouped_matmul_weight_grad_float.h"
#include "aclrtlaunch_grouped_matmul_weight_grad_half.h"
#include "aclrtlaunch_moe_merge_sorted.h"
#include "aclrtlaunch_moe_sort_chunks_int32.h"
#include "aclrtlaunch_moe_sort_chunks_int64.h"
#include "aclrtlaunch_moe_token_permute_bfloat16.h"
#include "aclrtlaunch_moe_token_permute_float.h"
#include "aclrtlaunch_moe_token_permute_half.h"
#include "aclrtlaunch_moe_token_unpermute_bfloat16_bfloat16.h"
#include "aclrtlaunch_moe_token_unpermute_bfloat16_float.h"
#include "aclrtlaunch_moe_token_unpermute_float_float.h"
#include "aclrtlaunch_moe_token_unpermute_half_float.h"
#include "aclrtlaunch_moe_token_unpermute_half_half.h"
#include "aclrtlaunch_moe_token_unpermute_grad_bfloat16_bfloat16.h"
#include "aclrtlaunch_moe_token_unpermute_grad_bfloat16_float.h"
#include "aclrtlaunch_moe_token_unpermute_grad_float_float.h"
#include "aclrtlaunch_moe_token_unpermute_grad_half_float.h"
#include "aclrtlaunch_moe_token_unpermute_grad_half_half.h"

namespace ascendc_ops {
namespace {

// Calls KERNEL_<suffix> for the tokens dtype (and, for unpermute, the probs dtype) of the op's JSON.
#define BY_DTYPE(KERNEL, t, ...)                                                \
  do {                                                                          \
    if ((t) == at::kFloat) ACLRT_LAUNCH_KERNEL(KERNEL##_float)(__VA_ARGS__);    \
    else if ((t) == at::kHalf) ACLRT_LAUNCH_KERNEL(KERNEL##_half)(__VA_ARGS__); \
    else ACLRT_LAUNCH_KERNEL(KERNEL##_bfloat16)(__VA_ARGS__);                   \
  } while (0)
#define BY_DTYPE_PAIR(KERNEL, t, p, ...)                                                                   \
  do {                                                                                                     \
    if ((t) == at::kFloat) ACLRT_LAUNCH_KERNEL(KERNEL##_float_float)(__VA_ARGS__);                         \
    else if ((t) == at::kHalf && (p) == at::kFloat) ACLRT_LAUNCH_KERNEL(KERNEL##_half_float)(__VA_ARGS__); \
    else if ((t) == at::kHalf) ACLRT_LAUNCH_KERNEL(KERNEL##_half_half)(__VA_ARGS__);                       \
    else if ((p) == at::kFloat) ACLRT_LAUNCH_KERNEL(KERNEL##_bfloat16_float)(__VA_ARGS__);                 \
    else ACLRT_LAUNCH_KERNEL(KERNEL##_bfloat16_bfloat16)(__VA_ARGS__);                                     \
  } while (0)

at::Tensor RunGroupedMatmul(const OpProto& op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& groupList,
                            int64_t groupListType, bool transposeWeight, bool weightGrad) {
  GroupedMatmulLaunch l =
      PrepareGroupedMatmul(op, a, b, groupList, groupListType, transposeWeight, weightGrad, npu::NpuCubePlatform());
  if (l.tiling.blockDim == 0) return l.out;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, a.device());
  const at::Tensor workspace = npu::SysWorkspace(a.device());
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType dtype = l.a.scalar_type();
  void *ap = l.a.data_ptr(), *bp = l.b.data_ptr(), *gp = l.groupList.data_ptr(), *op_ = l.out.data_ptr(),
       *wp = workspace.data_ptr(), *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    if (weightGrad) BY_DTYPE(grouped_matmul_weight_grad, dtype, blocks, stream, ap, bp, gp, op_, wp, tp);
    else BY_DTYPE(grouped_matmul, dtype, blocks, stream, ap, bp, gp, op_, wp, tp);
  });
  return l.out;
}

at::Tensor GroupedMatmul(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& groupList,
                         int64_t groupListType, bool transposeWeight) {
  return RunGroupedMatmul(kGroupedMatmul, x, weight, groupList, groupListType, transposeWeight, false);
}
at::Tensor GroupedMatmulWeightGrad(const at::Tensor& x, const at::Tensor& dy, const at::Tensor& groupList,
                                   int64_t groupListType) {
  return RunGroupedMatmul(kGroupedMatmulWeightGrad, x, dy, groupList, groupListType, false, true);
}

std::tuple<at::Tensor, at::Tensor> Permute(const at::Tensor& tokens, const at::Tensor& indices,
                                           c10::optional<int64_t> numOutTokens, bool paddedMode) {
  const OpProto& op = kMoeTokenPermute;
  PermuteLaunch l = PreparePermute(op, tokens, indices, numOutTokens, paddedMode, npu::NpuPlatform());
  MoeRoutingTilingData d = l.tiling.data;
  if (d.sortLen == 0) return {l.permuted, l.sortedIndices};
  const at::Device device = tokens.device();
  // Two buffers of (score, index) pairs, swapped after every merge round; each round reads its
  // own tiling (list length and count), so each is a separate device copy.
  const at::Tensor ws = at::empty({l.tiling.workspaceBytes}, tokens.options().dtype(at::kByte));
  const at::Tensor sortTiling = npu::TilingOnDevice(d, device);
  std::vector<std::pair<uint32_t, at::Tensor>> rounds;
  uint32_t blocks = 0;
  for (int round = 0; tiling::MoeMergeRound(d, round, blocks); ++round)
    rounds.emplace_back(blocks, npu::TilingOnDevice(d, device));
  uint8_t* src = static_cast<uint8_t*>(ws.data_ptr());
  uint8_t* dst = src + d.sortLen * 8;
  std::vector<std::tuple<uint32_t, void*, void*, void*>> merges;  // blocks, src, dst, tiling
  for (const auto& [n, t] : rounds) {
    merges.emplace_back(n, src, dst, t.data_ptr());
    std::swap(src, dst);
  }
  const bool int32Ids = l.indices.scalar_type() == at::kInt;
  const at::ScalarType dtype = tokens.scalar_type();
  const uint32_t sortBlocks = l.tiling.sortBlocks, rowBlocks = l.tiling.rowBlocks;
  void *tp = sortTiling.data_ptr(), *ip = l.indices.data_ptr(), *xp = l.tokens.data_ptr(), *pp = l.permuted.data_ptr(),
       *sp = l.sortedIndices.data_ptr(), *pairs0 = ws.data_ptr(), *sorted = src;
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    if (int32Ids) ACLRT_LAUNCH_KERNEL(moe_sort_chunks_int32)(sortBlocks, stream, ip, pairs0, nullptr, tp);
    else ACLRT_LAUNCH_KERNEL(moe_sort_chunks_int64)(sortBlocks, stream, ip, pairs0, nullptr, tp);
    for (const auto& [n, from, to, t] : merges) ACLRT_LAUNCH_KERNEL(moe_merge_sorted)(n, stream, from, to, nullptr, t);
    BY_DTYPE(moe_token_permute, dtype, rowBlocks, stream, xp, sorted, pp, sp, nullptr, tp);
  });
  return {l.permuted, l.sortedIndices};  // freed device blocks are reused only in this stream's order
}

at::Tensor Unpermute(const at::Tensor& permuted, const at::Tensor& sortedIndices,
                     const c10::optional<at::Tensor>& probs, bool paddedMode, at::OptionalIntArrayRef restoreShape) {
  const OpProto& op = kMoeTokenUnpermute;
  UnpermuteLaunch l = PrepareUnpermute(op, permuted, at::Tensor(), sortedIndices, probs, paddedMode, restoreShape,
                                       false, npu::NpuPlatform());
  if (l.tiling.rowBlocks == 0) return l.out;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, permuted.device());
  const uint32_t blocks = l.tiling.rowBlocks;
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  void *xp = l.permuted.data_ptr(), *sp = l.sortedIndices.data_ptr(), *pp = npu::Ptr(l.probs), *op_ = l.out.data_ptr(),
       *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name,
               [=] { BY_DTYPE_PAIR(moe_token_unpermute, t, p, blocks, stream, xp, sp, pp, op_, nullptr, tp); });
  return l.out;
}

std::tuple<at::Tensor, at::Tensor> UnpermuteGrad(const at::Tensor& permuted, const at::Tensor& dout,
                                                 const at::Tensor& sortedIndices,
                                                 const c10::optional<at::Tensor>& probs, bool paddedMode,
                                                 at::OptionalIntArrayRef restoreShape) {
  const OpProto& op = kMoeTokenUnpermuteGrad;
  UnpermuteLaunch l =
      PrepareUnpermute(op, permuted, dout, sortedIndices, probs, paddedMode, restoreShape, true, npu::NpuPlatform());
  if (l.tiling.rowBlocks == 0) return {l.out, l.probsGrad};
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, permuted.device());
  const uint32_t blocks = l.tiling.rowBlocks;
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  void *xp = l.permuted.data_ptr(), *dp = l.dout.data_ptr(), *sp = l.sortedIndices.data_ptr(), *pp = npu::Ptr(l.probs),
       *op_ = l.out.data_ptr(), *gp = l.probs.defined() ? l.probsGrad.data_ptr() : nullptr, *tp = tiling.data_ptr();
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(op.name, [=] {
    BY_DTYPE_PAIR(moe_token_unpermute_grad, t, p, blocks, stream, xp, dp, sp, pp, op_, gp, nullptr, tp);
  });
  return {l.out, l.probsGrad};
}

#undef BY_DTYPE
#undef BY_DTYPE_PAIR

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  m.impl("grouped_matmul", &GroupedMatmul);
  m.impl("grouped_matmul_weight_grad", &GroupedMatmulWeightGrad);
  m.impl("moe_token_permute", &Permute);
  m.impl("moe_token_unpermute", &Unpermute);
  m.impl("moe_token_unpermute_grad", &UnpermuteGrad);
}

}  // namespace ascendc_ops
