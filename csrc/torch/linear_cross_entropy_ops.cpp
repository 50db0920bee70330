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
tiling::TensorArg<Int> OptionalArgOf(const at::Tensor& t) {
  if (t.defined()) return ArgOf<Int>(t);
  return {{}, tiling::DType::kOther, false};
}

template <class Int>
tiling::LinearCrossEntropyArgs<Int> Check(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                                          const std::vector<at::Tensor>& grads, const LceVocabInputs& vocab,
                                          const tiling::LinearCrossEntropyAttrs& attrs) {
  const OpProto& op = grads.empty() ? kLinearCrossEntropy : kLinearCrossEntropyGrad;
  std::vector<at::Tensor> inputs{hidden, weight, target};
  inputs.insert(inputs.end(), grads.begin(), grads.end());
  for (const at::Tensor& t : {vocab.bias, vocab.classWeight})
    if (t.defined()) inputs.push_back(t);
  for (const at::Tensor& t : inputs) CheckSameDevice(op, {hidden, t});
  std::vector<tiling::TensorArg<Int>> g;
  for (const at::Tensor& t : grads) g.push_back(ArgOf<Int>(t));
  return tiling::CheckLinearCrossEntropy(op, ArgOf<Int>(hidden), ArgOf<Int>(weight), ArgOf<Int>(target),
                                         grads.empty() ? nullptr : &g, OptionalArgOf<Int>(vocab.bias),
                                         OptionalArgOf<Int>(vocab.classWeight), attrs);
}

// With H = 0 every token's logits are the same [V] vector, softcap(bias) (0 without a bias): its fp32 values and,
// for the backward, softcap's derivative d logit / d bias.
at::Tensor HiddenlessLogits(const LinearCrossEntropyLaunch& l, int64_t vocab, double softcap, at::Tensor* slope) {
  at::Tensor x = l.bias.defined() ? l.bias.to(at::kFloat) : at::zeros({vocab}, l.hidden.options().dtype(at::kFloat));
  if (softcap <= 0.0) {
    if (slope) *slope = at::ones_like(x);
    return x;
  }
  const at::Tensor t = at::tanh(x / softcap);
  if (slope) *slope = 1 - t * t;
  return t * softcap;
}

// The target's column in the shard per token, and whether it lies there.
std::pair<at::Tensor, at::Tensor> ShardColumns(const at::Tensor& target, int64_t start, int64_t vocab) {
  const at::Tensor col = target - start;
  return {col.clamp(0, vocab - 1), (col >= 0) & (col < vocab)};
}

// The forward's statistics with no launch: an empty shard (those of no logit) or H = 0 (one logits vector).
void FillStatistics(LinearCrossEntropyLaunch& l, const tiling::LinearCrossEntropyAttrs& attrs) {
  const int64_t vocab = l.weight.size(0);
  if (vocab == 0 || l.hidden.size(0) == 0) {
    l.logitsMax.fill_(-std::numeric_limits<float>::infinity());
    l.sumExp.zero_(), l.targetLogit.zero_(), l.logitSum.zero_();
    return;
  }
  const at::Tensor x = HiddenlessLogits(l, vocab, attrs.softcap, nullptr), m = x.max();
  l.logitsMax.copy_(m.expand_as(l.logitsMax));
  l.sumExp.copy_(at::exp(x - m).sum().expand_as(l.sumExp));
  const auto [col, inside] = ShardColumns(l.target, attrs.vocabStartIndex, vocab);
  l.targetLogit.copy_(at::where(inside, x.index_select(0, col), 0.0));
  const at::Tensor weighed = l.classWeight.defined() ? x * l.classWeight : x;
  l.logitSum.copy_(weighed.sum().expand_as(l.logitSum));
}

// grad_bias with H = 0: sum over tokens of (a p - c w - b onehot) times softcap's slope, in [V]-sized steps
// (p = exp(x - lse) factored as exp(x - max x) exp(max x - lse)).
at::Tensor HiddenlessBiasGrad(const LinearCrossEntropyLaunch& l, const tiling::LinearCrossEntropyAttrs& attrs) {
  const int64_t vocab = l.weight.size(0);
  at::Tensor slope;
  const at::Tensor x = HiddenlessLogits(l, vocab, attrs.softcap, &slope), m = x.max();
  at::Tensor g = at::exp(x - m) * (l.gradSoftmax * at::exp(m - l.lse)).sum();
  const at::Tensor c = l.gradUniform.sum();
  g = g - (l.classWeight.defined() ? l.classWeight * c : c.expand_as(g));
  const auto [col, inside] = ShardColumns(l.target, attrs.vocabStartIndex, vocab);
  g = g.index_add(0, col, at::where(inside, l.gradTarget, 0.0), -1);
  return (g * slope).to(l.weight.scalar_type());
}

}  // namespace

LinearCrossEntropyLaunch PrepareLinearCrossEntropy(const at::Tensor& hidden, const at::Tensor& weight,
                                                   const at::Tensor& target, const std::vector<at::Tensor>& grads,
                                                   const LceVocabInputs& vocab,
                                                   const tiling::LinearCrossEntropyAttrs& attrs,
                                                   const tiling::CubePlatform& platform) {
  const bool backward = !grads.empty();
  LinearCrossEntropyLaunch l;
  Checked(backward ? kLinearCrossEntropyGrad : kLinearCrossEntropy, [&] {
    const tiling::LinearCrossEntropyArgs<int64_t> a = Check<int64_t>(hidden, weight, target, grads, vocab, attrs);
    l.tiling = tiling::TileLinearCrossEntropy(tiling::LinearCrossEntropyProblemOf(a, backward), platform,
                                              tiling::kLceL2Budget);
  });
  l.hidden = hidden.contiguous();
  l.weight = weight.contiguous();
  l.target = target.contiguous();
  if (vocab.bias.defined()) l.bias = vocab.bias.contiguous();
  if (vocab.classWeight.defined()) l.classWeight = vocab.classWeight.contiguous();
  const at::TensorOptions f32 = hidden.options().dtype(at::kFloat);
  if (!backward) {
    for (at::Tensor* t : {&l.logitsMax, &l.sumExp, &l.targetLogit, &l.logitSum}) *t = at::empty({hidden.size(0)}, f32);
    // no task with tokens: the statistics are known without a launch
    if (l.tiling.blockDim == 0) FillStatistics(l, attrs);
    return l;
  }
  l.lse = grads[0].contiguous();
  l.gradSoftmax = grads[1].contiguous();
  l.gradTarget = grads[2].contiguous();
  l.gradUniform = grads[3].contiguous();
  // every row is written by its task; with no task (an empty side) the gradients are zeros, but the bias's with
  // H = 0, whose logits do not depend on hidden or weight
  const bool none = l.tiling.blockDim == 0;
  l.gradHidden = none ? at::zeros_like(l.hidden) : at::empty_like(l.hidden);
  l.gradWeight = none ? at::zeros_like(l.weight) : at::empty_like(l.weight);
  const bool hiddenless = hidden.size(1) == 0 && hidden.size(0) > 0 && weight.size(0) > 0;
  l.gradBias = !none        ? at::empty({weight.size(0)}, weight.options())
               : hiddenless ? HiddenlessBiasGrad(l, attrs)
                            : at::zeros({weight.size(0)}, weight.options());
  return l;
}

namespace {

// The system workspace, then the groups' slots (GetUserWorkspace).
at::Tensor Workspace(const LinearCrossEntropyLaunch& l) {
  return at::empty({int64_t(AscendC::twin::kSystemWorkspaceBytes) + l.tiling.workspaceBytes}, at::kByte);
}

// The forward's launch k of l's plan (its vocabulary range), folding into the outputs as they are.
void RunForwardLaunch(const LinearCrossEntropyLaunch& l, int64_t k) {
  LinearCrossEntropyLaunch chunk = l;
  chunk.tiling = tiling::TileLinearCrossEntropyLaunch(l.tiling, k, TwinCubePlatform());
  const auto& entry = PickEntry(twin_entries::linear_cross_entropy, l.hidden.scalar_type());
  at::Tensor workspace = Workspace(chunk);
  LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, chunk.tiling.blockDim, entry.fn,
                    EntryArgs(Gm, chunk.Tensors(), Gm(workspace), reinterpret_cast<uint8_t*>(&chunk.tiling.data)));
}

LceStats ForwardOnTwin(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                       const LceVocabInputs& vocab, const tiling::LinearCrossEntropyAttrs& attrs) {
  LinearCrossEntropyLaunch l = PrepareLinearCrossEntropy(hidden, weight, target, {}, vocab, attrs, TwinCubePlatform());
  // one launch per L2-sized vocabulary range, each folding its statistics into the outputs of the ones before
  for (int64_t k = 0; l.tiling.blockDim > 0 && k < l.tiling.data.launches; ++k) RunForwardLaunch(l, k);
  return {l.logitsMax, l.sumExp, l.targetLogit, l.logitSum};
}

// For the pipeline model (harness/cann_bench/cross_entropy.py): the forward's launch count, and its launch k run
// alone. The model times every launch from an empty L2 (harness/pipeline/l2.py), so a launch's estimate depends on
// its own plan and data only, and the forward's is the sum over its launches, each distinct one run once. A launch
// k > 0 folds into outputs holding the statistics of no logit (max -inf, sums 0), not the earlier launches': its
// statistics are not the op's, its work is.
int64_t ForwardLaunches(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target) {
  const LinearCrossEntropyLaunch l =
      PrepareLinearCrossEntropy(hidden, weight, target, {}, {}, {0, 0.0}, TwinCubePlatform());
  return l.tiling.blockDim > 0 ? l.tiling.data.launches : 0;
}

LceStats ForwardLaunchAlone(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target, int64_t k) {
  LinearCrossEntropyLaunch l = PrepareLinearCrossEntropy(hidden, weight, target, {}, {}, {0, 0.0}, TwinCubePlatform());
  TORCH_CHECK_INDEX(l.tiling.blockDim > 0 && k >= 0 && k < l.tiling.data.launches,
                    "linear_cross_entropy_launch: ", "launch ", k, " of ",
                    l.tiling.blockDim > 0 ? l.tiling.data.launches : 0);
  l.logitsMax.fill_(-std::numeric_limits<float>::infinity());
  l.sumExp.zero_(), l.targetLogit.zero_(), l.logitSum.zero_();
  RunForwardLaunch(l, k);
  return {l.logitsMax, l.sumExp, l.targetLogit, l.logitSum};
}

// The backward's launch k of l's plan (its vocabulary rows), in `workspace`, which holds grad_hidden's fp32 sums
// from one launch to the next.
void RunBackwardLaunch(const LinearCrossEntropyLaunch& l, int64_t k, const at::Tensor& workspace) {
  LinearCrossEntropyLaunch chunk = l;
  chunk.tiling = tiling::TileLinearCrossEntropyLaunch(l.tiling, k, TwinCubePlatform());
  const auto& entry = PickEntry(twin_entries::linear_cross_entropy_grad, l.hidden.scalar_type());
  LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, entry.name, chunk.tiling.blockDim, entry.fn,
                    EntryArgs(Gm, chunk.GradTensors(), Gm(workspace), reinterpret_cast<uint8_t*>(&chunk.tiling.data)));
}

LceGrads BackwardOnTwin(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                        const std::vector<at::Tensor>& grads, const LceVocabInputs& vocab,
                        const tiling::LinearCrossEntropyAttrs& attrs) {
  LinearCrossEntropyLaunch l =
      PrepareLinearCrossEntropy(hidden, weight, target, grads, vocab, attrs, TwinCubePlatform());
  if (l.tiling.blockDim > 0) {
    const at::Tensor workspace = Workspace(l);
    // one launch per vocabulary range (L2-sized at large V), grad_hidden's sums carried in the workspace
    for (int64_t k = 0; k < l.tiling.data.launches; ++k) RunBackwardLaunch(l, k, workspace);
  }
  return {l.gradHidden, l.gradWeight, l.gradBias};
}

// For the pipeline model, as the forward's: the backward's launch count, and its launch k run alone (a launch
// k > 0 adds to zero sums, not the earlier launches': its gradients are not the op's, its work is).
int64_t BackwardLaunches(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                         const std::vector<at::Tensor>& grads) {
  const LinearCrossEntropyLaunch l =
      PrepareLinearCrossEntropy(hidden, weight, target, grads, {}, {0, 0.0}, TwinCubePlatform());
  return l.tiling.blockDim > 0 ? l.tiling.data.launches : 0;
}

LceGrads BackwardLaunchAlone(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                             const std::vector<at::Tensor>& grads, int64_t k) {
  LinearCrossEntropyLaunch l =
      PrepareLinearCrossEntropy(hidden, weight, target, grads, {}, {0, 0.0}, TwinCubePlatform());
  TORCH_CHECK_INDEX(l.tiling.blockDim > 0 && k >= 0 && k < l.tiling.data.launches,
                    "linear_cross_entropy_grad_launch: ", "launch ", k, " of ",
                    l.tiling.blockDim > 0 ? l.tiling.data.launches : 0);
  RunBackwardLaunch(l, k, Workspace(l).zero_());
  return {l.gradHidden, l.gradWeight, l.gradBias};
}

LceStats ForwardMeta(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                     const LceVocabInputs& vocab, const tiling::LinearCrossEntropyAttrs& attrs) {
  const tiling::LinearCrossEntropyArgs<c10::SymInt> a =
      Checked(kLinearCrossEntropy, [&] { return Check<c10::SymInt>(hidden, weight, target, {}, vocab, attrs); });
  const at::TensorOptions f32 = hidden.options().dtype(at::kFloat);
  return {at::empty_symint(a.stats, f32), at::empty_symint(a.stats, f32), at::empty_symint(a.stats, f32),
          at::empty_symint(a.stats, f32)};
}

LceGrads BackwardMeta(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& target,
                      const std::vector<at::Tensor>& grads, const LceVocabInputs& vocab,
                      const tiling::LinearCrossEntropyAttrs& attrs) {
  const tiling::LinearCrossEntropyArgs<c10::SymInt> a =
      Checked(kLinearCrossEntropyGrad, [&] { return Check<c10::SymInt>(hidden, weight, target, grads, vocab, attrs); });
  return {at::empty_symint(a.gradHidden, hidden.options()), at::empty_symint(a.gradWeight, weight.options()),
          at::empty_symint(a.gradBias, weight.options())};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("linear_cross_entropy_launches(Tensor hidden, Tensor weight, Tensor target) -> int", &ForwardLaunches);
  m.def(
      "linear_cross_entropy_launch(Tensor hidden, Tensor weight, Tensor target, int k) -> "
      "(Tensor, Tensor, Tensor, Tensor)",
      &ForwardLaunchAlone);
  m.def("linear_cross_entropy_grad_launches(Tensor hidden, Tensor weight, Tensor target, Tensor[] grads) -> int",
        &BackwardLaunches);
  m.def(
      "linear_cross_entropy_grad_launch(Tensor hidden, Tensor weight, Tensor target, Tensor[] grads, int k) -> "
      "(Tensor, Tensor, Tensor)",
      &BackwardLaunchAlone);
}

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplLinearCrossEntropyOps<&ForwardMeta, &BackwardMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplLinearCrossEntropyOps<&ForwardOnTwin, &BackwardOnTwin>(m); }

}  // namespace ascendc_ops
