// Cross-entropy on the CPU twin: cross_entropy_loss runs csrc/kernels/cross_entropy.cpp (log_prob and per-row
// results), then reduces the per-row results over rows with torch on [N] vectors; cross_entropy_loss_grad forms the
// per-row coefficients on [N] vectors, then runs csrc/kernels/cross_entropy_grad.cpp for x_grad [N, C].
#include "cross_entropy_ops.h"

#include <torch/library.h>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The cross-entropy kernel entry points compiled for the CPU twin, from their lists.
CROSS_ENTROPY_KERNELS(ASCENDC_TWIN_KERNELS)

namespace ascendc_ops {

namespace {

bool Given(const c10::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

template <class Int>
tiling::TensorArg<Int> OptionalArg(const c10::optional<at::Tensor>& t) {
  if (Given(t)) return ArgOf<Int>(*t);
  return {{}, tiling::DType::kOther, false};
}

at::Tensor EmptyOf(const at::Tensor& like) { return at::empty({0}, like.options()); }

// A target that is neither ignore_index nor a class: a ValueError naming the first (the kernel only poisons its row).
void CheckTargetValues(const OpProto& op, const at::Tensor& target, int64_t classes, int64_t ignoreIndex) {
  if (target.numel() == 0) return;
  const at::Tensor bad = target.ne(ignoreIndex).logical_and(target.lt(0).logical_or(target.ge(classes)));
  if (!bad.any().item<bool>()) return;
  const int64_t row = bad.nonzero().select(1, 0)[0].item<int64_t>();
  TORCH_CHECK_VALUE(false, op.name, ": target values must be in [0, C) = [0, ", classes, ") or ignore_index (",
                    ignoreIndex, "), got target[", row, "] = ", target[row].item<int64_t>());
}

}  // namespace

CrossEntropyLaunch PrepareCrossEntropyLoss(const OpProto& op, const at::Tensor& input, const at::Tensor& target,
                                           const c10::optional<at::Tensor>& weight,
                                           const tiling::CrossEntropyAttrs& attrs,
                                           const tiling::PlatformInfo& platform) {
  if (Given(weight)) CheckSameDevice(op, {input, target, *weight});
  else CheckSameDevice(op, {input, target});
  CrossEntropyLaunch l;
  l.attrs = attrs;
  Checked(op, [&] {
    l.args = tiling::CheckCrossEntropyLoss(op, Arg(input), Arg(target), OptionalArg<int64_t>(weight), attrs);
    l.tiling = tiling::TileCrossEntropy(
        tiling::CrossEntropyProblemOf(l.args, TilingDtype(input.scalar_type()), Given(weight), false, attrs), platform);
  });
  l.input = input.contiguous();
  l.target = target.contiguous();
  if (Given(weight)) l.weight = weight->contiguous();
  l.logProb = at::empty({l.args.rows, l.args.cols}, input.options());
  l.rowStats = at::empty({l.args.rows, int64_t(kCrossEntropyStats)}, input.options().dtype(at::kFloat));
  return l;
}

CrossEntropyOutputs FinishCrossEntropyLoss(const CrossEntropyLaunch& l) {
  const at::ScalarType dtype = l.input.scalar_type();
  // [4, N]: each result a dense [N] vector (clone: contiguous() keeps a [4, 1] transpose's strides)
  const at::Tensor columns = l.rowStats.t().clone(at::MemoryFormat::Contiguous);
  const at::Tensor rowLoss = columns[kCrossEntropyStatLoss], rowWeight = columns[kCrossEntropyStatWeight];
  const at::Tensor rowLse = columns[kCrossEntropyStatLse], rowCount = columns[kCrossEntropyStatCount];
  const bool zterm = l.attrs.lseSquareScale != 0.0f;
  // z-loss per row, s * lse^2 on counted rows; it is part of the loss (CANN's CrossEntropyLossGrad differentiates
  // the loss through lse_for_zloss) and, with return_zloss, also returned alone
  const at::Tensor rowZ =
      zterm ? rowLse.square().mul(double(l.attrs.lseSquareScale)).mul(rowCount) : at::zeros_like(rowLoss);
  at::Tensor loss, zloss;
  switch (l.args.reduction) {
    case CROSS_ENTROPY_NONE:
      loss = zterm ? rowLoss + rowZ : rowLoss;
      zloss = rowZ;
      break;
    case CROSS_ENTROPY_SUM:
      loss = rowLoss.sum().reshape({1});
      zloss = rowZ.sum().reshape({1});
      if (zterm) loss = loss + zloss;
      break;
    default:  // mean: the CE part over the counted rows' weights (as torch), the z-loss over their count (as CANN);
              // every row ignored: 0 / 0, NaN, as torch's loss (the gradient is 0, CrossEntropyGradCoefficients)
      loss = (rowLoss.sum() / rowWeight.sum()).reshape({1});
      zloss = (rowZ.sum() / rowCount.sum()).reshape({1});
      if (zterm) loss = loss + zloss;
      break;
  }
  // copies with unit strides: an fp32 .to() would hand out views of `columns`
  const auto own = [&](const at::Tensor& t) { return t.to(dtype, false, /*copy=*/true, at::MemoryFormat::Contiguous); };
  return {own(loss), l.logProb, l.attrs.returnZloss ? own(zloss) : EmptyOf(l.logProb),
          zterm ? own(rowLse) : EmptyOf(l.logProb)};
}

namespace {

// Per-row (k, a, b) of x_grad = exp(log_prob) * k - a * onehot(target) - b * w, fp32 [3, N]:
// a = g (1 - ls) w[t] / D, b = g ls / (C D), k = a + b * sum_c w[c] + 2 s lse (g + g_z) / D_z on counted rows, where g
// is grad_loss per row and D / D_z the weight sum / count of counted rows for 'mean' (1 otherwise; a 0 sum, every
// row ignored, counts as 1: the gradient is 0, never NaN).
at::Tensor CrossEntropyGradCoefficients(const at::Tensor& gradLoss, const at::Tensor& target, const at::Tensor& weight,
                                        const c10::optional<at::Tensor>& gradZloss,
                                        const c10::optional<at::Tensor>& lse,
                                        const tiling::CrossEntropyArgs<int64_t>& args,
                                        const tiling::CrossEntropyAttrs& attrs) {
  const int64_t rows = args.rows, classes = args.cols;
  const at::Tensor counted = target.ne(attrs.ignoreIndex).to(at::kFloat);
  const at::Tensor wt = weight.defined() ? weight.index_select(0, target.clamp(0, classes - 1)).mul(counted) : counted;
  const auto perRow = [&](const at::Tensor& g) { return g.to(at::kFloat).reshape({-1}).expand({rows}); };
  const at::Tensor g = perRow(gradLoss);
  const auto safe = [](const at::Tensor& sum) { return at::where(sum.eq(0), at::ones_like(sum), sum); };
  const bool mean = args.reduction == CROSS_ENTROPY_MEAN;
  const at::Tensor d = mean ? safe(wt.sum()) : at::ones({}, g.options());
  const double ls = attrs.labelSmoothing;
  const at::Tensor a = g.mul(1.0 - ls).mul(wt).div(d);
  const at::Tensor b = g.mul(ls / double(classes)).mul(counted).div(d);
  at::Tensor k = weight.defined() ? a + b * weight.sum() : a + b * double(classes);
  if (attrs.lseSquareScale != 0.0f) {
    const at::Tensor gz = Given(gradZloss) ? g + perRow(*gradZloss) : g;
    const at::Tensor dz = mean ? safe(counted.sum()) : at::ones({}, g.options());
    k = k + lse->to(at::kFloat).mul(2.0 * double(attrs.lseSquareScale)).mul(counted).mul(gz).div(dz);
  }
  return at::stack({k, a, b}).contiguous();
}

}  // namespace

CrossEntropyGradLaunch PrepareCrossEntropyLossGrad(const OpProto& op, const at::Tensor& gradLoss,
                                                   const at::Tensor& logProb, const at::Tensor& target,
                                                   const c10::optional<at::Tensor>& weight,
                                                   const c10::optional<at::Tensor>& gradZloss,
                                                   const c10::optional<at::Tensor>& lse,
                                                   const tiling::CrossEntropyAttrs& attrs,
                                                   const tiling::PlatformInfo& platform) {
  CheckSameDevice(op, {gradLoss, logProb, target});
  for (const auto* t : {&weight, &gradZloss, &lse})
    if (Given(*t)) CheckSameDevice(op, {logProb, **t});
  CrossEntropyGradLaunch l;
  tiling::CrossEntropyArgs<int64_t> args;
  Checked(op, [&] {
    args = tiling::CheckCrossEntropyLossGrad(op, Arg(gradLoss), Arg(logProb), Arg(target), OptionalArg<int64_t>(weight),
                                             OptionalArg<int64_t>(gradZloss), OptionalArg<int64_t>(lse), attrs);
    l.tiling = tiling::TileCrossEntropy(
        tiling::CrossEntropyProblemOf(args, TilingDtype(logProb.scalar_type()), Given(weight), true, attrs), platform);
  });
  l.logProb = logProb.contiguous();
  l.target = target.contiguous();
  if (Given(weight)) l.weight = weight->contiguous();
  l.xGrad = at::empty({args.rows, args.cols}, logProb.options());
  l.rowCoef = CrossEntropyGradCoefficients(gradLoss, l.target, l.weight, gradZloss, lse, args, attrs);
  return l;
}

namespace {

CrossEntropyOutputs RunOnTwin(const OpProto& op, const at::Tensor& input, const at::Tensor& target,
                              const c10::optional<at::Tensor>& weight, const tiling::CrossEntropyAttrs& attrs) {
  CrossEntropyLaunch l = PrepareCrossEntropyLoss(op, input, target, weight, attrs, TwinPlatform());
  CheckTargetValues(op, l.target, l.args.cols, attrs.ignoreIndex);
  if (l.tiling.blockDim > 0) {
    uint64_t bytes = 0;
    const auto& e = PickEntry(twin_entries::cross_entropy_loss, l.input.scalar_type());
    const auto args = EntryArgs(CountedGm{bytes}, l.Tensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
    LaunchOnTwin(bytes, e.name, l.tiling.blockDim, e.fn, args);
  }
  return FinishCrossEntropyLoss(l);
}

at::Tensor RunGradOnTwin(const OpProto& op, const at::Tensor& gradLoss, const at::Tensor& logProb,
                         const at::Tensor& target, const c10::optional<at::Tensor>& weight,
                         const c10::optional<at::Tensor>& gradZloss, const c10::optional<at::Tensor>& lse,
                         const tiling::CrossEntropyAttrs& attrs) {
  CrossEntropyGradLaunch l =
      PrepareCrossEntropyLossGrad(op, gradLoss, logProb, target, weight, gradZloss, lse, attrs, TwinPlatform());
  CheckTargetValues(op, l.target, l.logProb.size(1), attrs.ignoreIndex);
  if (l.tiling.blockDim == 0) return l.xGrad;
  uint64_t bytes = 0;
  const auto& e = PickEntry(twin_entries::cross_entropy_loss_grad, l.logProb.scalar_type());
  const auto args = EntryArgs(CountedGm{bytes}, l.Tensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
  LaunchOnTwin(bytes, e.name, l.tiling.blockDim, e.fn, args);
  return l.xGrad;
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the outputs' shapes.
CrossEntropyOutputs CrossEntropyMeta(const OpProto& op, const at::Tensor& input, const at::Tensor& target,
                                     const c10::optional<at::Tensor>& weight, const tiling::CrossEntropyAttrs& attrs) {
  if (Given(weight)) CheckSameDevice(op, {input, target, *weight});
  else CheckSameDevice(op, {input, target});
  return Checked(op, [&] {
    const auto a =
        tiling::CheckCrossEntropyLoss(op, SymArg(input), SymArg(target), OptionalArg<c10::SymInt>(weight), attrs);
    const auto o = input.options();
    return CrossEntropyOutputs{at::empty_symint(a.loss, o), at::empty_symint(a.logProb, o),
                               at::empty_symint(a.zloss, o), at::empty_symint(a.lse, o)};
  });
}

at::Tensor CrossEntropyGradMeta(const OpProto& op, const at::Tensor& gradLoss, const at::Tensor& logProb,
                                const at::Tensor& target, const c10::optional<at::Tensor>& weight,
                                const c10::optional<at::Tensor>& gradZloss, const c10::optional<at::Tensor>& lse,
                                const tiling::CrossEntropyAttrs& attrs) {
  CheckSameDevice(op, {gradLoss, logProb, target});
  return Checked(op, [&] {
    const auto a = tiling::CheckCrossEntropyLossGrad(
        op, SymArg(gradLoss), SymArg(logProb), SymArg(target), OptionalArg<c10::SymInt>(weight),
        OptionalArg<c10::SymInt>(gradZloss), OptionalArg<c10::SymInt>(lse), attrs);
    return at::empty_symint(a.logProb, logProb.options());
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplCrossEntropyOps<CrossEntropyMeta, CrossEntropyGradMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplCrossEntropyOps<RunOnTwin, RunGradOnTwin>(m); }

}  // namespace ascendc_ops
