// The twin's cube (Matmul API, its rules, the built-in GEMM) and sort (Sort, MrgSort) behave as the API
// documents, run on a grouped-matmul tiling of the twin's cube. Prints "N passed, M failed".
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "expect.h"
#include "grouped_matmul_problem.h"
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "twin_launch.h"

using namespace tiling;

// ---- the twin's cube ----
static const TCubeTiling* gTiling;
static uint64_t gShortA = 0;  // elements A's GlobalTensor is made short by
// fp32: each MatmulType's ISTRANS is the runtime flag (SetTensorA.md / SetTensorB.md).
template <bool TA, bool TB>
static void MatmulKernel(float* a, float* b, float* c) {
  using namespace AscendC;
  GlobalTensor<float> ga, gb, gc;
  ga.SetGlobalBuffer(a, uint64_t(gTiling->M) * gTiling->Ka - gShortA);
  gb.SetGlobalBuffer(b, uint64_t(gTiling->Kb) * gTiling->N);
  gc.SetGlobalBuffer(c, uint64_t(gTiling->M) * gTiling->N);
  TPipe pipe;
  Matmul<MatmulType<TPosition::GM, CubeFormat::ND, float, TA>, MatmulType<TPosition::GM, CubeFormat::ND, float, TB>,
         MatmulType<TPosition::GM, CubeFormat::ND, float>>
      mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, gTiling);
  mm.SetTensorA(ga, TA);
  mm.SetTensorB(gb, TB);
  mm.IterateAll(gc);
  mm.End();
}
static void NoTransKernel(float* a, float* b, float* c) {
  using namespace AscendC;
  GlobalTensor<float> ga, gb, gc;
  ga.SetGlobalBuffer(a), gb.SetGlobalBuffer(b), gc.SetGlobalBuffer(c);
  TPipe pipe;
  Matmul<MatmulType<TPosition::GM, CubeFormat::ND, float>, MatmulType<TPosition::GM, CubeFormat::ND, float>,
         MatmulType<TPosition::GM, CubeFormat::ND, float>>
      mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, gTiling);
  mm.SetTensorB(gb, true);  // transposition that the MatmulType did not enable
}

static bool RuleFires(void (*k)(float*, float*, float*), float* a, float* b, float* c, const char* rule) {
  try {
    AscendC::twin::Launch("cube_test", 1, k, a, b, c);
  } catch (const AscendC::twin::RuleError& e) {
    return std::string(e.what()).find(rule) != std::string::npos;
  }
  return false;
}

static void TestTwinCube() {
  const int m = 37, k = 300, n = 45;
  TCubeTiling t = TileGroupedMatmul({m, k, n, 1, DType::kFloat32, 1, false, false}, CpuTwinCube(1)).data.mm;
  t.singleCoreM = m, t.singleCoreN = n, t.singleCoreK = k;
  gTiling = &t;
  std::vector<float> a(m * k), b(k * n), c(m * n), ref(m * n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double s = 0;
          for (int p = 0; p < k; ++p) s += double(a[ta ? p * m + i : i * k + p]) * b[tb ? j * k + p : p * n + j];
          ref[i * n + j] = float(s);
        }
      void (*kernel)(float*, float*, float*) = ta ? (tb ? MatmulKernel<true, true> : MatmulKernel<true, false>)
                                                  : (tb ? MatmulKernel<false, true> : MatmulKernel<false, false>);
      AscendC::twin::Launch("cube_test", 1, kernel, a.data(), b.data(), c.data());
      double worst = 0;
      for (int i = 0; i < m * n; ++i) worst = std::max(worst, double(std::fabs(c[i] - ref[i])));
      EXPECT(worst < 1e-4);
    }
  }
  TCubeTiling bad = t;
  bad.baseM = 256, bad.baseN = 256;  // 256 KiB of fp32 accumulators: over L0C
  gTiling = &bad;
  EXPECT(RuleFires(MatmulKernel<false, false>, a.data(), b.data(), c.data(), "L0C"));
  bad = t, bad.depthA1 = 64, bad.stepKa = 32, bad.baseK = 64;  // 64 x 128 x 64 x 4 B of A in L1: over 512 KiB
  gTiling = &bad;
  EXPECT(RuleFires(MatmulKernel<false, false>, a.data(), b.data(), c.data(), "L1"));
  gTiling = &t;
  EXPECT(RuleFires(NoTransKernel, a.data(), b.data(), c.data(), "isTrans"));
  gShortA = 1;  // A's GlobalTensor one element short of what IterateAll reads
  EXPECT(RuleFires(MatmulKernel<false, false>, a.data(), b.data(), c.data(), "GM bounds"));
  gShortA = 0;
  t.singleCoreM = m + 1;  // a single shape past the original matrix
  EXPECT(RuleFires(MatmulKernel<false, false>, a.data(), b.data(), c.data(), "cube shape"));
}

// ---- the twin's sort ----
static std::vector<uint32_t> gOut;
static std::vector<float> gScores;
static uint32_t gTaken[4];
static void SortKernel(int* unused) {
  using namespace AscendC;
  TPipe pipe;
  TBuf<TPosition::VECCALC> sb, ib, db, tb, mb;
  const uint32_t n = 64;
  pipe.InitBuffer(sb, n * 4), pipe.InitBuffer(ib, n * 4), pipe.InitBuffer(db, n * 8), pipe.InitBuffer(tb, n * 8);
  pipe.InitBuffer(mb, n * 8);
  LocalTensor<float> s = sb.Get<float>(), d = db.Get<float>(), tmp = tb.Get<float>(), merged = mb.Get<float>();
  LocalTensor<uint32_t> idx = ib.Get<uint32_t>();
  for (uint32_t i = 0; i < n; ++i) s.SetValue(i, gScores[i]), idx.SetValue(i, i);
  LocalTensor<float> concat;
  Concat(concat, s, tmp, 2);
  Sort<float, false>(d, concat, idx, tmp, 2);  // two independently sorted runs of 32
  const uint16_t counts[4] = {32, 32, 0, 0};
  MrgSortSrcList<float> lists(d, d[64], d, d);
  MrgSort<float, true>(merged, lists, counts, gTaken, 0b0011, 1);
  gOut.assign(n, 0xffffffffu);
  for (uint32_t i = 0; i < gTaken[0] + gTaken[1]; ++i) gOut[i] = merged.ReinterpretCast<uint32_t>().GetValue(2 * i + 1);
}

static void TestTwinSort() {
  gScores.resize(64);
  for (int i = 0; i < 64; ++i) gScores[i] = -float(i % 3);  // many ties: stability decides the order
  int unused = 0;
  AscendC::twin::Launch("sort_test", 1, SortKernel, &unused);
  // Merging two sorted runs with suspension stops when the first of them runs dry.
  EXPECT(gTaken[0] + gTaken[1] < 64 && (gTaken[0] == 32 || gTaken[1] == 32));
  bool ordered = true;
  for (uint32_t i = 1; i < gTaken[0] + gTaken[1]; ++i) {
    const float prev = gScores[gOut[i - 1]], cur = gScores[gOut[i]];
    ordered &= prev > cur || (prev == cur && gOut[i - 1] < gOut[i]);
  }
  EXPECT(ordered);
}

int main() {
  TestTwinCube();
  TestTwinSort();
  return expect::Report();
}
