// CPU twin, cube unit: the Ascend C high-level Matmul API as kernels use it (MatmulType, Matmul,
// Init via REGIST_MATMUL_OBJ, SetOrgShape, SetSingleShape, SetTensorA/B, SetBias, IterateAll, End) with
// the rules the twin can enforce: the tiling as CANN's host tiling fills it for the kernel's
// MatmulTypes (tiling/cube_tiling_rules.h: base alignment, L0/L1 capacities, depth = step x db,
// used sizes), supported dtypes (fp32 accumulation always), ND operands in GM, the runtime
// transposition flags against ISTRANS, GM bounds of every operand. IterateAll issues the base-block
// stream CANN's library issues (twin_cube_iterate.h: MTE2/MTE1/M/FIX through the basic API's checks
// and record, with its flags); the block's arithmetic is one RunGemm (twin_cube_gemm.h). A bias (GM, ND,
// half or float: SetBias.md's A2 pairs) starts the fp32 accumulator; IterateAll records its GM -> L1 ->
// bias table moves and the first Mmad reading the table (twin_cube_iterate.h).
#pragma once
#include <string>

#include "cube_tiling.h"
#include "cube_tiling_rules.h"
#include "twin_core.h"
#include "twin_crosscore.h"
#include "twin_cube_gemm.h"
#include "twin_cube_iterate.h"
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

// An operand as the tiling must have been made for it: for fp32 the MatmulType's ISTRANS is the
// tiling's isTrans (SetTensorB.md: the two and the runtime flag are one value); for half/bf16 the
// rules below come out the same either way.
template <class TYPE>
constexpr cube_rules::Operand CubeOperandOf() {
  using T = typename TYPE::T;
  return {int32_t(sizeof(T)), std::is_same_v<T, float>, TYPE::isTrans};
}

// The tiling obeys A2's rules for these operands and the bias's element size (tiling/cube_tiling_rules.h),
// or the named rule fires.
inline void CheckCubeTiling(const TCubeTiling& t, const cube_rules::Operand& a, const cube_rules::Operand& b,
                            int32_t biasBytes = 0) {
  const std::string broken = cube_rules::Violation(t, a, b, cube_rules::Chip{}, biasBytes);
  if (!broken.empty()) Violation("cube tiling", broken);
}

// SetTensorA/B's isTranspose flag against the MatmulType's ISTRANS (SetTensorA.md, SetTensorB.md):
// true needs ISTRANS true for every dtype; for inputs other than half/bfloat16_t false needs ISTRANS
// false too (the tiling's isTrans, the MatmulType and the flag must agree, or L1 sizes and results
// are wrong on the NPU).
template <class TYPE>
inline void CheckTransposeFlag(const char* call, bool flag) {
  using T = typename TYPE::T;
  constexpr bool kHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
  if (flag && !TYPE::isTrans)
    Violation("cube operand", std::string(call) + "(gm, true) needs MatmulType<..., isTrans=true>");
  if (!flag && TYPE::isTrans && !kHalfLike)
    Violation("cube operand", std::string(call) + "(gm, false) with MatmulType<..., isTrans=true> and a " +
                                  "non-half/bf16 input: isTranspose, ISTRANS and the tiling's isTrans must agree");
}
}  // namespace twin

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
  using BiasT = typename BIAS_TYPE::T;  // BIAS_TYPE defaults to C_TYPE; its dtype is checked where SetBias is used

 public:
  void Init(const TCubeTiling* tiling, TPipe* tpipe = nullptr) {
    if (tiling == nullptr) twin::Violation("cube tiling", "Matmul Init without a TCubeTiling");
    CheckOperand<A_TYPE>("A");
    CheckOperand<B_TYPE>("B");
    CheckOperand<C_TYPE>("C");
    CheckOperand<BIAS_TYPE>("Bias");
    twin::CheckCubeTiling(*tiling, twin::CubeOperandOf<A_TYPE>(), twin::CubeOperandOf<B_TYPE>(), sizeof(BiasT));
    tiling_ = *tiling;
    walk_.Init(tiling_, tpipe != nullptr ? tpipe : GetTPipePtr());
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
    twin::CheckTransposeFlag<A_TYPE>("SetTensorA", isTransposeA);
    a_ = gm, transA_ = isTransposeA, hasA_ = true;
  }
  void SetTensorB(const GlobalTensor<SrcB>& gm, bool isTransposeB = false) {
    twin::CheckTransposeFlag<B_TYPE>("SetTensorB", isTransposeB);
    b_ = gm, transB_ = isTransposeB, hasB_ = true;
  }
  // Each row of C gets bias[0, singleN) (SetBias.md: only with the tiling's isBias 1; at least singleN elements).
  void SetBias(const GlobalTensor<BiasT>& gm) {
    // Matmul使用说明.md table 2 (A2): the bias is half or float (bfloat16_t is 950's); a half bias with
    // bfloat16_t A/B gives a float or half C only.
    static_assert(std::is_same_v<BiasT, half> || std::is_same_v<BiasT, float>,
                  "Matmul: the bias must be half or float on A2 (SetBias.md)");
    static_assert(!(std::is_same_v<SrcA, bfloat16_t> && std::is_same_v<BiasT, half> && std::is_same_v<Dst, bfloat16_t>),
                  "Matmul: bfloat16_t A/B with a half bias has no bfloat16_t C on A2 (Matmul使用说明.md table 2)");
    if (!inited_) twin::Violation("cube order", "SetBias before REGIST_MATMUL_OBJ / Init");
    if (tiling_.isBias != 1) twin::Violation("cube bias", "SetBias needs the tiling's isBias = 1 (SetBias.md)");
    bias_ = gm, hasBias_ = true;
  }
  // C[singleM, singleN] = [bias +] A[singleM, singleK] @ B[singleK, singleN] inside the original matrices.
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
      if (hasBias_) bias_.TwinCheckRange(uint64_t(g.n), "Matmul SetBias");
    }
    g.a = a_.GetPhyAddr(), g.b = b_.GetPhyAddr(), g.c = gm.GetPhyAddr();
    if (hasBias_) g.bias = bias_.GetPhyAddr(), g.biasDtype = twin::CubeDtypeOf<BiasT>();
    walk_.Run({a_, g.lda, transA_}, {b_, g.ldb, transB_}, gm, g.ldc, singleM_, singleN_, singleK_,
              hasBias_ ? &bias_ : nullptr, [&] {
                twin::Observe();  // a pending fused copy may write an operand's GM (twin_fuse.h)
                twin::RunGemm(g);
              });
  }
  void End() {
    hasA_ = hasB_ = hasBias_ = false;
    walk_.Disarm();
  }

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
  twin::CubeIterate<SrcA, SrcB, Dst, BiasT> walk_;
  GlobalTensor<SrcA> a_;
  GlobalTensor<SrcB> b_;
  GlobalTensor<BiasT> bias_;
  bool hasBias_ = false;
  int orgM_ = 0, orgN_ = 0, orgK_ = 0, orgKc_ = 0, singleM_ = 0, singleN_ = 0, singleK_ = 0;
  bool transA_ = false, transB_ = false, hasA_ = false, hasB_ = false, inited_ = false;
};

// REGIST_MATMUL_OBJ(&pipe, workspace, mm1, &tiling1, mm2, &tiling2, ...): Init each object.
inline void InitCurObj(TPipe* tpipe) {}
template <class MM, class... Rest>
inline void InitCurObj(TPipe* tpipe, MM& mm, const TCubeTiling* tiling, Rest&&... rest) {
  mm.Init(tiling, tpipe);
  ++twin::Core().matmulObjects;  // the library's cross-core flags: 0..2N-1 for N objects
  InitCurObj(tpipe, rest...);
}

}  // namespace AscendC
