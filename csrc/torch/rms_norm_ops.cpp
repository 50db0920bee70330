// RMSNorm on the CPU twin: rms_norm, add_rms_norm and their *_grad ops, running the kernels in
// csrc/kernels/rms_norm.cpp and csrc/kernels/rms_norm_grad.cpp, after the problem functions of
// tiling/rms_norm_problem.h (also the Meta kernels' checks and shapes). Backward is two launches: the
// row kernel (dx, per-block fp32 dgamma partials in the workspace) and the dgamma reduction.
#include <torch/library.h>

#include <limits>
#include <type_traits>

#include "rms_norm_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "rms_norm_problem.h"
#include "twin_backend.h"

// The kernels' entry points (csrc/kernels/rms_norm.cpp, rms_norm_grad.cpp), compiled for the twin, from their lists.
ASCENDC_TWIN_KERNELS(RMS_NORM_DTYPES, rms_norm, RMS_NORM_PARAMS)
ASCENDC_TWIN_KERNELS(ADD_RMS_NORM_DTYPES, add_rms_norm, ADD_RMS_NORM_PARAMS)
ASCENDC_TWIN_KERNELS(GATED_RMS_NORM_DTYPES, gated_rms_norm, GATED_RMS_NORM_PARAMS)
ASCENDC_TWIN_KERNELS(RMS_NORM_GRAD_DTYPES, rms_norm_grad, RMS_NORM_GRAD_PARAMS)
ASCENDC_TWIN_KERNELS(ADD_RMS_NORM_GRAD_DTYPES, add_rms_norm_grad, ADD_RMS_NORM_GRAD_PARAMS)
ASCENDC_TWIN_KERNELS(GATED_RMS_NORM_GRAD_DTYPES, gated_rms_norm_grad, GATED_RMS_NORM_GRAD_PARAMS)
ASCENDC_TWIN_KERNELS(RMS_NORM_DGAMMA_DTYPES, rms_norm_dgamma, RMS_NORM_DGAMMA_PARAMS)

namespace ascendc_ops {
namespace {

template <class Int>
tiling::TensorArg<Int> ArgOf(const at::Tensor& t) {
  if constexpr (std::is_same_v<Int, int64_t>) return Arg(t);
  else return SymArg(t);
}

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
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(const_cast<NormTilingData*>(&t.data));
  uint8_t* none = nullptr;
  LaunchOnTwin(GmBytes(l.x1, l.gamma, l.z, l.y, l.rstd), "gated_rms_norm", t.blockDim,
               PickEntry(twin_entries::gated_rms_norm, l.x1.scalar_type(), l.gamma.scalar_type()).fn, Gm(l.x1),
               Gm(l.gamma), Gm(l.z), Gm(l.y), Gm(l.rstd), none, tilingGm);
  return {l.y, l.rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Forward(const OpProto& op, const at::Tensor& x1In,
                                                       const at::Tensor* x2In, const at::Tensor& gammaIn,
                                                       double epsilon) {
  const bool add = x2In != nullptr;
  NormForwardLaunch l = PrepareNormForward(op, x1In, x2In, gammaIn, epsilon, TwinPlatform());
  const at::Tensor &x1 = l.x1, &x2 = l.x2, &gamma = l.gamma, &y = l.y, &rstd = l.rstd, &xOut = l.xOut;
  const tiling::NormTiling& t = l.tiling;
  if (t.blockDim == 0) return {y, rstd, xOut};
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(const_cast<NormTilingData*>(&t.data));
  uint8_t* none = nullptr;
  if (add) {
    LaunchOnTwin(GmBytes(x1, x2, gamma, y, rstd, xOut), "add_rms_norm", t.blockDim,
                 PickEntry(twin_entries::add_rms_norm, x1.scalar_type(), gamma.scalar_type()).fn, Gm(x1), Gm(x2),
                 Gm(gamma), Gm(y), Gm(rstd), Gm(xOut), none, tilingGm);
  } else {
    LaunchOnTwin(GmBytes(x1, gamma, y, rstd), "rms_norm", t.blockDim,
                 PickEntry(twin_entries::rms_norm, x1.scalar_type(), gamma.scalar_type()).fn, Gm(x1), Gm(gamma), Gm(y),
                 Gm(rstd), none, tilingGm);
  }
  return {y, rstd, xOut};
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
  at::Tensor partials = at::empty({int64_t(t.blockDim), l.gamma.numel()}, l.x.options().dtype(at::kFloat));
  const auto& reduce = PickEntry(twin_entries::rms_norm_dgamma, l.gamma.scalar_type());
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(const_cast<NormTilingData*>(&t.data));
  uint8_t* none = nullptr;
  LaunchOnTwin(GmBytes(l.dy, l.x, l.rstd, l.gamma, l.z, l.dx, l.dz, partials), "gated_rms_norm_grad", t.blockDim,
               PickEntry(twin_entries::gated_rms_norm_grad, l.x.scalar_type(), l.gamma.scalar_type()).fn, Gm(l.dy),
               Gm(l.x), Gm(l.rstd), Gm(l.gamma), Gm(l.z), Gm(l.dx), Gm(l.dz), Gm(partials), tilingGm);
  LaunchOnTwin(GmBytes(partials, l.dgamma), reduce.name, t.reduceBlockDim, reduce.fn, Gm(partials), Gm(l.dgamma), none,
               tilingGm);
  return {l.dx, l.dgamma, l.dz};
}

std::tuple<at::Tensor, at::Tensor> Backward(const OpProto& op, const at::Tensor& dyIn, const at::Tensor& xIn,
                                            const at::Tensor& rstdIn, const at::Tensor& gammaIn,
                                            const at::Tensor* dxOutIn) {
  const bool add = dxOutIn != nullptr;
  NormBackwardLaunch l = PrepareNormBackward(op, dyIn, xIn, rstdIn, gammaIn, dxOutIn, TwinPlatform());
  const at::Tensor &dy = l.dy, &x = l.x, &rstd = l.rstd, &gamma = l.gamma, &dxOut = l.dxOut, &dx = l.dx,
                   &dgamma = l.dgamma;
  const int64_t hidden = gamma.numel();
  const tiling::NormTiling& t = l.tiling;
  if (t.blockDim == 0) return {dx, dgamma};
  at::Tensor partials = at::empty({int64_t(t.blockDim), hidden}, x.options().dtype(at::kFloat));
  const auto& reduce = PickEntry(twin_entries::rms_norm_dgamma, gamma.scalar_type());
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(const_cast<NormTilingData*>(&t.data));
  uint8_t* none = nullptr;
  if (add) {
    LaunchOnTwin(GmBytes(dy, x, rstd, gamma, dxOut, dx, partials), "add_rms_norm_grad", t.blockDim,
                 PickEntry(twin_entries::add_rms_norm_grad, x.scalar_type(), gamma.scalar_type()).fn, Gm(dy), Gm(x),
                 Gm(rstd), Gm(gamma), Gm(dxOut), Gm(dx), Gm(partials), tilingGm);
  } else {
    LaunchOnTwin(GmBytes(dy, x, rstd, gamma, dx, partials), "rms_norm_grad", t.blockDim,
                 PickEntry(twin_entries::rms_norm_grad, x.scalar_type(), gamma.scalar_type()).fn, Gm(dy), Gm(x),
                 Gm(rstd), Gm(gamma), Gm(dx), Gm(partials), tilingGm);
  }
  LaunchOnTwin(GmBytes(partials, dgamma), reduce.name, t.reduceBlockDim, reduce.fn, Gm(partials), Gm(dgamma), none,
               tilingGm);
  return {dx, dgamma};
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
