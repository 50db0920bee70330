// Fused attention on the CPU twin: fusion_attention runs the mix kernel csrc/kernels/attention.cpp as a
// typed MIX_AIC_1_2 launch (one AIC and two AIVs per core group, their cross-core flags really waiting).
#include <torch/library.h>

#include "attention_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"
#include "twin_crosscore.h"

// The kernel's entry points (csrc/kernels/attention.cpp), compiled for the twin, from their list.
ASCENDC_TWIN_KERNELS(FUSION_ATTENTION_DTYPES, fusion_attention, FUSION_ATTENTION_PARAMS)

namespace ascendc_ops {
namespace {

const OpProto& kOp = kFusionAttention;

}  // namespace

void CheckCompressedAttentionMask(const OpProto& op, const at::Tensor& attenMask, int64_t sparseMode) {
  if (!attenMask.defined() || sparseMode < 2) return;
  static const at::Tensor kTriu = at::triu(at::ones({2048, 2048}, at::kBool), 1);
  TORCH_CHECK_VALUE(at::equal(attenMask.reshape({2048, 2048}).to(at::kCPU).to(at::kBool), kTriu), op.name,
                    ": atten_mask must be triu(ones(2048, 2048), 1) for sparse_mode ", sparseMode,
                    " (the compressed causal mask), got another matrix");
}

tiling::CubePlatform TwinCubePlatform() {
  tiling::CubePlatform p = tiling::CpuTwinCube(uint32_t(at::get_num_threads()));
  uint32_t cores = 0;
  if (TilingCubeCoresOverride(&cores)) p.cubeCores = cores;
  return p;
}

FusionAttentionLaunch PrepareFusionAttention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                             const at::Tensor& attenMask, int64_t headNum,
                                             const std::string& inputLayout, double scale, int64_t preTokens,
                                             int64_t nextTokens, at::OptionalIntArrayRef actualSeqQlen,
                                             at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode,
                                             const tiling::CubePlatform& platform) {
  CheckSameDevice(kOp, {query, key, value, attenMask.defined() ? attenMask : query});  // named by position
  const auto qlen = AttentionListOf(actualSeqQlen), kvlen = AttentionListOf(actualSeqKvlen);
  const tiling::TensorArg<int64_t> q = Arg(query), k = Arg(key), v = Arg(value), mask = Arg(attenMask);
  const tiling::AttentionArgs<int64_t> args = Checked(kOp, [&] {
    return tiling::CheckFusionAttention(kOp, q, k, v, mask, headNum, inputLayout, preTokens, nextTokens,
                                        qlen ? &*qlen : nullptr, kvlen ? &*kvlen : nullptr, sparseMode);
  });
  CheckCompressedAttentionMask(kOp, attenMask, sparseMode);
  FusionAttentionLaunch l;
  l.query = query.contiguous();
  l.key = key.contiguous();
  l.value = value.contiguous();
  if (attenMask.defined()) l.mask = attenMask.contiguous();
  l.out = at::empty(args.out, query.options());
  l.softmaxMax = at::empty(args.stats, query.options().dtype(at::kFloat));
  l.softmaxSum = at::empty(args.stats, query.options().dtype(at::kFloat));
  l.tiling = Checked(kOp, [&] {
    return tiling::TileAttention(
        tiling::AttentionProblemOf(args, q.dtype, scale, preTokens, nextTokens, qlen ? &*qlen : nullptr,
                                   kvlen ? &*kvlen : nullptr, sparseMode, mask),
        platform);
  });
  l.tilingBytes = AttentionTilingBytes(l.tiling.data, l.tiling.varlenTable);
  return l;
}

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> RunOnTwin(const at::Tensor& query, const at::Tensor& key,
                                                         const at::Tensor& value, const at::Tensor& attenMask,
                                                         int64_t headNum, const std::string& inputLayout, double scale,
                                                         int64_t preTokens, int64_t nextTokens,
                                                         at::OptionalIntArrayRef actualSeqQlen,
                                                         at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode) {
  FusionAttentionLaunch l =
      PrepareFusionAttention(query, key, value, attenMask, headNum, inputLayout, scale, preTokens, nextTokens,
                             actualSeqQlen, actualSeqKvlen, sparseMode, TwinCubePlatform());
  if (l.tiling.blockDim == 0) return {l.out, l.softmaxMax, l.softmaxSum};
  // the system workspace, then the groups' S / P / O slots (GetUserWorkspace)
  at::Tensor workspace =
      at::empty({int64_t(AscendC::twin::kSystemWorkspaceBytes) + l.tiling.workspaceBytes}, at::kByte);
  uint8_t* maskGm = l.mask.defined() ? Gm(l.mask) : nullptr;
  const auto& entry = PickEntry(twin_entries::fusion_attention, l.query.scalar_type());
  LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, l.tiling.blockDim, entry.fn, Gm(l.query), Gm(l.key),
                    Gm(l.value), maskGm, Gm(l.out), Gm(l.softmaxMax), Gm(l.softmaxSum), Gm(workspace),
                    Gm(l.tilingBytes));
  return {l.out, l.softmaxMax, l.softmaxSum};
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the outputs' shapes.
std::tuple<at::Tensor, at::Tensor, at::Tensor> FusionAttentionMeta(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& attenMask,
    int64_t headNum, const std::string& inputLayout, double scale, int64_t preTokens, int64_t nextTokens,
    at::OptionalIntArrayRef actualSeqQlen, at::OptionalIntArrayRef actualSeqKvlen, int64_t sparseMode) {
  CheckSameDevice(kOp, {query, key, value, attenMask.defined() ? attenMask : query});  // named by position
  const auto qlen = AttentionListOf(actualSeqQlen), kvlen = AttentionListOf(actualSeqKvlen);
  const tiling::TensorArg<c10::SymInt> q = SymArg(query), k = SymArg(key), v = SymArg(value), mask = SymArg(attenMask);
  const tiling::AttentionArgs<c10::SymInt> args = Checked(kOp, [&] {
    return tiling::CheckFusionAttention(kOp, q, k, v, mask, headNum, inputLayout, preTokens, nextTokens,
                                        qlen ? &*qlen : nullptr, kvlen ? &*kvlen : nullptr, sparseMode);
  });
  (void)scale;
  return {at::empty_symint(args.out, query.options()), at::empty_symint(args.stats, query.options().dtype(at::kFloat)),
          at::empty_symint(args.stats, query.options().dtype(at::kFloat))};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplFusionAttention<&FusionAttentionMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplFusionAttention<&RunOnTwin>(m); }

}  // namespace ascendc_ops
