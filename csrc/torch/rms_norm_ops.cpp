// RMSNorm on the CPU twin: rms_norm, add_rms_norm and their *_grad ops, running the kernels in
// csrc/kernels/rms_norm.cpp and csrc/kernels/rms_norm_grad.cpp, after the problem functions of
// tiling/rms_norm_problem.h (also the Meta kernels' checks and shapes). Backward is two launches: the
// row kernel (dx, per-block fp32 dgamma partials in the workspace) and the dgamma reduction.
#include <torch/library.h>

#include <limits>

#include "rms_norm_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "rms_norm_problem.h"
#include "twin_backend.h"

// The kernels' entry points (csrc/kernels/rms_norm.cpp, rms_norm_grad.cpp), compiled for the twin, from their lists.
RMS_NORM_KERNELS(ASCENDC_TWIN_KERNELS)

namespace ascendc_ops {
namespace {

// The device check (torch's alone), then the problem function on (x1[, x2], gamma, epsilon) with
// concrete (int64_t) or symbolic (c10::SymInt, Meta) sizes.
template <class Int>
tiling::NormArgs<Int> ForwardArgs(const OpProto& op, const at::Tensor& x1, const at::Tensor* x2,
                                  const at::Tensor& gamma, double epsilon) {
  if (x2) CheckSameDevice(op, {x1, *x2, gamma});
  else CheckSameDevice(op, {x1, gamma});
  const tiling::TensorArg<Int> x1Arg = ArgOf<Int>(x1), x2Arg = ArgOf<Int>(x2 ? *x2 : at::Tensor()),
                               gArg = ArgOf<Int>(gamma);
  return Checked(op, [&] { return tiling::CheckRmsNorm(op, x1Arg, x2 ? &x2Arg : nullptr, gArg, epsilon); });
}

// The same for gated_rms_norm's (x, gamma, z, epsilon).
template <class Int>
tiling::NormArgs<Int> GatedArgs(const OpProto& op, const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& z,
                                double epsilon) {
  CheckSameDevice(op, {x, gamma, z});
  const tiling::TensorArg<Int> xArg = ArgOf<Int>(x), gArg = ArgOf<Int>(gamma), zArg = ArgOf<Int>(z);
  return Checked(op, [&] { return tiling::CheckGatedRmsNorm(op, xArg, gArg, zArg, epsilon); });
}

// The same for (dy, x, rstd, gamma[, dxOut]).
template <class Int>
tiling::NormArgs<Int> BackwardArgs(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                   const at::Tensor& gamma, const at::Tensor* dxOut) {
  if (dxOut) CheckSameDevice(op, {dy, x, rstd, gamma, *dxOut});
  else CheckSameDevice(op, {dy, x, rstd, gamma});
  const tiling::TensorArg<Int> dyArg = ArgOf<Int>(dy), xArg = ArgOf<Int>(x), rArg = ArgOf<Int>(rstd),
                               gArg = ArgOf<Int>(gamma), dxoArg = ArgOf<Int>(dxOut ? *dxOut : at::Tensor());
  return Checked(op, [&] { return tiling::CheckRmsNormGrad(op, dyArg, xArg, rArg, gArg, dxOut ? &dxoArg : nullptr); });
}

// The tiling struct where the twin's kernels read it: on the host.
uint8_t* TilingGm(const NormTilingData& data) { return reinterpret_cast<uint8_t*>(const_cast<NormTilingData*>(&data)); }

// The backward row kernel's fp32 dgamma partials, one row per block; then their reduction into dgamma.
at::Tensor Partials(const NormBackwardLaunch& l) {
  return at::empty({int64_t(l.tiling.blockDim), l.gamma.numel()}, l.x.options().dtype(at::kFloat));
}
void ReduceDgamma(const NormBackwardLaunch& l, const at::Tensor& partials) {
  const auto& reduce = PickEntry(twin_entries::rms_norm_dgamma, l.gamma.scalar_type());
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  const auto args = EntryArgs(gm, l.DgammaTensors(partials), nullptr, TilingGm(l.tiling.data));
  LaunchOnTwin(bytes, reduce.name, l.tiling.reduceBlockDim, reduce.fn, args);
}

tiling::NormTiling Tile(const OpProto& op, const tiling::NormArgs<int64_t>& a, bool add, bool backward, double epsilon,
                        const tiling::PlatformInfo& platform) {
  return Checked(op, [&] {
    return tiling::TileNorm(
        tiling::NormProblemOf(a, add, backward, epsilon, tiling::NormGammaOffset(op), tiling::NormGated(op)), platform);
  });
}

}  // namespace

// ---- forward ----
NormForwardLaunch PrepareNormForward(const OpProto& op, const at::Tensor& x1In, const at::Tensor* x2In,
                                     const at::Tensor& gammaIn, double epsilon, const tiling::PlatformInfo& platform) {
  const bool add = x2In != nullptr;
  const tiling::NormArgs<int64_t> a = ForwardArgs<int64_t>(op, x1In, x2In, gammaIn, epsilon);
  const at::Tensor x1 = x1In.contiguous(), gamma = gammaIn.contiguous();
  const at::Tensor x2 = add ? x2In->contiguous() : at::Tensor();
  at::Tensor y = at::empty(a.x, x1.options());
  at::Tensor rstd = at::empty(a.rstd, x1.options().dtype(at::kFloat));
  at::Tensor xOut = add ? at::empty(a.x, x1.options()) : at::Tensor();
  if (a.rows > 0 && a.hidden == 0) rstd.fill_(std::numeric_limits<float>::quiet_NaN());  // mean of no elements
  return {x1, x2, gamma, y, rstd, xOut, Tile(op, a, add, false, epsilon, platform)};
}

NormForwardLaunch PrepareGatedNormForward(const OpProto& op, const at::Tensor& xIn, const at::Tensor& gammaIn,
                                          const at::Tensor& zIn, double epsilon, const tiling::PlatformInfo& platform) {
  const tiling::NormArgs<int64_t> a = GatedArgs<int64_t>(op, xIn, gammaIn, zIn, epsilon);
  const at::Tensor x = xIn.contiguous(), gamma = gammaIn.contiguous(), z = zIn.contiguous();
  at::Tensor y = at::empty(a.x, x.options());
  at::Tensor rstd = at::empty(a.rstd, x.options().dtype(at::kFloat));
  if (a.rows > 0 && a.hidden == 0) rstd.fill_(std::numeric_limits<float>::quiet_NaN());  // mean of no elements
  NormForwardLaunch l{x, at::Tensor(), gamma, y, rstd, at::Tensor(), Tile(op, a, false, false, epsilon, platform)};
  l.z = z;
  return l;
}

namespace {

std::tuple<at::Tensor, at::Tensor> GatedForward(const OpProto& op, const at::Tensor& x, const at::Tensor& gamma,
                                                const at::Tensor& z, double epsilon) {
  NormForwardLaunch l = PrepareGatedNormForward(op, x, gamma, z, epsilon, TwinPlatform());
  const tiling::NormTiling& t = l.tiling;
  if (t.blockDim == 0) return {l.y, l.rstd};
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  const auto args = EntryArgs(gm, l.GatedRmsNormTensors(), nullptr, TilingGm(t.data));
  LaunchOnTwin(bytes, "gated_rms_norm", t.blockDim,
               PickEntry(twin_entries::gated_rms_norm, l.x1.scalar_type(), l.gamma.scalar_type()).fn, args);
  return {l.y, l.rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Forward(const OpProto& op, const at::Tensor& x1In,
                                                       const at::Tensor* x2In, const at::Tensor& gammaIn,
                                                       double epsilon) {
  NormForwardLaunch l = PrepareNormForward(op, x1In, x2In, gammaIn, epsilon, TwinPlatform());
  const tiling::NormTiling& t = l.tiling;
  if (t.blockDim == 0) return {l.y, l.rstd, l.xOut};
  const at::ScalarType xt = l.x1.scalar_type(), gt = l.gamma.scalar_type();
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  if (x2In != nullptr) {
    const auto args = EntryArgs(gm, l.AddRmsNormTensors(), nullptr, TilingGm(t.data));
    LaunchOnTwin(bytes, "add_rms_norm", t.blockDim, PickEntry(twin_entries::add_rms_norm, xt, gt).fn, args);
  } else {
    const auto args = EntryArgs(gm, l.RmsNormTensors(), nullptr, TilingGm(t.data));
    LaunchOnTwin(bytes, "rms_norm", t.blockDim, PickEntry(twin_entries::rms_norm, xt, gt).fn, args);
  }
  return {l.y, l.rstd, l.xOut};
}

}  // namespace

// ---- backward ----
NormBackwardLaunch PrepareNormBackward(const OpProto& op, const at::Tensor& dyIn, const at::Tensor& xIn,
                                       const at::Tensor& rstdIn, const at::Tensor& gammaIn, const at::Tensor* dxOutIn,
                                       const tiling::PlatformInfo& platform) {
  const bool add = dxOutIn != nullptr && !tiling::NormGated(op);  // gated_rms_norm_grad passes z there
  const tiling::NormArgs<int64_t> a = BackwardArgs<int64_t>(op, dyIn, xIn, rstdIn, gammaIn, dxOutIn);
  const at::Tensor dy = dyIn.contiguous(), x = xIn.contiguous(), rstd = rstdIn.contiguous(),
                   gamma = gammaIn.contiguous();
  const at::Tensor dxOut = dxOutIn ? dxOutIn->contiguous() : at::Tensor();  // (or z)
  at::Tensor dx = at::empty(a.x, x.options());
  at::Tensor dgamma = at::zeros(a.gamma, gamma.options());  // no rows: dgamma is an empty sum
  return {dy, x, rstd, gamma, dxOut, dx, dgamma, Tile(op, a, add, true, 0.0, platform)};
}

NormBackwardLaunch PrepareGatedNormBackward(const OpProto& op, const at::Tensor& dy, const at::Tensor& x,
                                            const at::Tensor& rstd, const at::Tensor& gamma, const at::Tensor& zIn,
                                            const tiling::PlatformInfo& platform) {
  // z takes dx_out's place in the checks (input 4 of x's shape); the tiling is the gated one (NormGated(op))
  NormBackwardLaunch l = PrepareNormBackward(op, dy, x, rstd, gamma, &zIn, platform);
  l.z = l.dxOut;
  l.dxOut = at::Tensor();
  l.dz = at::empty_like(l.dx);
  return l;
}

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> GatedBackward(const OpProto& op, const at::Tensor& dyIn,
                                                             const at::Tensor& xIn, const at::Tensor& rstdIn,
                                                             const at::Tensor& gammaIn, const at::Tensor& zIn) {
  NormBackwardLaunch l = PrepareGatedNormBackward(op, dyIn, xIn, rstdIn, gammaIn, zIn, TwinPlatform());
  const tiling::NormTiling& t = l.tiling;
  if (t.blockDim == 0) return {l.dx, l.dgamma, l.dz};
  const at::Tensor partials = Partials(l);
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  const auto args = EntryArgs(gm, l.GatedRmsNormGradTensors(), gm(partials), TilingGm(t.data));
  LaunchOnTwin(bytes, "gated_rms_norm_grad", t.blockDim,
               PickEntry(twin_entries::gated_rms_norm_grad, l.x.scalar_type(), l.gamma.scalar_type()).fn, args);
  ReduceDgamma(l, partials);
  return {l.dx, l.dgamma, l.dz};
}

std::tuple<at::Tensor, at::Tensor> Backward(const OpProto& op, const at::Tensor& dyIn, const at::Tensor& xIn,
                                            const at::Tensor& rstdIn, const at::Tensor& gammaIn,
                                            const at::Tensor* dxOutIn) {
  NormBackwardLaunch l = PrepareNormBackward(op, dyIn, xIn, rstdIn, gammaIn, dxOutIn, TwinPlatform());
  const tiling::NormTiling& t = l.tiling;
  if (t.blockDim == 0) return {l.dx, l.dgamma};
  const at::Tensor partials = Partials(l);
  const at::ScalarType xt = l.x.scalar_type(), gt = l.gamma.scalar_type();
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  if (dxOutIn != nullptr) {
    const auto args = EntryArgs(gm, l.AddRmsNormGradTensors(), gm(partials), TilingGm(t.data));
    LaunchOnTwin(bytes, "add_rms_norm_grad", t.blockDim, PickEntry(twin_entries::add_rms_norm_grad, xt, gt).fn, args);
  } else {
    const auto args = EntryArgs(gm, l.RmsNormGradTensors(), gm(partials), TilingGm(t.data));
    LaunchOnTwin(bytes, "rms_norm_grad", t.blockDim, PickEntry(twin_entries::rms_norm_grad, xt, gt).fn, args);
  }
  ReduceDgamma(l, partials);
  return {l.dx, l.dgamma};
}

// ---- Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the outputs ----
std::tuple<at::Tensor, at::Tensor, at::Tensor> ForwardMeta(const OpProto& op, const at::Tensor& x1,
                                                           const at::Tensor* x2, const at::Tensor& gamma,
                                                           double epsilon) {
  const tiling::NormArgs<c10::SymInt> a = ForwardArgs<c10::SymInt>(op, x1, x2, gamma, epsilon);
  return {at::empty_symint(a.x, x1.options()), at::empty_symint(a.rstd, x1.options().dtype(at::kFloat)),
          x2 ? at::empty_symint(a.x, x1.options()) : at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor> GatedForwardMeta(const OpProto& op, const at::Tensor& x, const at::Tensor& gamma,
                                                    const at::Tensor& z, double epsilon) {
  const tiling::NormArgs<c10::SymInt> a = GatedArgs<c10::SymInt>(op, x, gamma, z, epsilon);
  return {at::empty_symint(a.x, x.options()), at::empty_symint(a.rstd, x.options().dtype(at::kFloat))};
}

std::tuple<at::Tensor, at::Tensor> BackwardMeta(const OpProto& op, const at::Tensor& dy, const at::Tensor& x,
                                                const at::Tensor& rstd, const at::Tensor& gamma,
                                                const at::Tensor* dxOut) {
  const tiling::NormArgs<c10::SymInt> a = BackwardArgs<c10::SymInt>(op, dy, x, rstd, gamma, dxOut);
  return {at::empty_symint(a.x, x.options()), at::empty_symint(a.gamma, gamma.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> GatedBackwardMeta(const OpProto& op, const at::Tensor& dy,
                                                                 const at::Tensor& x, const at::Tensor& rstd,
                                                                 const at::Tensor& gamma, const at::Tensor& z) {
  const tiling::NormArgs<c10::SymInt> a = BackwardArgs<c10::SymInt>(op, dy, x, rstd, gamma, &z);
  return {at::empty_symint(a.x, x.options()), at::empty_symint(a.gamma, gamma.options()),
          at::empty_symint(a.x, x.options())};
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplNormOps<ForwardMeta, BackwardMeta, GatedForwardMeta, GatedBackwardMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplNormOps<Forward, Backward, GatedForward, GatedBackward>(m); }

}  // namespace ascendc_ops
