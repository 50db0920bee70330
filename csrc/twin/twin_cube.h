// CPU twin, cube unit: the Ascend C high-level Matmul API as kernels use it (MatmulType, Matmul,
// Init via REGIST_MATMUL_OBJ, SetOrgShape, SetSingleShape, SetTensorA/B, IterateAll, End) with
// the rules the twin can enforce: A2 L1 / L0A / L0B / L0C capacities for the tiling's base,
// step and depth blocks, 16-element base blocks, supported dtypes (fp32 accumulation always),
// ND operands in GM, transposition only where the MatmulType enables it, GM bounds of every
// operand. The block's arithmetic goes to RunGemm (twin_cube_gemm.h).
#pragma once
#include <string>

#include "cube_tiling.h"
#include "twin_core.h"
#include "twin_cube_gemm.h"
#include "twin_tensor.h"

namespace AscendC {

enum class CubeFormat { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };
enum class LayoutMode { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false, TPosition SRCPOS = TPosition::GM>
struct MatmulType {
  constexpr static TPosition pos = POSITION;
  constexpr static CubeFormat format = FORMAT;
  using T = TYPE;
  constexpr static bool isTrans = ISTRANS;
  constexpr static LayoutMode layout = LAYOUT;
  constexpr static bool ibShare = IBSHARE;
  constexpr static TPosition srcPos = SRCPOS;
};

// The templates' configuration: the twin computes every configuration alike.
struct MatmulConfig {
  bool doNorm = true;
  bool doBasicBlock = false;
  bool doMultiDataLoad = false;
};
constexpr MatmulConfig CFG_NORM{true, false, false};
constexpr MatmulConfig CFG_MDL{false, false, true};

namespace twin {
constexpr int64_t kL1Bytes = 512 * 1024;
constexpr int64_t kL0ABytes = 64 * 1024;
constexpr int64_t kL0BBytes = 64 * 1024;
constexpr int64_t kL0CBytes = 128 * 1024;
constexpr int64_t kCubeBlock = 16;  // the cube's fractal edge: base blocks are multiples of it

inline thread_local uint8_t* tSysWorkspace = nullptr;

// The tiling's blocks must fit the cube's buffers (aBytes / bBytes: element sizes of A and B).
inline void CheckCubeTiling(const TCubeTiling& t, int64_t aBytes, int64_t bBytes) {
  const auto fail = [](const std::string& what) { Violation("cube tiling", what); };
  if (t.baseM <= 0 || t.baseN <= 0 || t.baseK <= 0)
    fail("baseM/baseN/baseK must be positive, got " + std::to_string(t.baseM) + "/" + std::to_string(t.baseN) + "/" +
         std::to_string(t.baseK));
  if (t.baseM % kCubeBlock || t.baseN % kCubeBlock)
    fail("baseM and baseN must be multiples of 16, got " + std::to_string(t.baseM) + " and " + std::to_string(t.baseN));
  if ((t.baseK * aBytes) % 32)
    fail("baseK * sizeof(A) must be a multiple of 32 bytes, got baseK " + std::to_string(t.baseK));
  const int64_t l0a = int64_t(t.baseM) * t.baseK * aBytes * (t.dbL0A == 2 ? 2 : 1);
  const int64_t l0b = int64_t(t.baseK) * t.baseN * bBytes * (t.dbL0B == 2 ? 2 : 1);
  const int64_t l0c = int64_t(t.baseM) * t.baseN * 4 * (t.dbL0C == 2 ? 2 : 1);  // fp32 accumulators
  if (l0a > kL0ABytes) fail("L0A needs " + std::to_string(l0a) + " B (baseM x baseK x dbL0A), over 64 KiB");
  if (l0b > kL0BBytes) fail("L0B needs " + std::to_string(l0b) + " B (baseK x baseN x dbL0B), over 64 KiB");
  if (l0c > kL0CBytes) fail("L0C needs " + std::to_string(l0c) + " B (baseM x baseN x 4 x dbL0C), over 128 KiB");
  if (t.stepM <= 0 || t.stepN <= 0 || t.stepKa <= 0 || t.stepKb <= 0)
    fail("stepM/stepN/stepKa/stepKb must be positive");
  if (t.depthA1 < t.stepM * t.stepKa || t.depthB1 < t.stepN * t.stepKb)
    fail("depthA1 must hold stepM x stepKa base blocks and depthB1 stepN x stepKb");
  const int64_t l1 = int64_t(t.depthA1) * t.baseM * t.baseK * aBytes + int64_t(t.depthB1) * t.baseN * t.baseK * bBytes;
  if (l1 > kL1Bytes) fail("L1 needs " + std::to_string(l1) + " B (depthA1 and depthB1 base blocks), over 512 KiB");
}
}  // namespace twin

inline void SetSysWorkspace(uint8_t* workspace) { twin::tSysWorkspace = workspace; }
inline uint8_t* GetSysWorkSpacePtr() { return twin::tSysWorkspace; }

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM>
class Matmul {
  using SrcA = typename A_TYPE::T;
  using SrcB = typename B_TYPE::T;
  using Dst = typename C_TYPE::T;
  static constexpr bool kCubeInput =
      std::is_same_v<SrcA, half> || std::is_same_v<SrcA, bfloat16_t> || std::is_same_v<SrcA, float>;
  static_assert(kCubeInput, "Matmul: A must be half, bfloat16_t or float (the cube's floating inputs)");
  static_assert(std::is_same_v<SrcA, SrcB>, "Matmul: A and B must have one dtype");
  static_assert(std::is_same_v<Dst, float> || std::is_same_v<Dst, half> || std::is_same_v<Dst, bfloat16_t>,
                "Matmul: C must be float, half or bfloat16_t (L0C accumulates in fp32, FIXPIPE converts)");
  static_assert(!std::is_same_v<SrcA, float> || std::is_same_v<Dst, float>, "Matmul: float A/B needs a float C");

 public:
  void Init(const TCubeTiling* tiling, TPipe* tpipe = nullptr) {
    if (tiling == nullptr) twin::Violation("cube tiling", "Matmul Init without a TCubeTiling");
    CheckOperand<A_TYPE>("A");
    CheckOperand<B_TYPE>("B");
    CheckOperand<C_TYPE>("C");
    twin::CheckCubeTiling(*tiling, sizeof(SrcA), sizeof(SrcB));
    tiling_ = *tiling;
    SetOrgShape(tiling_.M, tiling_.N, tiling_.Ka, tiling_.Kb);
    SetSingleShape(tiling_.singleCoreM, tiling_.singleCoreN, tiling_.singleCoreK);
    inited_ = true;
  }
  void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
  void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0) {
    if (orgKa != orgKb && orgKa > 0 && orgKb > 0)
      twin::Violation("cube shape", "SetOrgShape with Ka " + std::to_string(orgKa) + " != Kb " + std::to_string(orgKb));
    orgM_ = orgM, orgN_ = orgN, orgK_ = orgKa, orgKc_ = orgKc > 0 ? orgKc : orgN;
  }
  void SetSingleShape(int singleM, int singleN, int singleK) {
    singleM_ = singleM, singleN_ = singleN, singleK_ = singleK;
  }
  void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
    if (tailM >= 0) singleM_ = tailM;
    if (tailN >= 0) singleN_ = tailN;
    if (tailK >= 0) singleK_ = tailK;
  }
  void SetTensorA(const GlobalTensor<SrcA>& gm, bool isTransposeA = false) {
    if (isTransposeA && !A_TYPE::isTrans)
      twin::Violation("cube operand", "SetTensorA(gm, true) needs MatmulType<..., isTrans=true> for A");
    a_ = gm, transA_ = isTransposeA, hasA_ = true;
  }
  void SetTensorB(const GlobalTensor<SrcB>& gm, bool isTransposeB = false) {
    if (isTransposeB && !B_TYPE::isTrans)
      twin::Violation("cube operand", "SetTensorB(gm, true) needs MatmulType<..., isTrans=true> for B");
    b_ = gm, transB_ = isTransposeB, hasB_ = true;
  }
  // C[singleM, singleN] = A[singleM, singleK] @ B[singleK, singleN] inside the original matrices.
  void IterateAll(const GlobalTensor<Dst>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                  bool waitIterateAll = false, bool fakeMsg = false) {
    if (!inited_) twin::Violation("cube order", "IterateAll before REGIST_MATMUL_OBJ / Init");
    if (!hasA_ || !hasB_) twin::Violation("cube order", "IterateAll before SetTensorA and SetTensorB");
    if (enAtomic != 0) twin::Violation("cube operand", "IterateAll with atomic accumulation is not modelled");
    if (singleM_ < 0 || singleN_ < 0 || singleK_ < 0 || singleM_ > orgM_ || singleN_ > orgN_ || singleK_ > orgK_)
      twin::Violation("cube shape", "single shape " + Shape(singleM_, singleN_, singleK_) + " exceeds the original " +
                                        Shape(orgM_, orgN_, orgK_));
    twin::GemmCall g;
    g.m = singleM_, g.n = singleN_, g.k = singleK_;
    g.inDtype = twin::CubeDtypeOf<SrcA>();
    g.outDtype = twin::CubeDtypeOf<Dst>();
    g.lda = transA_ ? orgM_ : orgK_;
    g.ldb = transB_ ? orgK_ : orgN_;
    g.ldc = orgKc_;
    g.transA = transA_, g.transB = transB_;
    if (g.m > 0 && g.n > 0) {
      // The last element each operand touches must lie inside its GlobalTensor.
      if (g.k > 0) {
        a_.TwinCheckRange(uint64_t(transA_ ? (g.k - 1) * g.lda + g.m : (g.m - 1) * g.lda + g.k), "Matmul SetTensorA");
        b_.TwinCheckRange(uint64_t(transB_ ? (g.n - 1) * g.ldb + g.k : (g.k - 1) * g.ldb + g.n), "Matmul SetTensorB");
      }
      gm.TwinCheckRange(uint64_t((g.m - 1) * g.ldc + g.n), "Matmul IterateAll");
    }
    g.a = a_.GetPhyAddr(), g.b = b_.GetPhyAddr(), g.c = gm.GetPhyAddr();
    twin::Observe();  // a pending fused copy may write an operand's GM (twin_fuse.h)
    twin::RunGemm(g);
  }
  void End() { hasA_ = hasB_ = false; }

 private:
  template <class TYPE>
  static void CheckOperand(const char* which) {
    if (TYPE::pos != TPosition::GM)
      twin::Violation("cube operand",
                      std::string("matrix ") + which + " must live in GM (the twin models GM operands)");
    if (TYPE::format != CubeFormat::ND)
      twin::Violation("cube operand", std::string("matrix ") + which + " must be CubeFormat::ND in the twin");
  }
  static std::string Shape(int64_t m, int64_t n, int64_t k) {
    return "(M " + std::to_string(m) + ", N " + std::to_string(n) + ", K " + std::to_string(k) + ")";
  }
  TCubeTiling tiling_{};
  GlobalTensor<SrcA> a_;
  GlobalTensor<SrcB> b_;
  int orgM_ = 0, orgN_ = 0, orgK_ = 0, orgKc_ = 0, singleM_ = 0, singleN_ = 0, singleK_ = 0;
  bool transA_ = false, transB_ = false, hasA_ = false, hasB_ = false, inited_ = false;
};

// REGIST_MATMUL_OBJ(&pipe, workspace, mm1, &tiling1, mm2, &tiling2, ...): Init each object.
inline void InitCurObj(TPipe* tpipe) {}
template <class MM, class... Rest>
inline void InitCurObj(TPipe* tpipe, MM& mm, const TCubeTiling* tiling, Rest&&... rest) {
  mm.Init(tiling, tpipe);
  InitCurObj(tpipe, rest...);
}

}  // namespace AscendC
