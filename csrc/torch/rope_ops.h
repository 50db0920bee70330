// RoPE bindings shared by the CPU-twin and NPU launchers: the problem function
// (tiling/rope_problem.h), allocation and tiling.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <string_view>
#include <tuple>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"
#include "rope_tiling.h"

// The family's kernel entry lists (tiling/rope_tiling_data.h), for ASCENDC_TWIN_KERNELS and ASCENDC_NPU_KERNELS.
#define ROPE_KERNELS(X) X(ROPE_DTYPES, rope, ROPE_PARAMS) X(ROPE_DTYPES, apply_rope, APPLY_ROPE_PARAMS)

namespace ascendc_ops {

// Everything a launcher needs: contiguous inputs in x's dtype, the output, and the tiling.
struct RopeLaunch {
  at::Tensor x, cos, sin, y;
  tiling::RopeTiling tiling;

  // The kernel's GM tensors (EntryArgs, no workspace): ROPE_PARAMS.
  auto Tensors() const { return std::tie(x, cos, sin, y); }
};

// Checks (x, cos, sin) for `op` and tiles it for `platform`. `rotaryMode`: rotary_mul(_grad)'s
// "half" / "interleave"; std::nullopt for rope_customer(_grad), the tutorial's fixed layout and mode.
ASCENDC_OPS_API RopeLaunch PrepareRope(const OpProto& op, const at::Tensor& x, const at::Tensor& cos,
                                       const at::Tensor& sin, std::optional<std::string_view> rotaryMode, bool backward,
                                       const tiling::PlatformInfo& platform);

// apply_rotary_pos_emb(_grad): query and key as the kernel rotates them in place (the arguments
// themselves, or contiguous copies the launcher writes back), cos/sin in query's dtype, the tiling.
struct ApplyRopeLaunch {
  at::Tensor query, key, cos, sin;
  tiling::ApplyRopeTiling tiling;

  // The kernel's GM tensors (EntryArgs, no workspace): APPLY_ROPE_PARAMS.
  auto Tensors() const { return std::tie(query, key, cos, sin); }
};

ASCENDC_OPS_API ApplyRopeLaunch PrepareApplyRope(const OpProto& op, const at::Tensor& query, const at::Tensor& key,
                                                 const at::Tensor& cos, const at::Tensor& sin, std::string_view layout,
                                                 std::string_view rotaryMode, bool backward,
                                                 const tiling::PlatformInfo& platform);

// After the launch: query and key get the rotated rows where the kernel worked on copies.
ASCENDC_OPS_API void FinishApplyRope(const ApplyRopeLaunch& l, const at::Tensor& query, const at::Tensor& key);

inline std::string_view StdView(c10::string_view s) { return {s.data(), s.size()}; }

// Registers the six ops on one backend (CPU twin, NPU, Meta) from its two functions:
//   Rope(op, x, cos, sin, rotary_mode (rotary_mul) or std::nullopt (rope_customer), backward) -> y
//   ApplyRope(op, query, key, cos, sin, layout, rotary_mode, backward): query and key rotated in place
template <auto Rope, auto ApplyRope>
void ImplRopeOps(torch::Library& m) {
  m.impl("apply_rotary_pos_emb", [](at::Tensor& query, at::Tensor& key, const at::Tensor& cos, const at::Tensor& sin,
                                    c10::string_view layout, c10::string_view mode) {
    ApplyRope(kApplyRotaryPosEmb, query, key, cos, sin, StdView(layout), StdView(mode), false);
  });
  m.impl("apply_rotary_pos_emb_grad", [](at::Tensor& dquery, at::Tensor& dkey, const at::Tensor& cos,
                                         const at::Tensor& sin, c10::string_view layout, c10::string_view mode) {
    ApplyRope(kApplyRotaryPosEmbGrad, dquery, dkey, cos, sin, StdView(layout), StdView(mode), true);
  });
  m.impl("rotary_mul", [](const at::Tensor& x, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
    return Rope(kRotaryMul, x, r1, r2, StdView(mode), false);
  });
  m.impl("rotary_mul_grad",
         [](const at::Tensor& dy, const at::Tensor& r1, const at::Tensor& r2, c10::string_view mode) {
           return Rope(kRotaryMulGrad, dy, r1, r2, StdView(mode), true);
         });
  m.impl("rope_customer", [](const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    return Rope(kRopeCustomer, x, cos, sin, std::nullopt, false);
  });
  m.impl("rope_customer_grad", [](const at::Tensor& dy, const at::Tensor& cos, const at::Tensor& sin) {
    return Rope(kRopeCustomerGrad, dy, cos, sin, std::nullopt, true);
  });
}

}  // namespace ascendc_ops
