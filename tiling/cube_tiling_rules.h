// The rules a TCubeTiling obeys on Atlas A2 (910B), as CANN's host matmul tiling
// (asc-devkit impl/adv_api/tiling/matmul/matmul_tiling_algorithm.cpp, MatmulApiTiling) fills and
// the TCubeTiling doc (docs/zh/api/.../Matmul-Tiling类/TCubeTiling结构体.md, tables 1-2) states
// them. Shared by the host tiling (which fills the fields the same way and refuses a tiling that
// breaks a rule) and the twin's Matmul (which checks the tiling at Init against the kernel's
// MatmulTypes). Plain C++: no torch, no twin. docs/twin.md "Matmul: what the twin checks" lists them.
// Also the cube platform every cube and mix kernel's tiling targets (grouped matmul, attention).
#pragma once
#include <cstdint>
#include <string>

#include "cube_tiling.h"
#include "platform.h"

namespace tiling {

// The cube cores (one core group each in a mix kernel) and their L1 / L0 buffers.
struct CubePlatform {
  const char* name;
  uint32_t cubeCores;  // AIC blockDim ceiling for cube and mix kernels
  uint32_t l1Bytes, l0aBytes, l0bBytes, l0cBytes;
};
// A2's cube cores and buffers (tiling/platform.h).
inline CubePlatform Ascend910BCube(uint32_t cubeCores = kA2CubeCores) {
  return {kA2Name, cubeCores, kA2L1Bytes, kA2L0aBytes, kA2L0bBytes, kA2L0cBytes};
}
// The twin: one cube block per host thread at a time, A2's buffers.
inline CubePlatform CpuTwinCube(uint32_t threads) {
  return {"cpu-twin", threads, kA2L1Bytes, kA2L0aBytes, kA2L0bBytes, kA2L0cBytes};
}

}  // namespace tiling

namespace cube_rules {

// One operand as SetAType / SetBType describe it: element size, fp32 or not, isTrans. Only ND in
// GM is modelled. For fp32 (any input other than half/bfloat16_t) the kernel's MatmulType ISTRANS,
// the tiling's isTrans and the runtime SetTensorA/B flag must be one value (SetTensorB.md).
struct Operand {
  int32_t bytes = 2;
  bool isFloat32 = false;
  bool isTrans = false;
};

struct Chip {  // A2's cube buffers (tiling/platform.h)
  int64_t l1 = ::tiling::kA2L1Bytes, l0a = ::tiling::kA2L0aBytes, l0b = ::tiling::kA2L0bBytes,
          l0c = ::tiling::kA2L0cBytes;
};

// The bias table (tiling/platform.h) holds one base block's bias as fp32 whatever the bias dtype
// (load_bias_to_c2.h converts half on the way).
constexpr int64_t kBiasTableBytes = ::tiling::kA2BiasTableBytes;

constexpr int32_t kCubeBlock = 16;    // BLOCK_CUBE: the fractal's 16 rows
constexpr int32_t kC0Bytes = 32;      // C0_BYTE_SIZE: a fractal row is 32 bytes
constexpr int32_t kFp32KAlign = 16;   // FP32_ALIGN_SIZE (UpdateDepthB1)

inline int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
inline int32_t C0Elems(const Operand& o) { return kC0Bytes / o.bytes; }  // 8 fp32, 16 half/bf16

// baseK's alignment (TCubeTiling结构体.md table 2): C0 elements when A is not transposed and B is,
// 16 elements otherwise. For half/bf16 both are 16; for fp32 it is 8 against 16.
inline int32_t BaseKAlign(const Operand& a, const Operand& b) {
  return (!a.isTrans && b.isTrans) ? C0Elems(a) : kCubeBlock;
}

// Bytes one base block of A / B takes in L1 (CalcL1Tiling: GetABaseHeightAlign x GetABaseWidthAlign,
// GetBBaseHeightAlign x GetBBaseWidthAlign): fp32 rows pad to 16, fp32 K pads to 16 where the
// block is transposed on its way to L1 (A transposed, B not) and to C0 otherwise.
inline int64_t AL1BlockBytes(const TCubeTiling& t, const Operand& a) {
  if (!a.isFloat32) return int64_t(t.baseM) * t.baseK * a.bytes;
  return AlignUp(t.baseM, kCubeBlock) * AlignUp(t.baseK, a.isTrans ? kFp32KAlign : C0Elems(a)) * a.bytes;
}
inline int64_t BL1BlockBytes(const TCubeTiling& t, const Operand& b) {
  if (!b.isFloat32) return int64_t(t.baseK) * t.baseN * b.bytes;
  return AlignUp(t.baseK, b.isTrans ? 1 : kFp32KAlign) * AlignUp(t.baseN, C0Elems(b)) * b.bytes;
}

// L1 a bias in GM takes on 910B (GetUsedSize: "gm -> l1 -> bt, need extra l1 space"): one base
// block of N in the bias dtype (`biasBytes`), when isBias.
inline int64_t BiasL1Bytes(const TCubeTiling& t, int32_t biasBytes) {
  return t.isBias ? int64_t(t.baseN) * biasBytes : 0;
}

// What GetUsedSize / GetTransLength / UpdateUsedSize give on 910B (ND operands in GM, a bias in GM):
// shareL1Size = depthA1 x baseM x baseK x sizeof(A) + depthB1 x baseN x baseK x sizeof(B) [+ baseN x
// sizeof(bias)], shareL0CSize = baseM x baseN x 4, shareMode = shareUbSize = transLength = 0.
inline int32_t ShareL1Size(const TCubeTiling& t, const Operand& a, const Operand& b, int32_t biasBytes = 0) {
  return int32_t(int64_t(t.depthA1) * t.baseM * t.baseK * a.bytes + int64_t(t.depthB1) * t.baseN * t.baseK * b.bytes +
                 BiasL1Bytes(t, biasBytes));
}
inline int32_t ShareL0CSize(const TCubeTiling& t) { return t.baseM * t.baseN * 4; }
inline void FillUsedSize(TCubeTiling& t, const Operand& a, const Operand& b, int32_t biasBytes = 0) {
  t.transLength = 0;
  t.shareMode = 0;
  t.shareL1Size = ShareL1Size(t, a, b, biasBytes);
  t.shareL0CSize = ShareL0CSize(t);
  t.shareUbSize = 0;
}

// The first rule `t` breaks for operands a and b on `chip` (with isBias: a bias of `biasBytes` per
// element in GM), "" if none. Each message starts with the rule's name.
inline std::string Violation(const TCubeTiling& t, const Operand& a, const Operand& b, const Chip& chip = Chip{},
                             int32_t biasBytes = 0) {
  const auto s = [](int64_t v) { return std::to_string(v); };
  if (t.baseM <= 0 || t.baseN <= 0 || t.baseK <= 0)
    return "base block: baseM/baseN/baseK must be positive, got " + s(t.baseM) + "/" + s(t.baseN) + "/" + s(t.baseK);
  if (t.baseM % kCubeBlock || t.baseN % kCubeBlock)
    return "base alignment: baseM and baseN must be multiples of 16, got " + s(t.baseM) + " and " + s(t.baseN);
  const int32_t kAlign = BaseKAlign(a, b);
  if (t.baseK % kAlign)
    return "base alignment: baseK " + s(t.baseK) + " must be a multiple of " + s(kAlign) + " (A isTrans " +
           s(a.isTrans) + ", B isTrans " + s(b.isTrans) + ")";
  for (int32_t db : {t.dbL0A, t.dbL0B, t.dbL0C})
    if (db != 1 && db != 2) return "double buffer: dbL0A/dbL0B/dbL0C must be 1 or 2, got " + s(db);
  if (t.iterateOrder != 0 && t.iterateOrder != 1) return "iterateOrder must be 0 or 1, got " + s(t.iterateOrder);
  if (t.isBias != 0 && t.isBias != 1) return "isBias must be 0 or 1, got " + s(t.isBias);
  if (t.isBias && biasBytes != 2 && biasBytes != 4)
    return "bias dtype: isBias 1 needs a half or float bias on A2 (SetBiasType), got " + s(biasBytes) +
           "-byte elements";
  const int64_t bt = int64_t(t.baseN) * 4 * t.dbL0C;
  if (t.isBias && bt > kBiasTableBytes)
    return "bias table: baseN x 4 (fp32 in BT) x dbL0C = " + s(bt) + " B, over " + s(kBiasTableBytes);
  const int64_t l0a = int64_t(t.baseM) * t.baseK * a.bytes * t.dbL0A;
  const int64_t l0b = int64_t(t.baseK) * t.baseN * b.bytes * t.dbL0B;
  const int64_t l0c = int64_t(t.baseM) * t.baseN * 4 * t.dbL0C;  // fp32 accumulators
  if (l0a > chip.l0a) return "L0A capacity: baseM x baseK x sizeof(A) x dbL0A = " + s(l0a) + " B, over " + s(chip.l0a);
  if (l0b > chip.l0b) return "L0B capacity: baseK x baseN x sizeof(B) x dbL0B = " + s(l0b) + " B, over " + s(chip.l0b);
  if (l0c > chip.l0c) return "L0C capacity: baseM x baseN x 4 x dbL0C = " + s(l0c) + " B, over " + s(chip.l0c);
  if (t.stepM <= 0 || t.stepN <= 0 || t.stepKa <= 0 || t.stepKb <= 0)
    return "step: stepM/stepN/stepKa/stepKb must be positive";
  const int64_t stepA = int64_t(t.stepM) * t.stepKa, stepB = int64_t(t.stepN) * t.stepKb;
  if (t.depthA1 != stepA && t.depthA1 != 2 * stepA)
    return "depth: depthA1 " + s(t.depthA1) + " must be stepM x stepKa x db (db 1 or 2) = " + s(stepA) + " or " +
           s(2 * stepA);
  if (t.depthB1 != stepB && t.depthB1 != 2 * stepB)
    return "depth: depthB1 " + s(t.depthB1) + " must be stepN x stepKb x db (db 1 or 2) = " + s(stepB) + " or " +
           s(2 * stepB);
  const int64_t l1 = t.depthA1 * AL1BlockBytes(t, a) + t.depthB1 * BL1BlockBytes(t, b) + BiasL1Bytes(t, biasBytes);
  if (l1 > chip.l1)
    return "L1 capacity: depthA1 and depthB1 base blocks (fp32 aligned as A isTrans " + s(a.isTrans) + ", B isTrans " +
           s(b.isTrans) + ") and the bias's base block need " + s(l1) + " B, over " + s(chip.l1);
  if (t.transLength != 0 || t.shareMode != 0 || t.shareUbSize != 0)
    return "used size: transLength, shareMode and shareUbSize are 0 on A2, got " + s(t.transLength) + "/" +
           s(t.shareMode) + "/" + s(t.shareUbSize);
  if (t.shareL1Size != ShareL1Size(t, a, b, biasBytes))
    return "used size: shareL1Size " + s(t.shareL1Size) +
           " != depthA1 x baseM x baseK x sizeof(A) + depthB1 x baseN "
           "x baseK x sizeof(B) [+ baseN x sizeof(bias)] = " +
           s(ShareL1Size(t, a, b, biasBytes));
  if (t.shareL0CSize != ShareL0CSize(t))
    return "used size: shareL0CSize " + s(t.shareL0CSize) + " != baseM x baseN x 4 = " + s(ShareL0CSize(t));
  return "";
}

}  // namespace cube_rules
