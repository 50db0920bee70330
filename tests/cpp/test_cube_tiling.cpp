// Matmul tiling rules, one test per rule of tiling/cube_tiling_rules.h: the host tiling fills
// TCubeTiling as CANN's MatmulApiTiling does for the same shapes and types (used sizes, depth =
// step x db, dbL0C, baseK alignment, L0/L1 capacities), the rule check refuses each broken field,
// and the twin's Matmul refuses, at Init and SetTensorA/B, a tiling, MatmulType or runtime flag that
// disagrees (docs/twin.md "Matmul: what the twin checks"). Prints "N passed, M failed".
#include <string>
#include <vector>

#include "cube_tiling_rules.h"
#include "expect.h"
#include "grouped_matmul_tiling.h"
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "twin_launch.h"

using namespace tiling;
using cube_rules::Operand;

static bool Has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

static TCubeTiling Forward(DType dt, bool transW, int64_t m = 256, int64_t k = 512, int64_t n = 384) {
  return TileGroupedMatmul({m, k, n, 2, dt, 1, transW, false}, Ascend910BCube()).data.mm;
}

// transLength / shareMode / shareL1Size / shareL0CSize / shareUbSize as GetTransLength and
// GetUsedSize fill them on 910B (ND in GM, no bias), numbers worked by hand.
static void TestUsedSize() {
  const TCubeTiling f = Forward(DType::kFloat32, false);  // 128 x 128 x 32, depth 16 / 8 (x's rows resident)
  EXPECT(f.shareL1Size == 16 * 128 * 32 * 4 + 8 * 128 * 32 * 4);
  EXPECT(f.shareL0CSize == 128 * 128 * 4);
  EXPECT(f.transLength == 0 && f.shareMode == 0 && f.shareUbSize == 0);
  const TCubeTiling h = Forward(DType::kFloat16, true);  // 128 x 256 x 64, depth 8 / 8
  EXPECT(h.shareL1Size == 8 * 128 * 64 * 2 + 8 * 256 * 64 * 2);
  EXPECT(h.shareL0CSize == 128 * 256 * 4);
  const Operand a{4, true, false}, b{4, true, false};
  TCubeTiling bad = f;
  bad.shareL1Size = 0;
  EXPECT(Has(cube_rules::Violation(bad, a, b), "used size: shareL1Size"));
  bad = f, bad.transLength = 32768;
  EXPECT(Has(cube_rules::Violation(bad, a, b), "used size: transLength"));
  EXPECT(cube_rules::Violation(f, a, b).empty());
}

// depthA1 = stepM x stepKa x db, depthB1 = stepN x stepKb x db, db 1 or 2 (CalcL1Tiling; table 2).
static void TestDepthStep() {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const TCubeTiling t = Forward(dt, false);
    EXPECT(t.depthA1 == t.stepM * t.stepKa * 2 && t.depthB1 == t.stepN * t.stepKb * 2);
  }
  const Operand o{2, false, false};
  TCubeTiling bad = Forward(DType::kFloat16, false);
  bad.depthA1 = 5;
  EXPECT(Has(cube_rules::Violation(bad, o, o), "depth: depthA1 5"));
  bad = Forward(DType::kFloat16, false), bad.depthB1 = bad.stepN * bad.stepKb;  // db 1: allowed
  cube_rules::FillUsedSize(bad, o, o);
  EXPECT(cube_rules::Violation(bad, o, o).empty());
}

// dbL0C: CANN's default l0cDB is DB_OFF (GetL0CoreStatus); dbL0x only 1 or 2.
static void TestDoubleBuffer() {
  for (DType dt : {DType::kFloat32, DType::kFloat16}) {
    const TCubeTiling t = Forward(dt, false);
    EXPECT(t.dbL0A == 2 && t.dbL0B == 2 && t.dbL0C == 1);
  }
  const Operand o{4, true, false};
  TCubeTiling bad = Forward(DType::kFloat32, false);
  bad.dbL0C = 0;
  EXPECT(Has(cube_rules::Violation(bad, o, o), "double buffer"));
}

// baseK: C0 elements (8 for fp32) when A is not transposed and B is, 16 otherwise (table 2).
static void TestBaseKAlignment() {
  const Operand aN{4, true, false}, aT{4, true, true}, bN{4, true, false}, bT{4, true, true};
  EXPECT(cube_rules::BaseKAlign(aN, bT) == 8);
  EXPECT(cube_rules::BaseKAlign(aN, bN) == 16 && cube_rules::BaseKAlign(aT, bT) == 16);
  EXPECT(cube_rules::BaseKAlign(Operand{2, false, false}, Operand{2, false, true}) == 16);
  TCubeTiling t = Forward(DType::kFloat32, true);
  t.baseK = 8, t.stepKa = t.stepKb = 4, t.depthA1 = t.depthB1 = 8;
  cube_rules::FillUsedSize(t, aN, bT);
  EXPECT(cube_rules::Violation(t, aN, bT).empty());
  EXPECT(Has(cube_rules::Violation(t, aN, bN), "base alignment: baseK 8 must be a multiple of 16"));
  EXPECT(Has(cube_rules::Violation(t, aT, bT), "base alignment"));
  for (bool tw : {false, true})
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      Operand a, b;
      GroupedMatmulOperands({64, 64, 64, 1, dt, 1, tw, false}, a, b);
      EXPECT(Forward(dt, tw).baseK % cube_rules::BaseKAlign(a, b) == 0);
      EXPECT(Forward(dt, tw).baseM % 16 == 0 && Forward(dt, tw).baseN % 16 == 0);
    }
}

// The operands the tiling is made for: B isTrans = transpose_weight; the weight grad reads A transposed.
static void TestOperands() {
  Operand a, b;
  GroupedMatmulOperands({64, 64, 64, 1, DType::kFloat32, 1, true, false}, a, b);
  EXPECT(!a.isTrans && b.isTrans && a.isFloat32 && a.bytes == 4);
  GroupedMatmulOperands({64, 64, 64, 1, DType::kFloat32, 1, false, false}, a, b);
  EXPECT(!a.isTrans && !b.isTrans);
  GroupedMatmulOperands({64, 64, 64, 1, DType::kBFloat16, 1, false, true}, a, b);
  EXPECT(a.isTrans && !b.isTrans && !a.isFloat32 && a.bytes == 2);
}

// L0A / L0B / L0C (table 2) and L1 with CANN's fp32 padding (CalcL1Tiling, UpdateDepthB1).
static void TestCapacities() {
  const Operand f{4, true, false}, ft{4, true, true};
  TCubeTiling t = Forward(DType::kFloat32, false);
  EXPECT(cube_rules::AL1BlockBytes(t, f) == 128 * 32 * 4 && cube_rules::BL1BlockBytes(t, f) == 32 * 128 * 4);
  TCubeTiling odd = t;
  odd.baseM = 16, odd.baseN = 16, odd.baseK = 8;
  EXPECT(cube_rules::AL1BlockBytes(odd, ft) == 16 * 16 * 4);  // fp32 A transposed: K pads to 16
  EXPECT(cube_rules::BL1BlockBytes(odd, f) == 16 * 16 * 4);   // fp32 B not transposed: K pads to 16
  EXPECT(cube_rules::BL1BlockBytes(odd, ft) == 8 * 16 * 4);
  TCubeTiling bad = t;
  bad.baseK = 128;  // 128 x 128 x 4 x 2 = 128 KiB of L0A
  EXPECT(Has(cube_rules::Violation(bad, f, f), "L0A capacity"));
  bad = t, bad.baseM = 256, bad.baseN = 256;  // 256 x 256 x 4 = 256 KiB of L0C
  EXPECT(Has(cube_rules::Violation(bad, f, f), "L0C capacity"));
  bad = t, bad.baseN = 256, bad.dbL0C = 2;  // 128 x 256 x 4 x 2 = 256 KiB of L0C
  EXPECT(Has(cube_rules::Violation(bad, f, f), "L0C capacity"));
  bad = t, bad.stepKa = 32, bad.depthA1 = 64;  // 64 x 16 KiB of A
  EXPECT(Has(cube_rules::Violation(bad, f, f), "L1 capacity"));
  const CubePlatform tiny{"tiny", 1, 64 * 1024, 64 * 1024, 64 * 1024, 128 * 1024};
  EXPECT(expect::Throws([&] { TileGroupedMatmul({64, 64, 64, 1, DType::kFloat32, 1, false, false}, tiny); }));
}

// ---- the twin's Matmul: tiling, MatmulType and runtime flags ----
static const TCubeTiling* gTiling;
template <class T, bool TA, bool TB, bool FA, bool FB>
static void Kernel(T* a, T* b, float* c) {
  using namespace AscendC;
  using CT = std::conditional_t<std::is_same_v<T, float>, float, T>;
  GlobalTensor<T> ga, gb;
  GlobalTensor<CT> gc;
  ga.SetGlobalBuffer(a, 64 * 64), gb.SetGlobalBuffer(b, 64 * 64), gc.SetGlobalBuffer(reinterpret_cast<CT*>(c), 64 * 64);
  TPipe pipe;
  Matmul<MatmulType<TPosition::GM, CubeFormat::ND, T, TA>, MatmulType<TPosition::GM, CubeFormat::ND, T, TB>,
         MatmulType<TPosition::GM, CubeFormat::ND, CT>>
      mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, gTiling);
  mm.SetTensorA(ga, FA);
  mm.SetTensorB(gb, FB);
  mm.IterateAll(gc);
  mm.End();
}

template <class T, bool TA, bool TB, bool FA, bool FB>
static std::string Run(const TCubeTiling& t) {
  std::vector<T> a(64 * 64), b(64 * 64);
  std::vector<float> c(64 * 64);
  gTiling = &t;
  try {
    AscendC::twin::Launch("cube_rule", 1, Kernel<T, TA, TB, FA, FB>, a.data(), b.data(), c.data());
  } catch (const AscendC::twin::RuleError& e) {
    return e.what();
  }
  return "";
}

static void TestTwinMatmul() {
  TCubeTiling f = TileGroupedMatmul({64, 64, 64, 1, DType::kFloat32, 1, false, false}, CpuTwinCube(1)).data.mm;
  TCubeTiling h = TileGroupedMatmul({64, 64, 64, 1, DType::kFloat16, 1, false, false}, CpuTwinCube(1)).data.mm;
  f.singleCoreM = f.singleCoreN = f.singleCoreK = 64;  // one 64 x 64 x 64 block
  h.singleCoreM = h.singleCoreN = h.singleCoreK = 64;
  // Agreement: accepted for every transposition.
  EXPECT((Run<float, false, false, false, false>(f)).empty());
  EXPECT((Run<float, true, true, true, true>(f)).empty());
  // fp32: ISTRANS true with a runtime false (the old grouped_matmul), for B and for A.
  EXPECT(Has(Run<float, false, true, false, false>(f), "[cube operand] SetTensorB(gm, false) with MatmulType"));
  EXPECT(Has(Run<float, true, false, false, false>(f), "[cube operand] SetTensorA(gm, false) with MatmulType"));
  // Every dtype: a runtime true without ISTRANS.
  EXPECT(Has(Run<float, false, false, false, true>(f), "SetTensorB(gm, true) needs MatmulType<..., isTrans=true>"));
  EXPECT(Has(Run<half, false, false, false, true>(h), "SetTensorB(gm, true) needs MatmulType<..., isTrans=true>"));
  // half / bf16: ISTRANS true may run either way.
  EXPECT((Run<half, true, true, false, false>(h)).empty());
  EXPECT((Run<half, false, true, false, true>(h)).empty());
  // The tiling against the MatmulTypes at Init: fp32 baseK 8 only for A not transposed, B transposed.
  TCubeTiling k8 = f;
  k8.baseK = 8;
  cube_rules::FillUsedSize(k8, Operand{4, true, false}, Operand{4, true, true});
  EXPECT((Run<float, false, true, false, true>(k8)).empty());
  EXPECT(Has(Run<float, false, false, false, false>(k8), "[cube tiling] base alignment: baseK 8"));
  TCubeTiling noShare = f;
  noShare.shareL1Size = 0;  // a tiling not filled as CANN fills it
  EXPECT(Has(Run<float, false, false, false, false>(noShare), "[cube tiling] used size: shareL1Size 0"));
  TCubeTiling depth = f;
  depth.depthB1 = 3;
  EXPECT(Has(Run<float, false, false, false, false>(depth), "[cube tiling] depth: depthB1 3"));
}

// ---- a bias (SetBias): isBias, its L1 block, the 1 KB bias table, and the twin's Matmul ----
static void TestBiasTiling() {
  GroupedMatmulProblem pr{256, 512, 384, 2, DType::kBFloat16, 1, false, false};
  pr.biasDtype = DType::kFloat32;  // bf16 x takes a float bias (op_proto, SetBias.md)
  const TCubeTiling b = TileGroupedMatmul(pr, Ascend910BCube()).data.mm;
  const TCubeTiling n = Forward(DType::kBFloat16, false);
  EXPECT(b.isBias == 1 && n.isBias == 0 && b.baseN == 256);
  EXPECT(b.shareL1Size == n.shareL1Size + 256 * 4);  // GetUsedSize: + baseN x sizeof(bias)
  const Operand h{2, false, false};
  EXPECT(cube_rules::Violation(b, h, h, {}, 4).empty());
  EXPECT(Has(cube_rules::Violation(b, h, h, {}, 0), "bias dtype: isBias 1 needs a half or float bias"));
  EXPECT(Has(cube_rules::Violation(b, h, h, {}, 2), "used size: shareL1Size"));  // filled for a float bias
  TCubeTiling wide = b;
  wide.dbL0C = 2;  // 256 fp32 x 2 buffers: 2 KB, over the 1 KB table
  EXPECT(Has(cube_rules::Violation(wide, h, h, {}, 4), "bias table: baseN x 4 (fp32 in BT) x dbL0C = 2048 B"));
  pr.weightGrad = true;
  EXPECT(expect::Throws([&] { TileGroupedMatmul(pr, Ascend910BCube()); }));
}

static void BiasKernel(half* a, half* b, half* bias, half* c) {
  using namespace AscendC;
  using HalfNd = MatmulType<TPosition::GM, CubeFormat::ND, half>;
  GlobalTensor<half> ga, gb, gbias, gc;
  ga.SetGlobalBuffer(a, 64 * 64), gb.SetGlobalBuffer(b, 64 * 64), gbias.SetGlobalBuffer(bias, 64);
  gc.SetGlobalBuffer(c, 64 * 64);
  TPipe pipe;
  Matmul<HalfNd, HalfNd, HalfNd, HalfNd> mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, gTiling);
  mm.SetTensorA(ga);
  mm.SetTensorB(gb);
  mm.SetBias(gbias);
  mm.IterateAll(gc);
  mm.End();
}

static void TestTwinMatmulBias() {
  GroupedMatmulProblem pr{64, 64, 64, 1, DType::kFloat16, 1, false, false};
  pr.biasDtype = DType::kFloat16;
  TCubeTiling t = TileGroupedMatmul(pr, CpuTwinCube(1)).data.mm;
  t.singleCoreM = t.singleCoreN = t.singleCoreK = 64;
  std::vector<half> a(64 * 64, half(0.5f)), b(64 * 64, half(0.25f)), bias(64), c(64 * 64);
  for (int j = 0; j < 64; ++j) bias[j] = half(float(j) - 0.5f);
  gTiling = &t;
  AscendC::twin::Launch("cube_bias", 1, BiasKernel, a.data(), b.data(), bias.data(), c.data());
  bool ok = true;  // 64 x 0.5 x 0.25 = 8, exact in fp16, plus the column's bias
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) ok &= float(c[i * 64 + j]) == 8.0f + float(j) - 0.5f;
  EXPECT(ok);
  TCubeTiling off = t;  // SetBias.md: SetBias needs isBias 1 in the tiling
  off.isBias = 0;
  cube_rules::FillUsedSize(off, Operand{2, false, false}, Operand{2, false, false});
  gTiling = &off;
  std::string err;
  try {
    AscendC::twin::Launch("cube_bias", 1, BiasKernel, a.data(), b.data(), bias.data(), c.data());
  } catch (const AscendC::twin::RuleError& e) {
    err = e.what();
  }
  EXPECT(Has(err, "[cube bias] SetBias needs the tiling's isBias = 1"));
}

int main() {
  TestBiasTiling();
  TestTwinMatmulBias();
  TestUsedSize();
  TestDepthStep();
  TestDoubleBuffer();
  TestBaseKAlignment();
  TestOperands();
  TestCapacities();
  TestTwinMatmul();
  return expect::Report();
}
