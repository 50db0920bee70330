// Fused linear cross-entropy on the CPU twin: linear_cross_entropy and linear_cross_entropy_grad run the mix kernels
// csrc/kernels/linear_cross_entropy.cpp / linear_cross_entropy_grad.cpp as typed MIX_AIC_1_2 launches (one AIC and
// two AIVs per core group, their cross-core flags really waiting); Meta kernels for FakeTensor and torch.compile.
#include "cross_entropy_ops.h"

#include <torch/library.h>

#include <limits>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"
#include "twin_crosscore.h"

// The kernels' entry points compiled for the twin, from their lists.
LINEAR_CROSS_ENTROPY_KERNELS(ASCENDC_TWIN_KERNELS)

namespace ascendc_ops {
namespace {

template <class Int>
tiling::LinearCrossEntropyArgs<Int> Check(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                          const std::vector<at::Tensor>& grads,
                                          const tiling::LinearCrossEntropyAttrs& attrs) {
  const OpProto& op = grads.empty() ? kLinearCrossEntropy : kLinearCrossEntropyGrad;
  if (grads.empty()) CheckSameDevice(op, {hidden, weight, target});
  else CheckSameDevice(op, {hidden, weight, target, grads[0], grads[1], grads[2], grads[3]});
  std::vector<tiling::TensorArg<Int>> g;
  for (const at::Tensor& t : grads) g.push_back(ArgOf<Int>(t));
  return tiling::CheckLinearCrossEntropy(op, ArgOf<Int>(hidden), ArgOf<Int>(weight), ArgOf<Int>(target),
                                         grads.empty() ? nullptr : &g, attrs);
}

}  // namespace

LinearCrossEntropyLaunch PrepareLinearCrossEntropy(const at::Tensor& hidden, const at::Tensor& weight,
                                                   const at::Tensor& target, const std::vector<at::Tensor>& grads,
                                                   const tiling::LinearCrossEntropyAttrs& attrs,
                                                   const tiling::CubePlatform& platform) {
  const bool backward = !grads.empty();
  LinearCrossEntropyLaunch l;
  Checked(backward ? kLinearCrossEntropyGrad : kLinearCrossEntropy, [&] {
    const tiling::LinearCrossEntropyArgs<int64_t> a = Check<int64_t>(hidden, weight, target, grads, attrs);
    l.tiling = tiling::TileLinearCrossEntropy(tiling::LinearCrossEntropyProblemOf(a, backward), platform);
  });
  l.hidden = hidden.contiguous();
  l.weight = weight.contiguous();
  l.target = target.contiguous();
  const at::TensorOptions f32 = hidden.options().dtype(at::kFloat);
  if (!backward) {
    for (at::Tensor* t : {&l.logitsMax, &l.sumExp, &l.targetLogit, &l.logitSum}) *t = at::empty({hidden.size(0)}, f32);
    if (l.tiling.blockDim > 0) return l;
    // no task with tokens: the statistics are known without a launch
    if (hidden.size(1) == 0) {  // every logit is 0
      l.logitsMax.zero_(), l.sumExp.fill_(double(weight.size(0))), l.targetLogit.zero_(), l.logitSum.zero_();
    } else {  // an empty vocabulary shard: the statistics of no logit
      l.logitsMax.fill_(-std::numeric_limits<float>::infinity());
      l.sumExp.zero_(), l.targetLogit.zero_(), l.logitSum.zero_();
    }
    return l;
  }
  l.lse = grads[0].contiguous();
  l.gradSoftmax = grads[1].contiguous();
  l.gradTarget = grads[2].contiguous();
  l.gradUniform = grads[3].contiguous();
  // every row is written by its task; with no task (an empty side) the gradients are zeros
  const bool none = l.tiling.blockDim == 0;
  l.gradHidden = none ? at::zeros_like(l.hidden) : at::empty_like(l.hidden);
  l.gradWeight = none ? at::zeros_like(l.weight) : at::empty_like(l.weight);
  return l;
}

namespace {

// The system workspace, then the groups' slots (GetUserWorkspace).
at::Tensor Workspace(const LinearCrossEntropyLaunch& l) {
  return at::empty({int64_t(AscendC::twin::kSystemWorkspaceBytes) + l.tiling.workspaceBytes}, at::kByte);
}

LceStats ForwardOnTwin(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                       const tiling::LinearCrossEntropyAttrs& attrs) {
  LinearCrossEntropyLaunch l = PrepareLinearCrossEntropy(hidden, weight, target, {}, attrs, TwinCubePlatform());
  if (l.tiling.blockDim > 0) {
    const auto& entry = PickEntry(twin_entries::linear_cross_entropy, l.hidden.scalar_type());
    at::Tensor workspace = Workspace(l);
    LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, l.tiling.blockDim, entry.fn,
                      EntryArgs(Gm, l.Tensors(), Gm(workspace), reinterpret_cast<uint8_t*>(&l.tiling.data)));
  }
  return {l.logitsMax, l.sumExp, l.targetLogit, l.logitSum};
}

LceGrads BackwardOnTwin(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                        const std::vector<at::Tensor>& grads, const tiling::LinearCrossEntropyAttrs& attrs) {
  LinearCrossEntropyLaunch l = PrepareLinearCrossEntropy(hidden, weight, target, grads, attrs, TwinCubePlatform());
  if (l.tiling.blockDim > 0) {
    const auto& entry = PickEntry(twin_entries::linear_cross_entropy_grad, l.hidden.scalar_type());
    at::Tensor workspace = Workspace(l);
    LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, l.tiling.blockDim, entry.fn,
                      EntryArgs(Gm, l.GradTensors(), Gm(workspace), reinterpret_cast<uint8_t*>(&l.tiling.data)));
  }
  return {l.gradHidden, l.gradWeight};
}

LceStats ForwardMeta(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                     const tiling::LinearCrossEntropyAttrs& attrs) {
  const tiling::LinearCrossEntropyArgs<c10::SymInt> a =
      Checked(kLinearCrossEntropy, [&] { return Check<c10::SymInt>(hidden, weight, target, {}, attrs); });
  const at::TensorOptions f32 = hidden.options().dtype(at::kFloat);
  return {at::empty_symint(a.stats, f32), at::empty_symint(a.stats, f32), at::empty_symint(a.stats, f32),
          at::empty_symint(a.stats, f32)};
}

LceGrads BackwardMeta(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                      const std::vector<at::Tensor>& grads, const tiling::LinearCrossEntropyAttrs& attrs) {
  const tiling::LinearCrossEntropyArgs<c10::SymInt> a =
      Checked(kLinearCrossEntropyGrad, [&] { return Check<c10::SymInt>(hidden, weight, target, grads, attrs); });
  return {at::empty_symint(a.gradHidden, hidden.options()), at::empty_symint(a.gradWeight, weight.options())};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplLinearCrossEntropyOps<&ForwardMeta, &BackwardMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplLinearCrossEntropyOps<&ForwardOnTwin, &BackwardOnTwin>(m); }

}  // namespace ascendc_ops
