// Deliberately wrong cube kernels, one per Matmul agreement rule (tiling/cube_tiling_rules.h,
// twin_cube.h), exposed as torch.ops.twin_cube_faults.run(name) for tests/twin/test_twin_cube.py.
// "correct" is the control: grouped_matmul.cpp's pattern, B's MatmulType chosen by the layout.
#include <torch/library.h>

#include <string>
#include <type_traits>
#include <vector>

#include "cube_tiling_rules.h"
#include "kernel_operator.h"
#include "kernel_table.h"
#include "lib/matmul_intf.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {
constexpr int32_t kDim = 64;  // one 64 x 64 x 64 fp32 block

// A tiling as the host fills it for fp32 operands with these transpositions.
TCubeTiling Tiling(bool transA, bool transB) {
  TCubeTiling t{};
  t.usedCoreNum = 1;
  t.M = t.N = t.Ka = t.Kb = kDim;
  t.singleCoreM = t.singleCoreN = t.singleCoreK = kDim;
  t.baseM = 64, t.baseN = 64, t.baseK = 32;
  t.stepM = t.stepN = 1, t.stepKa = t.stepKb = 2;
  t.depthA1 = t.depthB1 = 4;
  t.dbL0A = t.dbL0B = 2, t.dbL0C = 1;
  cube_rules::FillUsedSize(t, {4, true, transA}, {4, true, transB});
  return t;
}

thread_local TCubeTiling tTiling;

template <bool TA, bool TB, bool FA, bool FB>
void Gemm(GM_ADDR x) {
  GlobalTensor<float> a, b, c;
  a.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x), kDim * kDim);
  b.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x) + kDim * kDim, kDim * kDim);
  c.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x) + 2 * kDim * kDim, kDim * kDim);
  TPipe pipe;
  Matmul<MatmulType<TPosition::GM, CubeFormat::ND, float, TA>, MatmulType<TPosition::GM, CubeFormat::ND, float, TB>,
         MatmulType<TPosition::GM, CubeFormat::ND, float>>
      mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tTiling);
  mm.SetTensorA(a, FA);
  mm.SetTensorB(b, FB);
  mm.IterateAll(c);
  mm.End();
}

extern "C" __global__ __aicore__ void cube_correct(GM_ADDR x) {
  tTiling = Tiling(false, true);
  Gemm<false, true, false, true>(x);  // weight stored [N, K]
  tTiling = Tiling(false, false);
  Gemm<false, false, false, false>(x);  // weight stored [K, N]
}

// The old grouped_matmul: B declared ISTRANS true, run with isTransposeB false, fp32.
extern "C" __global__ __aicore__ void b_istrans_runtime_false(GM_ADDR x) {
  tTiling = Tiling(false, false);
  Gemm<false, true, false, false>(x);
}

extern "C" __global__ __aicore__ void a_istrans_runtime_false(GM_ADDR x) {
  tTiling = Tiling(false, false);
  Gemm<true, false, false, false>(x);
}

extern "C" __global__ __aicore__ void b_runtime_true_without_istrans(GM_ADDR x) {
  tTiling = Tiling(false, true);
  Gemm<false, false, false, true>(x);
}

// A tiling made for B transposed (baseK 8: C0 alignment) run by a kernel whose B is not.
extern "C" __global__ __aicore__ void tiling_base_k_for_other_transposition(GM_ADDR x) {
  tTiling = Tiling(false, true);
  tTiling.baseK = 8;
  cube_rules::FillUsedSize(tTiling, {4, true, false}, {4, true, true});
  Gemm<false, false, false, false>(x);
}

extern "C" __global__ __aicore__ void tiling_depth_not_step(GM_ADDR x) {
  tTiling = Tiling(false, false);
  tTiling.depthA1 = 3;
  Gemm<false, false, false, false>(x);
}

extern "C" __global__ __aicore__ void tiling_share_l1_unfilled(GM_ADDR x) {
  tTiling = Tiling(false, false);
  tTiling.shareL1Size = 0;
  Gemm<false, false, false, false>(x);
}

using Kernel = void (*)(GM_ADDR);
const KernelTable<Kernel>& Kernels() {
  static const KernelTable<Kernel> kernels{
      {"correct", cube_correct},
      {"b_istrans_runtime_false", b_istrans_runtime_false},
      {"a_istrans_runtime_false", a_istrans_runtime_false},
      {"b_runtime_true_without_istrans", b_runtime_true_without_istrans},
      {"tiling_base_k_for_other_transposition", tiling_base_k_for_other_transposition},
      {"tiling_depth_not_step", tiling_depth_not_step},
      {"tiling_share_l1_unfilled", tiling_share_l1_unfilled}};
  return kernels;
}

void Run(c10::string_view name, int64_t blockDim) {
  auto it = FindKernel(Kernels(), name, "cube fault kernel");
  std::vector<float> gm(3 * kDim * kDim, 0.5f);
  RaiseRuleErrors([&] {
    AscendC::twin::Launch(it->first.c_str(), uint32_t(blockDim), it->second, reinterpret_cast<GM_ADDR>(gm.data()));
  });
}

std::vector<std::string> Names() { return KernelNames(Kernels()); }
}  // namespace

TORCH_LIBRARY(twin_cube_faults, m) {
  m.def("run(str name, int block_dim=1) -> ()", &Run);
  m.def("names() -> str[]", &Names);
}
