// MoE routing on the CPU twin: moe_token_permute (device sort in chunks, MrgSort rounds, row
// gather) and moe_token_unpermute / moe_token_unpermute_grad, running csrc/kernels/moe_routing_*.cpp.
#include <torch/library.h>

#include <utility>

#include "moe_routing_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The routing kernels' entry points (csrc/kernels/moe_routing_*.cpp), compiled for the twin, from their lists.
MOE_ROUTING_KERNELS(ASCENDC_TWIN_KERNELS)
extern "C" void moe_merge_sorted(MOE_MERGE_SORTED_PARAMS(uint8_t*));  // one entry, no dtype

namespace ascendc_ops {
namespace {

constexpr int64_t kMaxExpertId = (int64_t(1) << 24) - 1;  // ids are sorted as exact fp32 scores

void CheckRange(const OpProto& op, const char* name, const at::Tensor& t, int64_t lo, int64_t hi) {
  if (t.numel() == 0) return;
  const auto [minT, maxT] = at::aminmax(t.to(at::kCPU));  // one pass, one host sync
  const int64_t mn = minT.item<int64_t>(), mx = maxT.item<int64_t>();
  TORCH_CHECK_VALUE(mn >= lo && mx <= hi, op.name, ": ", name, " values must be in [", lo, ", ", hi, "], got min ", mn,
                    " and max ", mx);
}

// True when every value of [0, n) occurs once in s (n = s.numel(), values already in range): the
// grad kernel then writes every row of dpermuted, so it needs no zero fill (32 MB for 8192 x 1024 fp32).
bool IsPermutation(const at::Tensor& s) {
  if (s.numel() == 0) return true;
  return at::bincount(s.to(at::kCPU).to(at::kLong), {}, s.numel()).max().item<int64_t>() == 1;
}

// restore_shape as the problem function takes it: empty when absent.
std::vector<int64_t> RestoreShape(at::OptionalIntArrayRef restoreShape) {
  return restoreShape.has_value() ? restoreShape->vec() : std::vector<int64_t>();
}

}  // namespace

PermuteLaunch PreparePermute(const OpProto& op, const at::Tensor& tokens, const at::Tensor& indices,
                             c10::optional<int64_t> numOutTokens, bool paddedMode,
                             const tiling::PlatformInfo& platform) {
  CheckSameDevice(op, {tokens, indices});
  const tiling::TensorArg<int64_t> tokensArg = Arg(tokens), indicesArg = Arg(indices);
  const tiling::PermuteArgs<int64_t> a =
      Checked(op, [&] { return tiling::CheckMoeTokenPermute(op, tokensArg, indicesArg, numOutTokens, paddedMode); });
  CheckRange(op, op.inputs[1], indices, 0, kMaxExpertId);
  PermuteLaunch l;
  l.tokens = tokens.contiguous();
  l.indices = indices.contiguous();
  l.permuted = at::empty(a.permuted, tokens.options());
  l.sortedIndices = at::empty(a.sortedIndices, indices.options().dtype(at::kInt));
  l.tiling =
      Checked(op, [&] { return tiling::TileMoeRouting(tiling::MoeRoutingProblemOf(a, tokensArg.dtype), platform); });
  return l;
}

UnpermuteLaunch PrepareUnpermute(const OpProto& op, const at::Tensor& permuted, const at::Tensor& dout,
                                 const at::Tensor& sortedIndices, const c10::optional<at::Tensor>& probs,
                                 bool paddedMode, at::OptionalIntArrayRef restoreShape, bool grad,
                                 const tiling::PlatformInfo& platform) {
  const bool hasProbs = probs.has_value() && probs->defined();
  if (grad) CheckSameDevice(op, {permuted, dout, sortedIndices});
  else CheckSameDevice(op, {permuted, sortedIndices});
  if (hasProbs)
    TORCH_CHECK_VALUE(probs->device() == permuted.device(), op.name, ": probs is on ", probs->device(),
                      " but permuted_tokens is on ", permuted.device());
  const tiling::TensorArg<int64_t> permutedArg = Arg(permuted), doutArg = Arg(dout), sortedArg = Arg(sortedIndices),
                                   probsArg = hasProbs ? Arg(*probs) : Arg(at::Tensor());
  const tiling::UnpermuteArgs<int64_t> a = Checked(op, [&] {
    return tiling::CheckMoeTokenUnpermute(op, permutedArg, grad ? &doutArg : nullptr, sortedArg,
                                          hasProbs ? &probsArg : nullptr, paddedMode, RestoreShape(restoreShape));
  });
  CheckRange(op, op.inputs[grad ? 2 : 1], sortedIndices, 0, sortedIndices.size(0) - 1);
  UnpermuteLaunch l;
  l.permuted = permuted.contiguous();
  l.sortedIndices = sortedIndices.contiguous();
  if (hasProbs) l.probs = probs->contiguous();
  if (grad) {
    l.dout = dout.contiguous();
    l.out = IsPermutation(sortedIndices) ? at::empty(a.out, permuted.options())
                                         : at::zeros(a.out, permuted.options());  // rows no index names stay 0
    l.probsGrad = at::empty(a.probsGrad, hasProbs ? probs->options() : permuted.options());
  } else {
    l.out = at::empty(a.out, permuted.options());
  }
  l.tiling =
      Checked(op, [&] { return tiling::TileMoeRouting(tiling::MoeRoutingProblemOf(a, permutedArg.dtype), platform); });
  return l;
}

namespace {

std::tuple<at::Tensor, at::Tensor> Permute(const at::Tensor& tokens, const at::Tensor& indices,
                                           c10::optional<int64_t> numOutTokens, bool paddedMode) {
  const OpProto& op = kMoeTokenPermute;
  PermuteLaunch l = PreparePermute(op, tokens, indices, numOutTokens, paddedMode, TwinPlatform());
  MoeRoutingTilingData d = l.tiling.data;
  if (d.sortLen == 0) return {l.permuted, l.sortedIndices};
  at::Tensor ws = at::empty({l.tiling.workspaceBytes}, tokens.options().dtype(at::kByte));
  uint8_t* src = Gm(ws);
  uint8_t* dst = src + d.sortLen * 8;
  uint8_t* none = nullptr;
  const auto tilingGm = reinterpret_cast<uint8_t*>(&d);
  const uint64_t unknown = AscendC::twin::kUnknownGmBytes;
  const auto& sort = PickEntry(twin_entries::moe_sort_chunks, l.indices.scalar_type());
  LaunchOnTwin(unknown, sort.name, l.tiling.sortBlocks, sort.fn, EntryArgs(Gm, l.SortTensors(src), none, tilingGm));
  uint32_t blocks = 0;
  for (int round = 0; tiling::MoeMergeRound(d, round, blocks); ++round) {
    LaunchOnTwin("moe_merge_sorted", blocks, moe_merge_sorted, src, dst, none, tilingGm);
    std::swap(src, dst);
  }
  const at::ScalarType dtype = tokens.scalar_type();
  LaunchOnTwin(unknown, "moe_token_permute", l.tiling.rowBlocks, PickEntry(twin_entries::moe_token_permute, dtype).fn,
               EntryArgs(Gm, l.GatherTensors(src), none, tilingGm));
  return {l.permuted, l.sortedIndices};
}

at::Tensor Unpermute(const at::Tensor& permuted, const at::Tensor& sortedIndices,
                     const c10::optional<at::Tensor>& probs, bool paddedMode, at::OptionalIntArrayRef restoreShape) {
  UnpermuteLaunch l = PrepareUnpermute(kMoeTokenUnpermute, permuted, at::Tensor(), sortedIndices, probs, paddedMode,
                                       restoreShape, false, TwinPlatform());
  if (l.tiling.rowBlocks == 0) return l.out;
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  // the entry for (tokens dtype, probs dtype); without probs, the tokens dtype twice
  LaunchOnTwin(AscendC::twin::kUnknownGmBytes, "moe_token_unpermute", l.tiling.rowBlocks,
               PickEntry(twin_entries::moe_token_unpermute, t, p).fn,
               EntryArgs(Gm, l.Tensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data)));
  return l.out;
}

std::tuple<at::Tensor, at::Tensor> UnpermuteGrad(const at::Tensor& permuted, const at::Tensor& dout,
                                                 const at::Tensor& sortedIndices,
                                                 const c10::optional<at::Tensor>& probs, bool paddedMode,
                                                 at::OptionalIntArrayRef restoreShape) {
  UnpermuteLaunch l = PrepareUnpermute(kMoeTokenUnpermuteGrad, permuted, dout, sortedIndices, probs, paddedMode,
                                       restoreShape, true, TwinPlatform());
  if (l.tiling.rowBlocks == 0) return {l.out, l.probsGrad};
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  LaunchOnTwin(AscendC::twin::kUnknownGmBytes, "moe_token_unpermute_grad", l.tiling.rowBlocks,
               PickEntry(twin_entries::moe_token_unpermute_grad, t, p).fn,
               EntryArgs(Gm, l.GradTensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data)));
  return {l.out, l.probsGrad};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("moe_max_topk() -> int", [] { return int64_t(MOE_MAX_TOPK); });
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the outputs' shapes.
std::tuple<at::Tensor, at::Tensor> PermuteMeta(const at::Tensor& tokens, const at::Tensor& indices,
                                               c10::optional<int64_t> numOutTokens, bool paddedMode) {
  const OpProto& op = kMoeTokenPermute;
  CheckSameDevice(op, {tokens, indices});
  const tiling::TensorArg<c10::SymInt> tokensArg = SymArg(tokens), indicesArg = SymArg(indices);
  const tiling::PermuteArgs<c10::SymInt> a =
      Checked(op, [&] { return tiling::CheckMoeTokenPermute(op, tokensArg, indicesArg, numOutTokens, paddedMode); });
  return {at::empty_symint(a.permuted, tokens.options()),
          at::empty_symint(a.sortedIndices, indices.options().dtype(at::kInt))};
}

// Both unpermute ops (dout undefined: the forward op): the outputs are (out, probsGrad).
std::tuple<at::Tensor, at::Tensor> UnpermuteMeta(const OpProto& op, const at::Tensor& permuted, const at::Tensor& dout,
                                                 const at::Tensor& sortedIndices,
                                                 const c10::optional<at::Tensor>& probs, bool paddedMode,
                                                 at::OptionalIntArrayRef restoreShape) {
  const bool grad = dout.defined(), hasProbs = probs.has_value() && probs->defined();
  if (grad) CheckSameDevice(op, {permuted, dout, sortedIndices});
  else CheckSameDevice(op, {permuted, sortedIndices});
  const tiling::TensorArg<c10::SymInt> permutedArg = SymArg(permuted), doutArg = SymArg(dout),
                                       sortedArg = SymArg(sortedIndices),
                                       probsArg = hasProbs ? SymArg(*probs) : SymArg(at::Tensor());
  const tiling::UnpermuteArgs<c10::SymInt> a = Checked(op, [&] {
    return tiling::CheckMoeTokenUnpermute(op, permutedArg, grad ? &doutArg : nullptr, sortedArg,
                                          hasProbs ? &probsArg : nullptr, paddedMode, RestoreShape(restoreShape));
  });
  at::Tensor out = at::empty_symint(a.out, permuted.options());
  if (!grad) return {out, at::Tensor()};
  return {out, at::empty_symint(a.probsGrad, hasProbs ? probs->options() : permuted.options())};
}

TORCH_LIBRARY_IMPL(custom, Meta, m) {
  m.impl("moe_token_permute", &PermuteMeta);
  m.impl("moe_token_unpermute",
         [](const at::Tensor& permuted, const at::Tensor& sortedIndices, const c10::optional<at::Tensor>& probs,
            bool paddedMode, at::OptionalIntArrayRef restoreShape) {
           return std::get<0>(UnpermuteMeta(kMoeTokenUnpermute, permuted, at::Tensor(), sortedIndices, probs,
                                            paddedMode, restoreShape));
         });
  m.impl("moe_token_unpermute_grad",
         [](const at::Tensor& permuted, const at::Tensor& dout, const at::Tensor& sortedIndices,
            const c10::optional<at::Tensor>& probs, bool paddedMode, at::OptionalIntArrayRef restoreShape) {
           return UnpermuteMeta(kMoeTokenUnpermuteGrad, permuted, dout, sortedIndices, probs, paddedMode, restoreShape);
         });
}

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  m.impl("moe_token_permute", &Permute);
  m.impl("moe_token_unpermute", &Unpermute);
  m.impl("moe_token_unpermute_grad", &UnpermuteGrad);
}

}  // namespace ascendc_ops
