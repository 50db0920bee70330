// The mix template kernel as an op of the harness: torch.ops.ascendc_ops.mix_matmul_epilogue_example
// (a, b, bias, scale) runs csrc/kernels/examples/mix_matmul_epilogue_example.cpp on the twin, one
// core group (KERNEL_TYPE_MIX_AIC_1_2: one AIC, two AIVs), so `ascendc-ops estimate --example
// mix_matmul_epilogue` can record and model it. Not a product op (no op_proto); its shapes are the
// example's constants (cube_matmul_example.h): a [48, 64] and b [64, 32] half, bias [32] float.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

#include "twin_backend.h"
#include "twin_crosscore.h"

extern "C" void mix_matmul_epilogue_example(uint8_t* a, uint8_t* b, uint8_t* bias, uint8_t* y, uint8_t* workspace,
                                            float scale);

namespace ascendc_ops {
namespace {
constexpr int64_t kM = 48, kK = 64, kN = 32;

void CheckInput(const at::Tensor& t, const char* name, at::ScalarType dtype, at::IntArrayRef shape) {
  TORCH_CHECK_VALUE(t.device().is_cpu(), "mix_matmul_epilogue_example: ", name, " must be on the CPU (the twin), got ",
                    t.device());
  TORCH_CHECK_VALUE(t.scalar_type() == dtype && t.sizes() == shape, "mix_matmul_epilogue_example: ", name, " must be ",
                    dtype, " ", shape, " (the example's fixed shape), got ", t.scalar_type(), " ", t.sizes());
}

at::Tensor MixMatmulEpilogueExample(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias, double scale) {
  CheckInput(a, "a", at::kHalf, {kM, kK});
  CheckInput(b, "b", at::kHalf, {kK, kN});
  CheckInput(bias, "bias", at::kFloat, {kN});
  const at::Tensor ac = a.contiguous(), bc = b.contiguous(), biasc = bias.contiguous();
  at::Tensor y = at::empty({kM, kN}, a.options().dtype(at::kFloat));
  // the system workspace, then C (fp32 [M, N]) handed from the AIC to the AIVs
  std::vector<uint8_t> workspace(AscendC::twin::kSystemWorkspaceBytes + kM * kN * sizeof(float));
  LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, "mix_matmul_epilogue_example", 1, mix_matmul_epilogue_example, Gm(ac),
                    Gm(bc), Gm(biasc), Gm(y), workspace.data(), float(scale));
  return y;
}
}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("mix_matmul_epilogue_example(Tensor a, Tensor b, Tensor bias, float scale=1.0) -> Tensor",
        &MixMatmulEpilogueExample);
}

}  // namespace ascendc_ops
