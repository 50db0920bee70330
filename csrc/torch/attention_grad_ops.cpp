// Fused attention backward on the CPU twin: fusion_attention_grad runs the two-pass mix kernel
// csrc/kernels/attention_grad.cpp as a typed MIX_AIC_1_2 launch (one AIC and two AIVs per core group), after the
// forward's checks and the backward's own (dy / attention_in as attention_out, the statistics as the forward's).
#include <torch/library.h>

#include "attention_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"
#include "twin_crosscore.h"

// The kernel's entry points (csrc/kernels/attention_grad.cpp), compiled for the twin, from their list.
ASCENDC_TWIN_KERNELS(FUSION_ATTENTION_GRAD_DTYPES, fusion_attention_grad, FUSION_ATTENTION_GRAD_PARAMS)

namespace ascendc_ops {
namespace {

const OpProto& kOp = kFusionAttentionGrad;

// Devices, then the problem function on concrete (Meta: symbolic) shapes, which also reads sparse_mode 2-4's mask
// values where they are on hand.
template <class Int>
tiling::AttentionArgs<Int> CheckGrad(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                     const at::Tensor& dy, const at::Tensor& softmaxMax, const at::Tensor& softmaxSum,
                                     const at::Tensor& attentionIn, const at::Tensor& attenMask,
                                     const at::Tensor& dropMask, const at::Tensor& sink,
                                     const tiling::AttentionAttrs& attrs) {
  // in the prototype's input order, which names them (an absent tensor stands in as query)
  const auto given = [&](const at::Tensor& t) { return t.defined() ? t : query; };
  CheckSameDevice(kOp, {query, key, value, dy, given(attenMask), softmaxMax, softmaxSum, attentionIn, given(dropMask),
                        given(sink)});
  at::Tensor hostMask;
  return tiling::CheckFusionAttentionGrad(
      kOp, ArgOf<Int>(query), ArgOf<Int>(key), ArgOf<Int>(value), ArgOf<Int>(dy), ArgOf<Int>(attenMask),
      ArgOf<Int>(softmaxMax), ArgOf<Int>(softmaxSum), ArgOf<Int>(attentionIn), attrs,
      AttentionMaskBytesOf<Int>(attenMask, hostMask), ArgOf<Int>(dropMask), ArgOf<Int>(sink));
}

}  // namespace

FusionAttentionGradLaunch PrepareFusionAttentionGrad(const at::Tensor& query, const at::Tensor& key,
                                                     const at::Tensor& value, const at::Tensor& dy,
                                                     const at::Tensor& softmaxMax, const at::Tensor& softmaxSum,
                                                     const at::Tensor& attentionIn, const at::Tensor& attenMask,
                                                     const at::Tensor& dropMask, const at::Tensor& sink,
                                                     const tiling::AttentionAttrs& attrs,
                                                     const tiling::CubePlatform& platform) {
  FusionAttentionGradLaunch l;
  bool dropout = false;
  Checked(kOp, [&] {
    const tiling::AttentionArgs<int64_t> a = CheckGrad<int64_t>(query, key, value, dy, softmaxMax, softmaxSum,
                                                                attentionIn, attenMask, dropMask, sink, attrs);
    l.tiling = tiling::TileAttentionGrad(tiling::AttentionProblemOf(a), platform);
    dropout = a.dropout;
  });
  // no task to launch (no rows at all): every gradient is an empty sum, 0
  const auto alloc = [&](const at::Tensor& like) {
    return l.tiling.blockDim == 0 ? at::zeros(like.sizes(), like.options()) : at::empty(like.sizes(), like.options());
  };
  l.dq = alloc(query);
  l.dk = alloc(key);
  l.dv = alloc(value);
  l.dsink = sink.defined() ? alloc(sink) : at::empty({0}, query.options().dtype(at::kFloat));
  if (l.tiling.blockDim == 0) return l;
  l.query = query.contiguous();
  l.key = key.contiguous();
  l.value = value.contiguous();
  l.dy = dy.contiguous();
  l.softmaxMax = softmaxMax.contiguous();
  l.softmaxSum = softmaxSum.contiguous();
  l.attentionIn = attentionIn.contiguous();
  if (attenMask.defined()) l.mask = attenMask.contiguous();
  if (dropout) l.dropMask = dropMask.contiguous();  // read only below keep_prob 1
  if (sink.defined()) l.sink = sink.contiguous();
  l.tilingBytes = AttentionTilingBytes(l.tiling.data, l.tiling.varlenTable);
  return l;
}

namespace {

FusionAttentionGradResult RunOnTwin(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                    const at::Tensor& dy, const at::Tensor& softmaxMax, const at::Tensor& softmaxSum,
                                    const at::Tensor& attentionIn, const at::Tensor& attenMask,
                                    const at::Tensor& dropMask, const at::Tensor& sink,
                                    const tiling::AttentionAttrs& attrs) {
  FusionAttentionGradLaunch l = PrepareFusionAttentionGrad(query, key, value, dy, softmaxMax, softmaxSum, attentionIn,
                                                           attenMask, dropMask, sink, attrs, TwinCubePlatform());
  if (l.tiling.blockDim == 0) return {l.dq, l.dk, l.dv, l.dsink};
  // the system workspace, then the groups' slots (GetUserWorkspace)
  at::Tensor workspace =
      at::empty({int64_t(AscendC::twin::kSystemWorkspaceBytes) + l.tiling.workspaceBytes}, at::kByte);
  const auto& entry = PickEntry(twin_entries::fusion_attention_grad, l.query.scalar_type());
  LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, l.tiling.blockDim, entry.fn,
                    EntryArgs(Gm, l.Tensors(), Gm(workspace), Gm(l.tilingBytes)));
  return {l.dq, l.dk, l.dv, l.dsink};
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes; dq / dk / dv as query / key / value, dsink
// as sink (fp32 [0] without).
FusionAttentionGradResult FusionAttentionGradMeta(const at::Tensor& query, const at::Tensor& key,
                                                  const at::Tensor& value, const at::Tensor& dy,
                                                  const at::Tensor& softmaxMax, const at::Tensor& softmaxSum,
                                                  const at::Tensor& attentionIn, const at::Tensor& attenMask,
                                                  const at::Tensor& dropMask, const at::Tensor& sink,
                                                  const tiling::AttentionAttrs& attrs) {
  Checked(kOp, [&] {
    return CheckGrad<c10::SymInt>(query, key, value, dy, softmaxMax, softmaxSum, attentionIn, attenMask, dropMask, sink,
                                  attrs);
  });
  const at::TensorOptions fp32 = query.options().dtype(at::kFloat);
  return {at::empty_symint(query.sym_sizes(), query.options()), at::empty_symint(key.sym_sizes(), key.options()),
          at::empty_symint(value.sym_sizes(), value.options()),
          sink.defined() ? at::empty_symint(sink.sym_sizes(), fp32) : at::empty({0}, fp32)};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplFusionAttentionGrad<&FusionAttentionGradMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplFusionAttentionGrad<&RunOnTwin>(m); }

}  // namespace ascendc_ops
