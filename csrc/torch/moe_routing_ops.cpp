// MoE routing on the CPU twin: moe_token_permute (device sort in chunks, MrgSort rounds, row
// gather) and moe_token_unpermute / moe_token_unpermute_grad, running csrc/kernels/moe_routing_*.cpp.
#include <torch/library.h>

#include <utility>

#include "moe_routing_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The routing kernels' entry points (csrc/kernels/moe_routing_*.cpp), compiled for the twin, from their lists.
ASCENDC_TWIN_KERNELS(MOE_SORT_CHUNKS_DTYPES, moe_sort_chunks, MOE_SORT_CHUNKS_PARAMS)
ASCENDC_TWIN_KERNELS(MOE_TOKEN_PERMUTE_DTYPES, moe_token_permute, MOE_TOKEN_PERMUTE_PARAMS)
ASCENDC_TWIN_KERNELS(MOE_TOKEN_UNPERMUTE_DTYPES, moe_token_unpermute, MOE_TOKEN_UNPERMUTE_PARAMS)
ASCENDC_TWIN_KERNELS(MOE_TOKEN_UNPERMUTE_GRAD_DTYPES, moe_token_unpermute_grad, MOE_TOKEN_UNPERMUTE_GRAD_PARAMS)
extern "C" void moe_merge_sorted(MOE_MERGE_SORTED_PARAMS(uint8_t*));  // one entry, no dtype

namespace ascendc_ops {
namespace {

constexpr int64_t kMaxTopK = MOE_MAX_TOPK;  // tiling/moe_routing_tiling_data.h
constexpr int64_t kMaxExpertId = (int64_t(1) << 24) - 1;  // ids are sorted as exact fp32 scores

void CheckNotPadded(const OpProto& op, bool paddedMode) {
  TORCH_CHECK_VALUE(!paddedMode, op.name,
                    ": padded_mode=True is not supported (as on the NPU); pass padded_mode=False");
}

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

tiling::MoeRoutingTiling Tile(const OpProto& op, const tiling::MoeRoutingProblem& p,
                              const tiling::PlatformInfo& platform) {
  try {
    return tiling::TileMoeRouting(p, platform);
  } catch (const tiling::TilingError& e) {
    TORCH_CHECK_VALUE(false, op.name, ": ", e.what());
  }
  return {};
}

}  // namespace

PermuteLaunch PreparePermute(const OpProto& op, const at::Tensor& tokens, const at::Tensor& indices,
                             c10::optional<int64_t> numOutTokens, bool paddedMode,
                             const tiling::PlatformInfo& platform) {
  CheckSameDevice(op, {tokens, indices});
  CheckNotPadded(op, paddedMode);
  TORCH_CHECK_VALUE(tokens.dim() == 2, op.name, ": tokens must be 2-D [T, H], got shape ", ShapeString(tokens));
  TORCH_CHECK_VALUE(indices.dim() == 1 || indices.dim() == 2, op.name, ": indices must be [T, topK] or [T], got shape ",
                    ShapeString(indices));
  const int64_t t = tokens.size(0), h = tokens.size(1);
  const int64_t k = indices.dim() == 2 ? indices.size(1) : 1;
  TORCH_CHECK_VALUE(indices.size(0) == t, op.name, ": indices must have T = ", t, " rows (tokens.size(0)), got shape ",
                    ShapeString(indices));
  TORCH_CHECK_VALUE(k >= 1 && k <= kMaxTopK, op.name, ": topK (indices.size(1)) must be in [1, ", kMaxTopK, "], got ",
                    k);
  CheckDtypes(op, {tokens, indices});
  CheckRange(op, "indices", indices, 0, kMaxExpertId);
  const int64_t n = t * k;
  int64_t numOut = n;
  if (numOutTokens.has_value()) {
    TORCH_CHECK_VALUE(*numOutTokens >= 0, op.name, ": num_out_tokens must be >= 0 (0: keep all), got ", *numOutTokens);
    if (*numOutTokens > 0) numOut = std::min(*numOutTokens, n);
  }
  PermuteLaunch l;
  l.tokens = tokens.contiguous();
  l.indices = indices.contiguous();
  l.permuted = at::empty({numOut, h}, tokens.options());
  l.sortedIndices = at::empty({n}, indices.options().dtype(at::kInt));
  l.tiling = Tile(op, {t, k, h, numOut, TilingDtype(tokens.scalar_type()), false, false}, platform);
  return l;
}

UnpermuteLaunch PrepareUnpermute(const OpProto& op, const at::Tensor& permuted, const at::Tensor& dout,
                                 const at::Tensor& sortedIndices, const c10::optional<at::Tensor>& probs,
                                 bool paddedMode, at::OptionalIntArrayRef restoreShape, bool grad,
                                 const tiling::PlatformInfo& platform) {
  const bool hasProbs = probs.has_value() && probs->defined();
  const size_t sIdx = grad ? 2 : 1, pIdx = grad ? 3 : 2;
  CheckNotPadded(op, paddedMode);
  TORCH_CHECK_VALUE(permuted.dim() == 2, op.name, ": permuted_tokens must be 2-D [rows, H], got shape ",
                    ShapeString(permuted));
  TORCH_CHECK_VALUE(sortedIndices.dim() == 1, op.name, ": sorted_indices must be 1-D [T * topK], got shape ",
                    ShapeString(sortedIndices));
  const int64_t rows = permuted.size(0), h = permuted.size(1), n = sortedIndices.size(0);
  int64_t t, k;
  if (hasProbs) {
    TORCH_CHECK_VALUE(probs->dim() == 2 && probs->numel() == n, op.name,
                      ": probs must be 2-D [T, topK] with T * topK = ", n, " (sorted_indices length), got shape ",
                      ShapeString(*probs));
    t = probs->size(0), k = probs->size(1);
  } else if (restoreShape.has_value() && !restoreShape->empty()) {
    TORCH_CHECK_VALUE(
        restoreShape->size() == 2 && (*restoreShape)[0] > 0 && n % (*restoreShape)[0] == 0 && (*restoreShape)[1] == h,
        op.name, ": restore_shape must be [T, H] with H = ", h, " and T dividing ", n, " (sorted_indices length), got ",
        *restoreShape);
    t = (*restoreShape)[0], k = n / t;
  } else {
    t = n, k = 1;
  }
  TORCH_CHECK_VALUE(k <= kMaxTopK, op.name, ": topK must be at most ", kMaxTopK, ", got ", k);
  TORCH_CHECK_VALUE(rows <= n, op.name, ": permuted_tokens has ", rows, " rows, more than the ", n,
                    " entries of sorted_indices");
  if (grad) {
    CheckSameDevice(op, {permuted, dout, sortedIndices});
    TORCH_CHECK_VALUE(dout.dim() == 2 && dout.size(0) == t && dout.size(1) == h, op.name,
                      ": unpermuted_tokens_grad must have shape [", t, ", ", h, "], got ", ShapeString(dout));
  } else {
    CheckSameDevice(op, {permuted, sortedIndices});
  }
  CheckDtype(op, 0, permuted);
  CheckDtype(op, sIdx, sortedIndices);
  if (grad)
    TORCH_CHECK_TYPE(dout.scalar_type() == permuted.scalar_type(), op.name, ": unpermuted_tokens_grad must have ",
                     "permuted_tokens' dtype ", permuted.scalar_type(), ", got ", dout.scalar_type());
  if (hasProbs) {
    CheckDtype(op, pIdx, *probs);
    TORCH_CHECK_VALUE(probs->device() == permuted.device(), op.name, ": probs is on ", probs->device(),
                      " but permuted_tokens is on ", permuted.device());
    if (grad) CheckDtypes(op, {permuted, dout, sortedIndices, *probs});
    else CheckDtypes(op, {permuted, sortedIndices, *probs});
  }
  CheckRange(op, "sorted_indices", sortedIndices, 0, n - 1);
  UnpermuteLaunch l;
  l.permuted = permuted.contiguous();
  l.sortedIndices = sortedIndices.contiguous();
  if (hasProbs) l.probs = probs->contiguous();
  if (grad) {
    l.dout = dout.contiguous();
    l.out = IsPermutation(sortedIndices) ? at::empty({rows, h}, permuted.options())
                                         : at::zeros({rows, h}, permuted.options());  // rows no index names stay 0
    l.probsGrad = hasProbs ? at::empty({t, k}, probs->options()) : at::empty({0}, permuted.options());
  } else {
    l.out = at::empty({t, h}, permuted.options());
  }
  l.tiling = Tile(op, {t, k, h, rows, TilingDtype(permuted.scalar_type()), hasProbs, true}, platform);
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
  const auto& sort = PickEntry(twin_entries::moe_sort_chunks, l.indices.scalar_type());
  LaunchOnTwin(sort.name, l.tiling.sortBlocks, sort.fn, Gm(l.indices), src, none, tilingGm);
  uint32_t blocks = 0;
  for (int round = 0; tiling::MoeMergeRound(d, round, blocks); ++round) {
    LaunchOnTwin("moe_merge_sorted", blocks, moe_merge_sorted, src, dst, none, tilingGm);
    std::swap(src, dst);
  }
  const at::ScalarType dtype = tokens.scalar_type();
  LaunchOnTwin("moe_token_permute", l.tiling.rowBlocks, PickEntry(twin_entries::moe_token_permute, dtype).fn,
               Gm(l.tokens), src, Gm(l.permuted), Gm(l.sortedIndices), none, tilingGm);
  return {l.permuted, l.sortedIndices};
}

at::Tensor Unpermute(const at::Tensor& permuted, const at::Tensor& sortedIndices,
                     const c10::optional<at::Tensor>& probs, bool paddedMode, at::OptionalIntArrayRef restoreShape) {
  UnpermuteLaunch l = PrepareUnpermute(kMoeTokenUnpermute, permuted, at::Tensor(), sortedIndices, probs, paddedMode,
                                       restoreShape, false, TwinPlatform());
  if (l.tiling.rowBlocks == 0) return l.out;
  const at::ScalarType t = l.permuted.scalar_type(), p = l.probs.defined() ? l.probs.scalar_type() : t;
  // the entry for (tokens dtype, probs dtype); without probs, the tokens dtype twice
  const auto kernel = PickEntry(twin_entries::moe_token_unpermute, t, p).fn;
  uint8_t* probsGm = l.probs.defined() ? Gm(l.probs) : nullptr;
  LaunchOnTwin("moe_token_unpermute", l.tiling.rowBlocks, kernel, Gm(l.permuted), Gm(l.sortedIndices), probsGm,
               Gm(l.out), static_cast<uint8_t*>(nullptr), reinterpret_cast<uint8_t*>(&l.tiling.data));
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
  const auto kernel = PickEntry(twin_entries::moe_token_unpermute_grad, t, p).fn;
  uint8_t* probsGm = l.probs.defined() ? Gm(l.probs) : nullptr;
  uint8_t* dprobsGm = l.probs.defined() ? Gm(l.probsGrad) : nullptr;
  LaunchOnTwin("moe_token_unpermute_grad", l.tiling.rowBlocks, kernel, Gm(l.permuted), Gm(l.dout), Gm(l.sortedIndices),
               probsGm, Gm(l.out), dprobsGm, static_cast<uint8_t*>(nullptr),
               reinterpret_cast<uint8_t*>(&l.tiling.data));
  return {l.out, l.probsGrad};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("moe_max_topk() -> int", [] { return int64_t(MOE_MAX_TOPK); });
}

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  m.impl("moe_token_permute", &Permute);
  m.impl("moe_token_unpermute", &Unpermute);
  m.impl("moe_token_unpermute_grad", &UnpermuteGrad);
}

}  // namespace ascendc_ops
