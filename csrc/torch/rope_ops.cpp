// RoPE on the CPU twin: rotary_mul, rope_customer and their *_grad ops all run the one kernel
// in csrc/kernels/rope.cpp; they differ in layout rules, mode and direction (tiling/rope_problem.h).
#include "rope_ops.h"

#include <torch/library.h>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "rope_problem.h"
#include "twin_backend.h"

// The kernel entry points of csrc/kernels/rope.cpp, compiled for the twin into this library, from their list.
ROPE_KERNELS(ASCENDC_TWIN_KERNELS)

namespace ascendc_ops {

RopeLaunch PrepareRope(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                       std::optional<std::string_view> rotaryMode, bool backward,
                       const tiling::PlatformInfo& platform) {
  CheckSameDevice(op, {x, cos, sin});
  const tiling::TensorArg<int64_t> xArg = Arg(x), cosArg = Arg(cos), sinArg = Arg(sin);
  const tiling::RopeArgs<int64_t> a =
      Checked(op, [&] { return tiling::CheckRope(op, xArg, cosArg, sinArg, rotaryMode); });
  RopeLaunch l;
  // cos/sin of another float dtype are cast to x's, as npu_rotary_mul does.
  l.x = x.contiguous();
  l.cos = cos.to(x.scalar_type()).contiguous();
  l.sin = sin.to(x.scalar_type()).contiguous();
  l.y = at::empty(a.out, x.options());
  if (x.numel() == 0) {
    l.tiling.blockDim = 0;
    return l;
  }
  Checked(op, [&] { l.tiling = tiling::TileRope(tiling::RopeProblemOf(a, xArg.dtype, backward), platform); });
  return l;
}

ApplyRopeLaunch PrepareApplyRope(const OpProto& op, const at::Tensor& query, const at::Tensor& key,
                                 const at::Tensor& cos, const at::Tensor& sin, std::string_view layout,
                                 std::string_view rotaryMode, bool backward, const tiling::PlatformInfo& platform) {
  CheckSameDevice(op, {query, key, cos, sin});
  const tiling::TensorArg<int64_t> qArg = Arg(query), kArg = Arg(key), cosArg = Arg(cos), sinArg = Arg(sin);
  const tiling::ApplyRopeArgs<int64_t> a =
      Checked(op, [&] { return tiling::CheckApplyRope(op, qArg, kArg, cosArg, sinArg, layout, rotaryMode); });
  // both written in place: one tensor twice would be rotated twice
  if (query.numel() > 0 && query.data_ptr() == key.data_ptr())
    Checked(op, [&] {
      tiling::Fail(tiling::ArgError::kValue, op, op.inputs[0], " and ", op.inputs[1], " must not share memory");
    });
  ApplyRopeLaunch l;
  l.query = query.contiguous();
  l.key = key.contiguous();
  l.cos = cos.to(query.scalar_type()).contiguous();
  l.sin = sin.to(query.scalar_type()).contiguous();
  l.tiling.blockDim = 0;
  if (query.numel() == 0 && key.numel() == 0) return l;
  Checked(op, [&] {
    tiling::RopeProblem q = tiling::RopeProblemOf(a.query, qArg.dtype, backward);
    tiling::RopeProblem k = tiling::RopeProblemOf(a.key, qArg.dtype, backward);
    q.rowElems = k.rowElems = uint32_t(a.rowElems);
    l.tiling = tiling::TileApplyRope(q, k, platform);
  });
  return l;
}

void FinishApplyRope(const ApplyRopeLaunch& l, const at::Tensor& query, const at::Tensor& key) {
  if (!l.query.is_same(query)) const_cast<at::Tensor&>(query).copy_(l.query);
  if (!l.key.is_same(key)) const_cast<at::Tensor&>(key).copy_(l.key);
}

namespace {

void ApplyRopeOnTwin(const OpProto& op, const at::Tensor& query, const at::Tensor& key, const at::Tensor& cos,
                     const at::Tensor& sin, std::string_view layout, std::string_view mode, bool backward) {
  ApplyRopeLaunch l = PrepareApplyRope(op, query, key, cos, sin, layout, mode, backward, TwinPlatform());
  if (l.tiling.blockDim == 0) return;
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  const auto args = EntryArgs(gm, l.Tensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
  const auto& e = PickEntry(twin_entries::apply_rope, l.query.scalar_type());
  LaunchOnTwin(bytes, e.name, l.tiling.blockDim, e.fn, args);
  FinishApplyRope(l, query, key);
}

at::Tensor RopeOnTwin(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                      std::optional<std::string_view> mode, bool backward) {
  RopeLaunch l = PrepareRope(op, x, cos, sin, mode, backward, TwinPlatform());
  if (l.tiling.blockDim == 0) return l.y;
  uint64_t bytes = 0;
  const CountedGm gm{bytes};
  const auto args = EntryArgs(gm, l.Tensors(), nullptr, reinterpret_cast<uint8_t*>(&l.tiling.data));
  const auto& e = PickEntry(twin_entries::rope, l.x.scalar_type());
  LaunchOnTwin(bytes, e.name, l.tiling.blockDim, e.fn, args);
  return l.y;
}

// Meta (FakeTensor, torch.compile): the same checks on symbolic shapes, then the output's shape.
at::Tensor RopeMeta(const OpProto& op, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                    std::optional<std::string_view> mode, bool) {
  CheckSameDevice(op, {x, cos, sin});
  const tiling::TensorArg<c10::SymInt> xArg = SymArg(x), cosArg = SymArg(cos), sinArg = SymArg(sin);
  return Checked(op,
                 [&] { return at::empty_symint(tiling::CheckRope(op, xArg, cosArg, sinArg, mode).out, x.options()); });
}

// apply_rotary_pos_emb(_grad) on Meta: the checks only (the op writes its inputs, creates nothing).
void ApplyRopeMeta(const OpProto& op, const at::Tensor& query, const at::Tensor& key, const at::Tensor& cos,
                   const at::Tensor& sin, std::string_view layout, std::string_view mode, bool) {
  CheckSameDevice(op, {query, key, cos, sin});
  const tiling::TensorArg<c10::SymInt> qArg = SymArg(query), kArg = SymArg(key), cosArg = SymArg(cos),
                                       sinArg = SymArg(sin);
  Checked(op, [&] { tiling::CheckApplyRope(op, qArg, kArg, cosArg, sinArg, layout, mode); });
}

}  // namespace

TORCH_LIBRARY_IMPL(custom, Meta, m) { ImplRopeOps<RopeMeta, ApplyRopeMeta>(m); }

TORCH_LIBRARY_IMPL(custom, CPU, m) { ImplRopeOps<RopeOnTwin, ApplyRopeOnTwin>(m); }

}  // namespace ascendc_ops
