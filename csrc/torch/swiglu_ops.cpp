// SwiGLU on the CPU twin: swiglu and swiglu_grad run csrc/kernels/swiglu.cpp on x viewed as
// [outer, 2, inner] around the split dim.
#include "swiglu_ops.h"

#include <torch/library.h>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The SwiGLU kernel entry points compiled for the CPU twin (csrc/kernels/swiglu.cpp), from their lists.
ASCENDC_TWIN_KERNELS(SWIGLU_DTYPES, swiglu, SWIGLU_PARAMS)
ASCENDC_TWIN_KERNELS(SWIGLU_GRAD_DTYPES, swiglu_grad, SWIGLU_GRAD_PARAMS)

namespace ascendc_ops {
namespace {

// x's shape with `dim` halved: the forward output, and what dy must be.
std::vector<int64_t> HalvedShape(const at::Tensor& x, int64_t dim) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape[dim] /= 2;
  return shape;
}

}  // namespace

SwigluLaunch PrepareSwiglu(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool backward,
                           const tiling::PlatformInfo& platform) {
  const size_t xIndex = backward ? 1 : 0;
  const char* xName = op.inputs[xIndex];
  if (backward) CheckSameDevice(op, {dy, x});
  const int64_t rank = x.dim();
  TORCH_CHECK_VALUE(rank >= 1, op.name, ": ", xName, " must have at least 1 dim to split, got a 0-dim tensor");
  TORCH_CHECK_VALUE(dim >= -rank && dim < rank, op.name, ": dim must be in [", -rank, ", ", rank - 1, "] for ", xName,
                    " of shape ", ShapeString(x), ", got ", dim);
  const int64_t d = dim < 0 ? dim + rank : dim;
  TORCH_CHECK_VALUE(x.size(d) % 2 == 0, op.name, ": ", xName, ".size(", dim,
                    ") must be even to split into two halves, got ", x.size(d), " (", xName, " shape ", ShapeString(x),
                    ")");
  const std::vector<int64_t> half = HalvedShape(x, d);
  if (backward) {
    TORCH_CHECK_VALUE(dy.sizes() == at::IntArrayRef(half), op.name, ": ", op.inputs[0], " must have shape ",
                      at::IntArrayRef(half), " (", xName, " shape ", ShapeString(x), " with dim ", dim,
                      " halved), got ", ShapeString(dy));
    CheckDtype(op, xIndex, x);
    CheckDtypes(op, {dy, x});
  } else {
    CheckDtype(op, 0, x);
  }

  SwigluLaunch l;
  l.x = x.contiguous();
  if (backward) l.dy = dy.contiguous();
  l.out = backward ? at::empty_like(l.x, at::MemoryFormat::Contiguous) : at::empty(half, x.options());
  int64_t outer = 1, inner = x.size(d) / 2;
  for (int64_t k = 0; k < d; ++k) outer *= x.size(k);
  for (int64_t k = d + 1; k < rank; ++k) inner *= x.size(k);
  try {
    l.tiling = tiling::TileSwiglu({outer, inner, TilingDtype(x.scalar_type()), backward}, platform);
  } catch (const tiling::TilingError& e) {
    TORCH_CHECK_VALUE(false, op.name, ": ", e.what());
  }
  return l;
}

namespace {

at::Tensor RunOnTwin(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool backward) {
  SwigluLaunch l = PrepareSwiglu(op, dy, x, dim, backward, TwinPlatform());
  if (l.tiling.blockDim == 0) return l.out;
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(&l.tiling.data);
  uint8_t* workspace = nullptr;
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType dtype = l.x.scalar_type();
  if (!backward) {
    const auto& e = PickEntry(twin_entries::swiglu, dtype);
    LaunchOnTwin(GmBytes(l.x, l.out), e.name, blocks, e.fn, Gm(l.x), Gm(l.out), workspace, tilingGm);
  } else {
    const auto& e = PickEntry(twin_entries::swiglu_grad, dtype);
    LaunchOnTwin(GmBytes(l.dy, l.x, l.out), e.name, blocks, e.fn, Gm(l.dy), Gm(l.x), Gm(l.out), workspace, tilingGm);
  }
  return l.out;
}

at::Tensor Swiglu(const at::Tensor& x, int64_t dim) { return RunOnTwin(kSwiglu, at::Tensor(), x, dim, false); }
at::Tensor SwigluGrad(const at::Tensor& dy, const at::Tensor& x, int64_t dim) {
  return RunOnTwin(kSwigluGrad, dy, x, dim, true);
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, CPU, m) {
  m.impl("swiglu", &Swiglu);
  m.impl("swiglu_grad", &SwigluGrad);
}

}  // namespace ascendc_ops
