// The MoE routing ops on the NPU (PrivateUse1): the CPU twin's Prepare* (csrc/torch/moe_routing_ops.h:
// checks, output allocation, tiling) with the chip's vector resources, then direct launches of
// csrc/kernels/moe_routing_*.cpp on torch_npu's current stream, in the order the twin runs them
// (permute: chunk sort, merge rounds, gather). Compiled only when CANN and torch_npu are present
// (cmake/npu.cmake).
#include <torch/library.h>

#include <utility>
#include <vector>

#include "moe_routing_ops.h"
#include "kernel_entries.h"
#include "npu_launch.h"
#include "op_proto_gen.h"

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

// The entries of csrc/kernels/moe_routing_*.cpp (their aclrtlaunch_*.h above), from their lists.
MOE_ROUTING_KERNELS(ASCENDC_NPU_KERNELS)

namespace ascendc_ops {
namespace {

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
  aclrtStream stream = npu::CurrentStream();
  npu::Enqueue(
      op.name,
      npu::LaunchOf(PickEntry(npu_entries::moe_sort_chunks, l.indices.scalar_type()).fn, l.tiling.sortBlocks, stream,
                    EntryArgs(npu::Ptr, l.SortTensors(ws.data_ptr()), nullptr, sortTiling.data_ptr())),
      [=] {
        for (const auto& [n, from, to, t] : merges)
          ACLRT_LAUNCH_KERNEL(moe_merge_sorted)(n, stream, from, to, nullptr, t);
      },
      npu::LaunchOf(PickEntry(npu_entries::moe_token_permute, tokens.scalar_type()).fn, l.tiling.rowBlocks, stream,
                    EntryArgs(npu::Ptr, l.GatherTensors(src), nullptr, sortTiling.data_ptr())));
  return {l.permuted, l.sortedIndices};  // freed device blocks are reused only in this stream's order
}

at::Tensor Unpermute(const at::Tensor& permuted, const at::Tensor& sortedIndices,
                     const c10::optional<at::Tensor>& probs, bool paddedMode, at::OptionalIntArrayRef restoreShape) {
  const OpProto& op = kMoeTokenUnpermute;
  UnpermuteLaunch l = PrepareUnpermute(op, permuted, at::Tensor(), sortedIndices, probs, paddedMode, restoreShape,
                                       false, npu::NpuPlatform());
  if (l.tiling.rowBlocks == 0) return l.out;
  const at::Tensor tiling = npu::TilingOnDevice(l.tiling.data, permuted.device());
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  npu::Enqueue(op.name,
               npu::LaunchOf(PickEntry(npu_entries::moe_token_unpermute, t, p).fn, l.tiling.rowBlocks,
                             npu::CurrentStream(), EntryArgs(npu::Ptr, l.Tensors(), nullptr, tiling.data_ptr())));
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
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  npu::Enqueue(op.name,
               npu::LaunchOf(PickEntry(npu_entries::moe_token_unpermute_grad, t, p).fn, l.tiling.rowBlocks,
                             npu::CurrentStream(), EntryArgs(npu::Ptr, l.GradTensors(), nullptr, tiling.data_ptr())));
  return {l.out, l.probsGrad};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, PrivateUse1, m) {
  m.impl("moe_token_permute", &Permute);
  m.impl("moe_token_unpermute", &Unpermute);
  m.impl("moe_token_unpermute_grad", &UnpermuteGrad);
}

}  // namespace ascendc_ops
