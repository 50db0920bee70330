// AdamW bindings shared by the CPU-twin and NPU launchers: argument checks, contiguous views and tiling.
#pragma once
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <vector>

#include "kernel_entries.h"
#include "op_proto_gen.h"
#include "op_proto_table.h"
#include "optimizer_tiling.h"

// The family's kernel entry lists (tiling/optimizer_tiling_data.h), for ASCENDC_TWIN_KERNELS and ASCENDC_NPU_KERNELS.
#define OPTIMIZER_KERNELS(X)                                    \
  X(APPLY_ADAM_W_DTYPES, apply_adam_w, APPLY_ADAM_W_PARAMS)     \
  X(APPLY_ADAM_W_DTYPES, foreach_adam_w, FOREACH_ADAM_W_PARAMS) \
  X(FOREACH_NORM_DTYPES, foreach_norm, FOREACH_NORM_PARAMS)     \
  X(FOREACH_CLIP_DTYPES, foreach_clip_by_total_norm, FOREACH_CLIP_PARAMS)

namespace ascendc_ops {

// apply_adam_w: the tensors as the kernel updates them in place (the arguments themselves, or contiguous copies
// FinishApplyAdamW writes back) and the tiling. maxV is undefined without amsgrad.
struct AdamWLaunch {
  at::Tensor var, m, v, grad, maxV;
  tiling::AdamWTiling tiling;

  // The kernel's GM tensors (EntryArgs, no workspace): APPLY_ADAM_W_PARAMS.
  auto Tensors() const { return std::tie(var, m, v, grad, maxV); }
};

// The attributes in the prototype's order (op_proto/optimizer/apply_adam_w.json).
inline tiling::AdamWHyper AdamWHyperOf(double lr, double beta1, double beta2, double weightDecay, double eps,
                                       double step, bool amsgrad, bool maximize) {
  return {lr, beta1, beta2, weightDecay, eps, step, amsgrad, maximize};
}

ASCENDC_OPS_API AdamWLaunch PrepareApplyAdamW(const OpProto& op, const at::Tensor& var, const at::Tensor& m,
                                              const at::Tensor& v, const at::Tensor& grad,
                                              const std::optional<at::Tensor>& maxV, const tiling::AdamWHyper& hyper,
                                              const tiling::PlatformInfo& platform);

// After the launch: the arguments get the updated values where the kernel worked on copies.
ASCENDC_OPS_API void FinishApplyAdamW(const AdamWLaunch& l, const at::Tensor& var, const at::Tensor& m,
                                      const at::Tensor& v, const std::optional<at::Tensor>& maxV);

// foreach_adam_w: the lists' tensors as the kernel updates them (the arguments, or contiguous copies written back),
// the tensor table the kernel reads (tiling/optimizer_tiling_data.h: int64 [tensors, ADAM_W_TABLE_COLUMNS], on the
// CPU; the NPU launcher copies it to the device) and the tiling.
struct ForeachAdamWLaunch {
  std::vector<at::Tensor> var, m, v, grad, maxV, master;
  at::Tensor table;
  uint64_t bytes = 0;  // GM bytes the update reads and writes (the tensors once each)
  tiling::AdamWTiling tiling;
};

// The lists' arguments of foreach_adam_w, in the prototype's order (maxV empty without amsgrad, master empty
// without fp32 master copies).
struct AdamWLists {
  at::TensorList var, m, v, grad, maxV, master;
};

ASCENDC_OPS_API ForeachAdamWLaunch PrepareForeachAdamW(const OpProto& op, const AdamWLists& lists,
                                                       const tiling::AdamWHyper& hyper,
                                                       const tiling::PlatformInfo& platform);

// After the launch: the lists' tensors get the updated values where the kernel worked on copies.
ASCENDC_OPS_API void FinishForeachAdamW(const ForeachAdamWLaunch& l, const AdamWLists& lists);

// foreach_norm: the tensors read (contiguous), their table (int64 [tensors, 2]: address, first element in the run;
// on the CPU), the zeroed fp32 slots the blocks write their pieces' partials to, each slot's tensor (`owner`: the
// tensor count for slots no piece uses) and the tiling.
struct ForeachNormLaunch {
  std::vector<at::Tensor> x;
  at::Tensor table, partials, owner;
  uint64_t bytes = 0;
  tiling::ForeachNormTiling tiling;
};

ASCENDC_OPS_API ForeachNormLaunch PrepareForeachNorm(const OpProto& op, at::TensorList x, double p,
                                                     const tiling::PlatformInfo& platform);

// After the launch: the slots combined per tensor (sum or max, then the square root for p = 2), each norm a 0-dim
// tensor in x's dtype, as torch._foreach_norm gives them.
ASCENDC_OPS_API std::vector<at::Tensor> FinishForeachNorm(const ForeachNormLaunch& l, at::TensorList x);

// foreach_clip_by_total_norm: x as the kernel scales it (the arguments, or contiguous copies written back), the
// total as it writes it, the table (tiling/optimizer_tiling_data.h: x's rows, then the norms' addresses; on the CPU)
// and the tiling. The norms stay where they are: the kernel reads each one at its address.
struct ForeachClipLaunch {
  std::vector<at::Tensor> x;
  at::Tensor total, table;
  uint64_t bytes = 0;  // GM bytes: x read and written, the norms and the total
  tiling::ForeachClipTiling tiling;
};

// The attributes in the prototype's order (op_proto/optimizer/foreach_clip_by_total_norm.json).
struct ClipAttrs {
  double maxNorm, normType;
  bool errorIfNonfinite;
};

ASCENDC_OPS_API ForeachClipLaunch PrepareForeachClip(const OpProto& op, at::TensorList x, at::TensorList norms,
                                                     const at::Tensor& totalNorm, const ClipAttrs& attrs,
                                                     const tiling::PlatformInfo& platform);

// After the launch: x and total_norm get the kernel's values where it worked on copies.
ASCENDC_OPS_API void FinishForeachClip(const ForeachClipLaunch& l, at::TensorList x, const at::Tensor& totalNorm);

// Registers apply_adam_w, foreach_adam_w, foreach_norm and foreach_clip_by_total_norm on one backend (CPU twin, NPU,
// Meta) from its Run(op, var, m, v, grad, max_grad_norm, hyper), RunLists(op, lists, hyper), Norms(op, x, p) and
// Clip(op, x, norms, total_norm, attrs).
template <auto Run, auto RunLists, auto Norms, auto Clip>
void ImplOptimizerOps(torch::Library& m) {
  m.impl("apply_adam_w", [](at::Tensor& var, at::Tensor& mom, at::Tensor& v, const at::Tensor& grad,
                            const std::optional<at::Tensor>& maxV, double lr, double beta1, double beta2,
                            double weightDecay, double eps, double step, bool amsgrad, bool maximize) {
    Run(kApplyAdamW, var, mom, v, grad, maxV,
        AdamWHyperOf(lr, beta1, beta2, weightDecay, eps, step, amsgrad, maximize));
  });
  m.impl("foreach_adam_w", [](at::TensorList var, at::TensorList mom, at::TensorList v, at::TensorList grad,
                              at::TensorList maxV, at::TensorList master, double lr, double beta1, double beta2,
                              double weightDecay, double eps, double step, bool amsgrad, bool maximize) {
    RunLists(kForeachAdamW, AdamWLists{var, mom, v, grad, maxV, master},
             AdamWHyperOf(lr, beta1, beta2, weightDecay, eps, step, amsgrad, maximize));
  });
  m.impl("foreach_norm", [](at::TensorList x, double p) { return Norms(kForeachNorm, x, p); });
  m.impl("foreach_clip_by_total_norm", [](at::TensorList x, at::TensorList norms, at::Tensor& totalNorm, double maxNorm,
                                          double normType, bool errorIfNonfinite) {
    Clip(kForeachClipByTotalNorm, x, norms, totalNorm, ClipAttrs{maxNorm, normType, errorIfNonfinite});
  });
}

}  // namespace ascendc_ops
