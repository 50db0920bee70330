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

// Devices, then the problem function on concrete (Meta: symbolic) shapes, which also reads sparse_mode 2-4's mask
// values where they are on hand.
template <class Int>
tiling::AttentionArgs<Int> CheckForward(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                        const at::Tensor& attenMask, const at::Tensor& sink, const at::Tensor& dropMask,
                                        const tiling::AttentionAttrs& attrs) {
  CheckSameDevice(kOp, {query, key, value, attenMask.defined() ? attenMask : query, sink.defined() ? sink : query,
                        dropMask.defined() ? dropMask : query});  // named by position
  at::Tensor hostMask;
  return tiling::CheckFusionAttention(kOp, ArgOf<Int>(query), ArgOf<Int>(key), ArgOf<Int>(value), ArgOf<Int>(attenMask),
                                      attrs, AttentionMaskBytesOf<Int>(attenMask, hostMask), 3, ArgOf<Int>(sink),
                                      ArgOf<Int>(dropMask));
}

}  // namespace

FusionAttentionLaunch PrepareFusionAttention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                             const at::Tensor& attenMask, const at::Tensor& sink,
                                             const at::Tensor& dropMask, const tiling::AttentionAttrs& attrs,
                                             const tiling::CubePlatform& platform) {
  FusionAttentionLaunch l;
  const tiling::AttentionArgs<int64_t> args = Checked(kOp, [&] {
    const tiling::AttentionArgs<int64_t> a = CheckForward<int64_t>(query, key, value, attenMask, sink, dropMask, attrs);
    l.tiling = tiling::TileAttention(tiling::AttentionProblemOf(a), platform);
    return a;
  });
  l.query = query.contiguous();
  l.key = key.contiguous();
  l.value = value.contiguous();
  if (attenMask.defined()) l.mask = attenMask.contiguous();
  if (sink.defined()) l.sink = sink.contiguous();
  if (args.dropout) l.dropMask = dropMask.contiguous();  // read only below keep_prob 1
  l.out = at::empty(args.out, query.options());
  l.softmaxMax = at::empty(args.stats, query.options().dtype(at::kFloat));
  l.softmaxSum = at::empty(args.stats, query.options().dtype(at::kFloat));
  l.tilingBytes = AttentionTilingBytes(l.tiling.data, l.tiling.varlenTable);
  return l;
}

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> RunOnTwin(const at::Tensor& query, const at::Tensor& key,
                                                         const at::Tensor& value, const at::Tensor& attenMask,
                                                         const at::Tensor& sink, const at::Tensor& dropMask,
                                                         const tiling::AttentionAttrs& attrs) {
  FusionAttentionLaunch l =
      PrepareFusionAttention(query, key, value, attenMask, sink, dropMask, attrs, TwinCubePlatform());
  if (l.tiling.blockDim == 0) return {l.out, l.softmaxMax, l.softmaxSum};
  // the system workspace, then the groups' S / P / O slots (GetUserWorkspace)
  at::Tensor workspace =
      at::empty({int64_t(AscendC::twin::kSystemWorkspaceBytes) + l.tiling.workspaceBytes}, at::kByte);
  const auto& entry = PickEntry(twin_entries::fusion_attention, l.query.scalar_type());
  LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, l.tiling.blockDim, entry.fn,
                    EntryArgs(Gm, l.Tensors(), Gm(workspace), Gm(l.tilingBytes)));
  return {l.out, l.softmaxMax, l.softmaxSum};
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the outputs' shapes.
std::tuple<at::Tensor, at::Tensor, at::Tensor> FusionAttentionMeta(const at::Tensor& query, const at::Tensor& key,
                                                                   const at::Tensor& value, const at::Tensor& attenMask,
                                                                   const at::Tensor& sink, const at::Tensor& dropMask,
                                                                   const tiling::AttentionAttrs& attrs) {
  const tiling::AttentionArgs<c10::SymInt> args =
      Checked(kOp, [&] { return CheckForward<c10::SymInt>(query, key, value, attenMask, sink, dropMask, attrs); });
  return {at::empty_symint(args.out, query.options()), at::empty_symint(args.stats, query.options().dtype(at::kFloat)),
          at::empty_symint(args.stats, query.options().dtype(at::kFloat))};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplFusionAttention<&FusionAttentionMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplFusionAttention<&RunOnTwin>(m); }

}  // namespace ascendc_ops
