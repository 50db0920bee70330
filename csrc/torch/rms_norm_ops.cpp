// RMSNorm on the CPU twin: rms_norm, add_rms_norm and their *_grad ops, running the kernels in
// csrc/kernels/rms_norm.cpp and csrc/kernels/rms_norm_grad.cpp. Backward is two launches: the
// row kernel (dx, per-block fp32 dgamma partials in the workspace) and the dgamma reduction.
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "rms_norm_ops.h"
#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The kernels' entry points (csrc/kernels/rms_norm.cpp, rms_norm_grad.cpp), compiled for the twin, from their lists.
ASCENDC_TWIN_KERNELS(RMS_NORM_DTYPES, rms_norm, RMS_NORM_PARAMS)
ASCENDC_TWIN_KERNELS(ADD_RMS_NORM_DTYPES, add_rms_norm, ADD_RMS_NORM_PARAMS)
ASCENDC_TWIN_KERNELS(RMS_NORM_GRAD_DTYPES, rms_norm_grad, RMS_NORM_GRAD_PARAMS)
ASCENDC_TWIN_KERNELS(ADD_RMS_NORM_GRAD_DTYPES, add_rms_norm_grad, ADD_RMS_NORM_GRAD_PARAMS)
ASCENDC_TWIN_KERNELS(RMS_NORM_DGAMMA_DTYPES, rms_norm_dgamma, RMS_NORM_DGAMMA_PARAMS)

namespace ascendc_ops {
namespace {

// x [..., *gamma.shape]: gamma's dims are x's trailing dims. Returns (rows, hidden).
std::pair<int64_t, int64_t> CheckNormShapes(const OpProto& op, const at::Tensor& x, const at::Tensor& gamma,
                                            size_t xIndex, size_t gammaIndex) {
  const char* xName = op.inputs[xIndex];
  const char* gName = op.inputs[gammaIndex];
  TORCH_CHECK_VALUE(gamma.dim() >= 1, op.name, ": ", gName,
                    " must have at least one dim (the normalized dims), got shape ", ShapeString(gamma));
  TORCH_CHECK_VALUE(x.dim() >= gamma.dim() && x.dim() <= 8, op.name, ": ", xName, " must have rank ", gamma.dim(),
                    "..8 (its trailing dims are ", gName, "'s), got shape ", ShapeString(x));
  const int64_t lead = x.dim() - gamma.dim();
  TORCH_CHECK_VALUE(x.sizes().slice(lead) == gamma.sizes(), op.name, ": ", gName, " of shape ", ShapeString(gamma),
                    " must equal the trailing dims of ", xName, " of shape ", ShapeString(x));
  int64_t rows = 1;
  for (int64_t k = 0; k < lead; ++k) rows *= x.size(k);
  const int64_t hidden = gamma.numel();
  TORCH_CHECK_VALUE(hidden <= std::numeric_limits<int32_t>::max(), op.name, ": ", gName, " has ", hidden,
                    " elements; at most 2^31 - 1 are supported");
  return {rows, hidden};
}

void CheckEpsilon(const OpProto& op, double epsilon) {
  TORCH_CHECK_VALUE(std::isfinite(epsilon) && epsilon >= 0, op.name, ": epsilon must be finite and >= 0, got ",
                    epsilon);
}

// x's shape with the normalized (gamma's) dims set to 1.
std::vector<int64_t> RstdShape(const at::Tensor& x, const at::Tensor& gamma) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  for (int64_t k = x.dim() - gamma.dim(); k < x.dim(); ++k) shape[k] = 1;
  return shape;
}

tiling::NormTiling Tile(const OpProto& op, int64_t rows, int64_t hidden, const at::Tensor& x, const at::Tensor& gamma,
                        bool add, bool backward, double epsilon, const tiling::PlatformInfo& platform) {
  tiling::NormProblem problem{
      rows,     uint32_t(hidden), TilingDtype(x.scalar_type()), TilingDtype(gamma.scalar_type()), add,
      backward, float(epsilon)};
  try {
    return tiling::TileNorm(problem, platform);
  } catch (const tiling::TilingError& e) {
    TORCH_CHECK_VALUE(false, op.name, ": ", e.what());
  }
}

}  // namespace

// ---- forward ----
NormForwardLaunch PrepareNormForward(const OpProto& op, const at::Tensor& x1In, const at::Tensor* x2In,
                                     const at::Tensor& gammaIn, double epsilon, const tiling::PlatformInfo& platform) {
  const bool add = x2In != nullptr;
  const size_t gIndex = add ? 2 : 1;
  if (add) {
    CheckSameDevice(op, {x1In, *x2In, gammaIn});
    CheckDtypes(op, {x1In, *x2In, gammaIn});
    TORCH_CHECK_VALUE(x1In.sizes() == x2In->sizes(), op.name, ": ", op.inputs[0], " and ", op.inputs[1],
                      " must have one shape, got ", ShapeString(x1In), " and ", ShapeString(*x2In));
  } else {
    CheckSameDevice(op, {x1In, gammaIn});
    CheckDtypes(op, {x1In, gammaIn});
  }
  CheckEpsilon(op, epsilon);
  const auto [rows, hidden] = CheckNormShapes(op, x1In, gammaIn, 0, gIndex);
  const at::Tensor x1 = x1In.contiguous(), gamma = gammaIn.contiguous();
  const at::Tensor x2 = add ? x2In->contiguous() : at::Tensor();
  at::Tensor y = at::empty(x1.sizes(), x1.options());
  at::Tensor rstd = at::empty(RstdShape(x1, gamma), x1.options().dtype(at::kFloat));
  at::Tensor xOut = add ? at::empty(x1.sizes(), x1.options()) : at::Tensor();
  if (rows > 0 && hidden == 0) rstd.fill_(std::numeric_limits<float>::quiet_NaN());  // mean of no elements
  return {x1, x2, gamma, y, rstd, xOut, Tile(op, rows, hidden, x1, gamma, add, false, epsilon, platform)};
}

namespace {

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

std::tuple<at::Tensor, at::Tensor> RmsNorm(const at::Tensor& x, const at::Tensor& gamma, double epsilon) {
  auto [y, rstd, unused] = Forward(kRmsNorm, x, nullptr, gamma, epsilon);
  return {y, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> AddRmsNorm(const at::Tensor& x1, const at::Tensor& x2,
                                                          const at::Tensor& gamma, double epsilon) {
  return Forward(kAddRmsNorm, x1, &x2, gamma, epsilon);
}

}  // namespace

// ---- backward ----
NormBackwardLaunch PrepareNormBackward(const OpProto& op, const at::Tensor& dyIn, const at::Tensor& xIn,
                                       const at::Tensor& rstdIn, const at::Tensor& gammaIn, const at::Tensor* dxOutIn,
                                       const tiling::PlatformInfo& platform) {
  const bool add = dxOutIn != nullptr;
  if (add) {
    CheckSameDevice(op, {dyIn, xIn, rstdIn, gammaIn, *dxOutIn});
    CheckDtypes(op, {dyIn, xIn, rstdIn, gammaIn, *dxOutIn});
  } else {
    CheckSameDevice(op, {dyIn, xIn, rstdIn, gammaIn});
    CheckDtypes(op, {dyIn, xIn, rstdIn, gammaIn});
  }
  const auto [rows, hidden] = CheckNormShapes(op, xIn, gammaIn, 1, 3);
  TORCH_CHECK_VALUE(dyIn.sizes() == xIn.sizes(), op.name, ": ", op.inputs[0], " must have ", op.inputs[1], "'s shape ",
                    ShapeString(xIn), ", got ", ShapeString(dyIn));
  if (add)
    TORCH_CHECK_VALUE(dxOutIn->sizes() == xIn.sizes(), op.name, ": ", op.inputs[4], " must have ", op.inputs[1],
                      "'s shape ", ShapeString(xIn), ", got ", ShapeString(*dxOutIn));
  const std::vector<int64_t> rstdShape = RstdShape(xIn, gammaIn);
  TORCH_CHECK_VALUE(rstdIn.sizes() == at::IntArrayRef(rstdShape), op.name, ": ", op.inputs[2], " must have shape ",
                    at::IntArrayRef(rstdShape), " (", op.inputs[1], "'s with the normalized dims set to 1), got ",
                    ShapeString(rstdIn));
  const at::Tensor dy = dyIn.contiguous(), x = xIn.contiguous(), rstd = rstdIn.contiguous(),
                   gamma = gammaIn.contiguous();
  const at::Tensor dxOut = add ? dxOutIn->contiguous() : at::Tensor();
  at::Tensor dx = at::empty(x.sizes(), x.options());
  at::Tensor dgamma = at::zeros(gamma.sizes(), gamma.options());  // no rows: dgamma is an empty sum
  return {dy, x, rstd, gamma, dxOut, dx, dgamma, Tile(op, rows, hidden, x, gamma, add, true, 0.0, platform)};
}

namespace {

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

std::tuple<at::Tensor, at::Tensor> RmsNormGrad(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                               const at::Tensor& gamma) {
  return Backward(kRmsNormGrad, dy, x, rstd, gamma, nullptr);
}

std::tuple<at::Tensor, at::Tensor> AddRmsNormGrad(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                  const at::Tensor& gamma, const at::Tensor& dxOut) {
  return Backward(kAddRmsNormGrad, dy, x, rstd, gamma, &dxOut);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  m.impl("rms_norm", &RmsNorm);
  m.impl("rms_norm_grad", &RmsNormGrad);
  m.impl("add_rms_norm", &AddRmsNorm);
  m.impl("add_rms_norm_grad", &AddRmsNormGrad);
}

}  // namespace ascendc_ops
