// The op package's one-launch entries run on the twin: the RMSNorm-family backward (row phase, SyncAll,
// dgamma phase; csrc/kernels/op_package/rms_norm/), moe_token_permute (sort, merge rounds, gather, each
// phase ended by SyncAll; op_package/moe_routing/) and cross_entropy_loss and its grad (row phase, SyncAll,
// the reduction over rows / the coefficients' sums; op_package/cross_entropy/). Each entry file is compiled here once
// per dtype combination with the DTYPE_<INPUT> macros CANN's op build defines, and launched as its op_host asks
// (csrc/op_host/<family>/<family>_host.h): the same problem function and tiling, its block count, its
// workspace behind the system workspace, KERNEL_TYPE_MIX_AIV_1_0 with every block resident.
// torch.ops.twin_one_launch.* (tests/twin/test_one_launch.py) compares them with the torch path's launches.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "kernel_utils.h"
#include "twin_launch.h"

// What the op build generates into each op's tiling header (tools/cann_stubs/op_kernel_tiling.h has
// check_cann's form): the struct the op_host wrote, copied out of GM.
#define REGISTER_TILING_DEFAULT(tiling_struct)
#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg) \
  tiling_struct tiling_data;                                                \
  CopyTiling(&tiling_data, tiling_arg)

// The kernel bodies once, before any entry is renamed (the entries re-include them, #pragma once).
#include "op_package/cross_entropy/cross_entropy_phases.h"
#include "op_package/moe_routing/moe_token_permute_one_launch.h"
#include "op_package/rms_norm/rms_norm_grad_one_launch.h"

#define ONE_LAUNCH_CAT2(op, suffix) op_package_##op##_##suffix
#define ONE_LAUNCH_CAT(op, suffix) ONE_LAUNCH_CAT2(op, suffix)
#define ONE_LAUNCH_NAME(op) ONE_LAUNCH_CAT(op, ONE_LAUNCH_SUFFIX)

// The (x, gamma) combinations of op_proto/rms_norm/*_grad.json (RMS_NORM_GRAD_DTYPES names the same five).
#define ONE_LAUNCH_SUFFIX float_float
#define DTYPE_X float
#define DTYPE_GAMMA float
#include "twin_one_launch_rms_norm_entries.h"
#define ONE_LAUNCH_SUFFIX half_float
#define DTYPE_X half
#define DTYPE_GAMMA float
#include "twin_one_launch_rms_norm_entries.h"
#define ONE_LAUNCH_SUFFIX bfloat16_float
#define DTYPE_X bfloat16_t
#define DTYPE_GAMMA float
#include "twin_one_launch_rms_norm_entries.h"
#define ONE_LAUNCH_SUFFIX half_half
#define DTYPE_X half
#define DTYPE_GAMMA half
#include "twin_one_launch_rms_norm_entries.h"
#define ONE_LAUNCH_SUFFIX bfloat16_bfloat16
#define DTYPE_X bfloat16_t
#define DTYPE_GAMMA bfloat16_t
#include "twin_one_launch_rms_norm_entries.h"

// The (tokens, indices) combinations of op_proto/moe_routing/moe_token_permute.json.
#define MOE_ONE_LAUNCH_DTYPES(X)                        \
  X(float_int32, float, int32_t, Float, Int)            \
  X(half_int32, half, int32_t, Half, Int)               \
  X(bfloat16_int32, bfloat16_t, int32_t, BFloat16, Int) \
  X(float_int64, float, int64_t, Float, Long)           \
  X(half_int64, half, int64_t, Half, Long)              \
  X(bfloat16_int64, bfloat16_t, int64_t, BFloat16, Long)
#define ONE_LAUNCH_SUFFIX float_int32
#define DTYPE_TOKENS float
#define DTYPE_INDICES int32_t
#include "twin_one_launch_moe_routing_entries.h"
#define ONE_LAUNCH_SUFFIX half_int32
#define DTYPE_TOKENS half
#define DTYPE_INDICES int32_t
#include "twin_one_launch_moe_routing_entries.h"
#define ONE_LAUNCH_SUFFIX bfloat16_int32
#define DTYPE_TOKENS bfloat16_t
#define DTYPE_INDICES int32_t
#include "twin_one_launch_moe_routing_entries.h"
#define ONE_LAUNCH_SUFFIX float_int64
#define DTYPE_TOKENS float
#define DTYPE_INDICES int64_t
#include "twin_one_launch_moe_routing_entries.h"
#define ONE_LAUNCH_SUFFIX half_int64
#define DTYPE_TOKENS half
#define DTYPE_INDICES int64_t
#include "twin_one_launch_moe_routing_entries.h"
#define ONE_LAUNCH_SUFFIX bfloat16_int64
#define DTYPE_TOKENS bfloat16_t
#define DTYPE_INDICES int64_t
#include "twin_one_launch_moe_routing_entries.h"

// The dtypes of op_proto/cross_entropy/*.json (logits and log_prob alike).
#define ONE_LAUNCH_SUFFIX float
#define DTYPE_INPUT float
#define DTYPE_LOG_PROB float
#include "twin_one_launch_cross_entropy_entries.h"
#define ONE_LAUNCH_SUFFIX half
#define DTYPE_INPUT half
#define DTYPE_LOG_PROB half
#include "twin_one_launch_cross_entropy_entries.h"
#define ONE_LAUNCH_SUFFIX bfloat16
#define DTYPE_INPUT bfloat16_t
#define DTYPE_LOG_PROB bfloat16_t
#include "twin_one_launch_cross_entropy_entries.h"

#include "cross_entropy_problem.h"
#include "kernel_entries.h"
#include "moe_routing_problem.h"
#include "moe_routing_tiling.h"
#include "op_proto_gen.h"
#include "rms_norm_problem.h"
#include "rms_norm_tiling.h"

namespace {
using ascendc_ops::kAddRmsNormGrad, ascendc_ops::kGatedRmsNormGrad, ascendc_ops::kGemmaRmsNormGrad;
using ascendc_ops::kCrossEntropyLoss, ascendc_ops::kCrossEntropyLossGrad;
using ascendc_ops::KernelEntry;
using ascendc_ops::kMoeTokenPermute, ascendc_ops::kRmsNormGrad;
using ascendc_ops::PickEntry;

// The entry tables, by dtypes: a combination whose entry was not compiled above fails to link.
#define ONE_LAUNCH_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP) \
  {at::k##TORCH_T, at::k##TORCH_G, #OP, op_package_##OP##_##SUFFIX},
#define ONE_LAUNCH_TABLE(OP, PARAMS) \
  const KernelEntry<void (*)(PARAMS(uint8_t*))> OP[] = {RMS_NORM_GRAD_DTYPES(ONE_LAUNCH_ENTRY, OP)};
// The op-package entries' parameters: inputs, outputs, workspace, tiling (op_proto order).
#define RMS_NORM_GRAD_ONE_LAUNCH(GM) GM dy, GM x, GM rstd, GM gamma, GM dx, GM dgamma, GM workspace, GM tiling
#define ADD_RMS_NORM_GRAD_ONE_LAUNCH(GM) \
  GM dy, GM x, GM rstd, GM gamma, GM dxOut, GM dx, GM dgamma, GM workspace, GM tiling
#define GATED_RMS_NORM_GRAD_ONE_LAUNCH(GM) \
  GM dy, GM x, GM rstd, GM gamma, GM z, GM dx, GM dgamma, GM dz, GM workspace, GM tiling
ONE_LAUNCH_TABLE(rms_norm_grad, RMS_NORM_GRAD_ONE_LAUNCH)
ONE_LAUNCH_TABLE(add_rms_norm_grad, ADD_RMS_NORM_GRAD_ONE_LAUNCH)
ONE_LAUNCH_TABLE(gemma_rms_norm_grad, RMS_NORM_GRAD_ONE_LAUNCH)
ONE_LAUNCH_TABLE(gated_rms_norm_grad, GATED_RMS_NORM_GRAD_ONE_LAUNCH)
#define MOE_ONE_LAUNCH_ENTRY(SUFFIX, T, I, TORCH_T, TORCH_I) \
  {at::k##TORCH_T, at::k##TORCH_I, "moe_token_permute", op_package_moe_token_permute_##SUFFIX},
const KernelEntry<void (*)(MOE_TOKEN_PERMUTE_PARAMS(uint8_t*))> moe_token_permute[] = {
    MOE_ONE_LAUNCH_DTYPES(MOE_ONE_LAUNCH_ENTRY)};

#define CE_ONE_LAUNCH_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP) \
  {at::k##TORCH_T, at::k##TORCH_G, #OP, op_package_##OP##_##SUFFIX},
#define CE_ONE_LAUNCH(GM) GM input, GM target, GM weight, GM loss, GM logProb, GM zloss, GM lse, GM workspace, GM tiling
#define CE_GRAD_ONE_LAUNCH(GM) \
  GM gradLoss, GM logProb, GM target, GM weight, GM gradZloss, GM lse, GM xGrad, GM workspace, GM tiling
const KernelEntry<void (*)(CE_ONE_LAUNCH(uint8_t*))> cross_entropy_loss[] = {
    CROSS_ENTROPY_LOSS_DTYPES(CE_ONE_LAUNCH_ENTRY, cross_entropy_loss)};
const KernelEntry<void (*)(CE_GRAD_ONE_LAUNCH(uint8_t*))> cross_entropy_loss_grad[] = {
    CROSS_ENTROPY_LOSS_GRAD_DTYPES(CE_ONE_LAUNCH_ENTRY, cross_entropy_loss_grad)};

tiling::DType DtypeOf(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return tiling::DType::kFloat32;
    case at::kHalf: return tiling::DType::kFloat16;
    case at::kBFloat16: return tiling::DType::kBFloat16;
    case at::kInt: return tiling::DType::kInt32;
    case at::kLong: return tiling::DType::kInt64;
    default: return tiling::DType::kOther;
  }
}
tiling::TensorArg<int64_t> ArgOf(const at::Tensor& t) {
  if (!t.defined()) return {{}, tiling::DType::kOther, false};
  return {t.sizes().vec(), DtypeOf(t), true};
}

// A problem function's or tiling's error as torch raises it (a ValueError naming the op).
template <class F>
auto Checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
}

uint8_t* Gm(const at::Tensor& t) { return static_cast<uint8_t*>(t.data_ptr()); }
// An optional input's GM address: null when absent, as the op package passes it.
uint8_t* GmOrNull(const c10::optional<at::Tensor>& t) { return t && t->defined() ? Gm(*t) : nullptr; }

// The launch's workspace: the system workspace, then `userBytes`, all holding 0xFF bytes (device memory is
// not cleared between ops: a phase reading what no earlier phase wrote sees NaN or huge indices).
at::Tensor Workspace(int64_t userBytes) {
  return at::full({int64_t(AscendC::twin::kSystemWorkspaceBytes) + userBytes}, 0xFF, at::kByte);
}

uint32_t gLastBlocks = 0;  // the blocks of the last launch: how many cores met at its SyncAlls

template <typename... Args>
void LaunchMix(const char* name, uint32_t blocks, void (*entry)(Args...), Args... args) {
  gLastBlocks = blocks;
  RaiseRuleErrors([&] { AscendC::twin::LaunchTyped(KERNEL_TYPE_MIX_AIV_1_0, name, blocks, entry, args...); });
}

const tiling::OpSpec& NormGradOp(const std::string& name) {
  for (const tiling::OpSpec* op : {&kRmsNormGrad, &kAddRmsNormGrad, &kGemmaRmsNormGrad, &kGatedRmsNormGrad})
    if (name == op->name) return *op;
  TORCH_CHECK_VALUE(false, "twin_one_launch.rms_norm_grad: op must be an RMSNorm-family backward op, got ", name);
}

// One of the RMSNorm-family backward ops through its op-package entry, tiled for `vectorCores` cores of
// an A2 UB as csrc/op_host/rms_norm/rms_norm_host.h's TileNormOp does: max(blockDim, reduceBlockDim)
// blocks, the fp32 partials [blockDim, hidden] as user workspace. `fifth`: add's dx_out, gated's z.
// Returns (dx, dgamma) or, gated, (dx, dgamma, dz); outputs start as NaN, so anything unwritten shows.
std::vector<at::Tensor> RmsNormGrad(c10::string_view opName, at::Tensor dy, at::Tensor x, at::Tensor rstd,
                                    at::Tensor gamma, c10::optional<at::Tensor> fifthIn, int64_t vectorCores) {
  const std::string name(opName);
  const tiling::OpSpec& op = NormGradOp(name);
  const bool gated = tiling::NormGated(op), add = name == "add_rms_norm_grad";
  TORCH_CHECK_VALUE(fifthIn.has_value() == (add || gated), name, ": dx_out / z given for the wrong op");
  dy = dy.contiguous(), x = x.contiguous(), rstd = rstd.contiguous(), gamma = gamma.contiguous();
  const at::Tensor fifth = fifthIn ? fifthIn->contiguous() : at::Tensor();
  const tiling::TensorArg<int64_t> fifthArg = ArgOf(fifth);
  const tiling::NormArgs<int64_t> a = Checked([&] {
    return tiling::CheckRmsNormGrad(op, ArgOf(dy), ArgOf(x), ArgOf(rstd), ArgOf(gamma),
                                    fifth.defined() ? &fifthArg : nullptr);
  });
  const tiling::NormTiling t = Checked([&] {
    return tiling::TileNorm(tiling::NormProblemOf(a, add, true, 0.0, tiling::NormGammaOffset(op), gated),
                            tiling::Ascend910B(uint32_t(vectorCores)));
  });
  TORCH_CHECK_VALUE(t.blockDim > 0, name, ": no rows or empty rows (the op package does not take them)");
  const uint32_t blocks = std::max(t.blockDim, t.reduceBlockDim);
  at::Tensor ws = Workspace(int64_t(t.blockDim) * a.hidden * int64_t(sizeof(float)));
  at::Tensor dx = at::full_like(x, NAN), dgamma = at::full_like(gamma, NAN);
  at::Tensor dz = gated ? at::full_like(x, NAN) : at::Tensor();
  NormTilingData data = t.data;
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(&data);
  if (add) {
    LaunchMix(name.c_str(), blocks, PickEntry(add_rms_norm_grad, x.scalar_type(), gamma.scalar_type()).fn, Gm(dy),
              Gm(x), Gm(rstd), Gm(gamma), Gm(fifth), Gm(dx), Gm(dgamma), Gm(ws), tilingGm);
  } else if (gated) {
    LaunchMix(name.c_str(), blocks, PickEntry(gated_rms_norm_grad, x.scalar_type(), gamma.scalar_type()).fn, Gm(dy),
              Gm(x), Gm(rstd), Gm(gamma), Gm(fifth), Gm(dx), Gm(dgamma), Gm(dz), Gm(ws), tilingGm);
    return {dx, dgamma, dz};
  } else {
    const auto& table = name == "rms_norm_grad" ? rms_norm_grad : gemma_rms_norm_grad;
    LaunchMix(name.c_str(), blocks, PickEntry(table, x.scalar_type(), gamma.scalar_type()).fn, Gm(dy), Gm(x), Gm(rstd),
              Gm(gamma), Gm(dx), Gm(dgamma), Gm(ws), tilingGm);
  }
  return {dx, dgamma};
}

// moe_token_permute through its op-package entry, tiled for `vectorCores` cores as
// csrc/op_host/moe_routing/moe_routing_host.h's TilePermuteOp does: rowBlocks blocks, the two pair buffers as
// user workspace. Returns (permuted_tokens, sorted_indices), both starting as garbage.
std::tuple<at::Tensor, at::Tensor> MoeTokenPermute(at::Tensor tokens, at::Tensor indices,
                                                   c10::optional<int64_t> numOutTokens, int64_t vectorCores) {
  tokens = tokens.contiguous(), indices = indices.contiguous();
  const tiling::PermuteArgs<int64_t> a = Checked([&] {
    return tiling::CheckMoeTokenPermute(kMoeTokenPermute, ArgOf(tokens), ArgOf(indices),
                                        numOutTokens ? std::optional<int64_t>(*numOutTokens) : std::nullopt, false);
  });
  const tiling::MoeRoutingTiling r = Checked([&] {
    return tiling::TileMoeRouting(tiling::MoeRoutingProblemOf(a, DtypeOf(tokens)),
                                  tiling::Ascend910B(uint32_t(vectorCores)));
  });
  TORCH_CHECK_VALUE(r.rowBlocks > 0, "moe_token_permute: no tokens (the op package does not take them)");
  at::Tensor ws = Workspace(r.workspaceBytes);
  at::Tensor permuted = at::full(a.permuted, NAN, tokens.options());
  at::Tensor sortedIndices = at::full(a.sortedIndices, -1, indices.options().dtype(at::kInt));
  MoeRoutingTilingData data = r.data;
  LaunchMix("moe_token_permute", r.rowBlocks,
            PickEntry(moe_token_permute, tokens.scalar_type(), indices.scalar_type()).fn, Gm(tokens), Gm(indices),
            Gm(permuted), Gm(sortedIndices), Gm(ws), reinterpret_cast<uint8_t*>(&data));
  return {permuted, sortedIndices};
}

tiling::CrossEntropyAttrs CeAttrs(c10::string_view reduction, int64_t ignoreIndex, double smoothing, double scale,
                                  bool returnZloss) {
  return {std::string(reduction), ignoreIndex, float(smoothing), float(scale), returnZloss};
}

// cross_entropy_loss through its op-package entry, tiled for `vectorCores` cores as
// csrc/op_host/cross_entropy/cross_entropy_host.h's TileCrossEntropyOp does: the per-row results [N, 4] and the
// blocks' 32-byte slots as user workspace. Returns (loss, log_prob, zloss, lse_for_zloss), all starting as NaN.
std::vector<at::Tensor> CrossEntropyLoss(at::Tensor input, at::Tensor target, c10::optional<at::Tensor> weight,
                                         c10::string_view reduction, int64_t ignoreIndex, double smoothing,
                                         double scale, bool returnZloss, int64_t vectorCores) {
  input = input.contiguous(), target = target.contiguous();
  if (weight) weight = weight->contiguous();
  const tiling::CrossEntropyAttrs attrs = CeAttrs(reduction, ignoreIndex, smoothing, scale, returnZloss);
  const tiling::CrossEntropyArgs<int64_t> a = Checked([&] {
    return tiling::CheckCrossEntropyLoss(kCrossEntropyLoss, ArgOf(input), ArgOf(target),
                                         ArgOf(weight ? *weight : at::Tensor()), attrs);
  });
  const tiling::CrossEntropyTiling t = Checked([&] {
    return tiling::TileCrossEntropy(tiling::CrossEntropyProblemOf(a, DtypeOf(input), weight.has_value(), false, attrs),
                                    tiling::Ascend910B(uint32_t(vectorCores)));
  });
  TORCH_CHECK_VALUE(t.blockDim > 0, "cross_entropy_loss: no rows (the op package does not take them)");
  at::Tensor ws = Workspace((a.rows * 4 * int64_t(sizeof(float)) + 31) / 32 * 32 + int64_t(t.blockDim) * 32);
  const auto nan = [&](const std::vector<int64_t>& shape) { return at::full(shape, NAN, input.options()); };
  at::Tensor loss = nan(a.loss), logProb = nan(a.logProb), zloss = nan(a.zloss), lse = nan(a.lse);
  CrossEntropyTilingData data = t.data;
  LaunchMix("cross_entropy_loss", t.blockDim, PickEntry(cross_entropy_loss, input.scalar_type()).fn, Gm(input),
            Gm(target), GmOrNull(weight), Gm(loss), Gm(logProb), Gm(zloss), Gm(lse), Gm(ws),
            reinterpret_cast<uint8_t*>(&data));
  return {loss, logProb, zloss, lse};
}

// cross_entropy_loss_grad through its op-package entry: the per-row coefficients [3, N] and the blocks' slots as
// user workspace. Returns x_grad, starting as NaN.
at::Tensor CrossEntropyLossGrad(at::Tensor gradLoss, at::Tensor logProb, at::Tensor target,
                                c10::optional<at::Tensor> weight, c10::optional<at::Tensor> gradZloss,
                                c10::optional<at::Tensor> lse, c10::string_view reduction, int64_t ignoreIndex,
                                double smoothing, double scale, int64_t vectorCores) {
  gradLoss = gradLoss.contiguous(), logProb = logProb.contiguous(), target = target.contiguous();
  for (auto* o : {&weight, &gradZloss, &lse})
    if (*o) **o = (*o)->contiguous();
  const tiling::CrossEntropyAttrs attrs = CeAttrs(reduction, ignoreIndex, smoothing, scale, false);
  const auto opt = [](const c10::optional<at::Tensor>& o) { return ArgOf(o ? *o : at::Tensor()); };
  const tiling::CrossEntropyArgs<int64_t> a = Checked([&] {
    return tiling::CheckCrossEntropyLossGrad(kCrossEntropyLossGrad, ArgOf(gradLoss), ArgOf(logProb), ArgOf(target),
                                             opt(weight), opt(gradZloss), opt(lse), attrs);
  });
  const tiling::CrossEntropyTiling t = Checked([&] {
    return tiling::TileCrossEntropy(tiling::CrossEntropyProblemOf(a, DtypeOf(logProb), weight.has_value(), true, attrs),
                                    tiling::Ascend910B(uint32_t(vectorCores)));
  });
  TORCH_CHECK_VALUE(t.blockDim > 0, "cross_entropy_loss_grad: no rows (the op package does not take them)");
  at::Tensor ws = Workspace((a.rows * 3 * int64_t(sizeof(float)) + 31) / 32 * 32 + int64_t(t.blockDim) * 32);
  at::Tensor xGrad = at::full_like(logProb, NAN);
  CrossEntropyTilingData data = t.data;
  LaunchMix("cross_entropy_loss_grad", t.blockDim, PickEntry(cross_entropy_loss_grad, logProb.scalar_type()).fn,
            Gm(gradLoss), Gm(logProb), Gm(target), GmOrNull(weight), GmOrNull(gradZloss), GmOrNull(lse), Gm(xGrad),
            Gm(ws), reinterpret_cast<uint8_t*>(&data));
  return xGrad;
}

}  // namespace

TORCH_LIBRARY(twin_one_launch, m) {
  m.def(
      "rms_norm_grad(str op, Tensor dy, Tensor x, Tensor rstd, Tensor gamma, Tensor? dx_out_or_z, int vector_cores)"
      " -> Tensor[]",
      &RmsNormGrad);
  m.def("moe_token_permute(Tensor tokens, Tensor indices, int? num_out_tokens, int vector_cores) -> (Tensor, Tensor)",
        &MoeTokenPermute);
  m.def(
      "cross_entropy_loss(Tensor input, Tensor target, Tensor? weight, str reduction, int ignore_index, "
      "float label_smoothing, float lse_square_scale_for_zloss, bool return_zloss, int vector_cores) -> Tensor[]",
      &CrossEntropyLoss);
  m.def(
      "cross_entropy_loss_grad(Tensor grad_loss, Tensor log_prob, Tensor target, Tensor? weight, "
      "Tensor? grad_zloss, Tensor? lse_for_zloss, str reduction, int ignore_index, float label_smoothing, "
      "float lse_square_scale_for_zloss, int vector_cores) -> Tensor",
      &CrossEntropyLossGrad);
  m.def("last_blocks() -> int", [] { return int64_t(gLastBlocks); });
  m.def("core_workers() -> int", [] { return int64_t(AscendC::twin::LastCoreWorkers()); });
}
