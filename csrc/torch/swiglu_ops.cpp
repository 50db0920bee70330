// SwiGLU on the CPU twin: swiglu and swiglu_grad run csrc/kernels/swiglu.cpp on x viewed as
// [outer, 2, inner] around the split dim.
#include "swiglu_ops.h"

#include <torch/library.h>

#include "kernel_entries.h"
#include "swiglu_problem.h"
#include "op_proto_gen.h"
#include "twin_backend.h"

// The SwiGLU kernel entry points compiled for the CPU twin (csrc/kernels/swiglu.cpp), from their lists.
SWIGLU_KERNELS(ASCENDC_TWIN_KERNELS)

namespace ascendc_ops {

SwigluLaunch PrepareSwiglu(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool backward,
                           const tiling::PlatformInfo& platform) {
  if (backward) CheckSameDevice(op, {dy, x});
  const tiling::TensorArg<int64_t> dyArg = Arg(dy), xArg = Arg(x);
  SwigluLaunch l;
  Checked(op, [&] {
    const tiling::SwigluArgs<int64_t> a = tiling::CheckSwiglu(op, backward ? &dyArg : nullptr, xArg, dim);
    l.tiling = tiling::TileSwiglu(tiling::SwigluProblemOf(a, xArg.dtype, backward), platform);
    l.out = at::empty(a.out, x.options());
  });
  l.x = x.contiguous();
  if (backward) l.dy = dy.contiguous();
  return l;
}

namespace {

at::Tensor RunOnTwin(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool backward) {
  SwigluLaunch l = PrepareSwiglu(op, dy, x, dim, backward, TwinPlatform());
  if (l.tiling.blockDim == 0) return l.out;
  uint8_t* tilingGm = reinterpret_cast<uint8_t*>(&l.tiling.data);
  const uint32_t blocks = l.tiling.blockDim;
  const at::ScalarType dtype = l.x.scalar_type();
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  if (!backward) {
    const auto& e = PickEntry(twin_entries::swiglu, dtype);
    const auto args = EntryArgs(gm, l.Tensors(), nullptr, tilingGm);
    LaunchOnTwin(bytes, e.name, blocks, e.fn, args);
  } else {
    const auto& e = PickEntry(twin_entries::swiglu_grad, dtype);
    const auto args = EntryArgs(gm, l.GradTensors(), nullptr, tilingGm);
    LaunchOnTwin(bytes, e.name, blocks, e.fn, args);
  }
  return l.out;
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the output's shape.
at::Tensor SwigluMeta(const OpProto& op, const at::Tensor& dy, const at::Tensor& x, int64_t dim, bool) {
  if (dy.defined()) CheckSameDevice(op, {dy, x});
  const tiling::TensorArg<c10::SymInt> dyArg = SymArg(dy), xArg = SymArg(x);
  return Checked(op, [&] {
    return at::empty_symint(tiling::CheckSwiglu(op, dy.defined() ? &dyArg : nullptr, xArg, dim).out, x.options());
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplSwigluOps<SwigluMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplSwigluOps<RunOnTwin>(m); }

}  // namespace ascendc_ops
