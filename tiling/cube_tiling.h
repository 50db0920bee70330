// TCubeTiling: the Matmul high-level API's tiling struct, field for field as CANN's
// kernel_tiling/kernel_tiling.h generates it (AscendC::tiling::TCubeTiling, exported globally too).
// Host tiling fills it; kernels read it. Where CANN's header is already included (a kernel built
// against the real lib/matmul_intf.h), that definition is used and this one steps aside.
#pragma once
#include <cstdint>

#ifndef __TIKCFW_KERNEL_TILING_H_
namespace AscendC {
namespace tiling {
struct TCubeTiling {
  int32_t usedCoreNum = 0;
  int32_t M = 0, N = 0, Ka = 0, Kb = 0;                           // original shapes, elements
  int32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;      // what one core computes per IterateAll
  int32_t baseM = 0, baseN = 0, baseK = 0;                        // one cube instruction's block (L0A/L0B/L0C)
  int32_t depthA1 = 0, depthB1 = 0;                               // base blocks of A / B held in L1
  int32_t stepM = 0, stepN = 0;                                   // base blocks per L1 load along M / N
  int32_t isBias = 0;
  int32_t transLength = 0;
  int32_t iterateOrder = 0;
  int32_t shareMode = 0, shareL1Size = 0, shareL0CSize = 0, shareUbSize = 0;
  int32_t batchM = 0, batchN = 0, singleBatchM = 0, singleBatchN = 0;
  int32_t stepKa = 0, stepKb = 0;                                 // base blocks per L1 load along K
  int32_t depthAL1CacheUB = 0, depthBL1CacheUB = 0;
  int32_t dbL0A = 0, dbL0B = 0, dbL0C = 0;                        // 2 = double-buffered L0
  int32_t ALayoutInfoB = 0, ALayoutInfoS = 0, ALayoutInfoN = 0, ALayoutInfoG = 0, ALayoutInfoD = 0;
  int32_t BLayoutInfoB = 0, BLayoutInfoS = 0, BLayoutInfoN = 0, BLayoutInfoG = 0, BLayoutInfoD = 0;
  int32_t CLayoutInfoB = 0, CLayoutInfoS1 = 0, CLayoutInfoN = 0, CLayoutInfoG = 0, CLayoutInfoS2 = 0;
  int32_t BatchNum = 0;
  int32_t mxTypePara = 0;
};
}  // namespace tiling
}  // namespace AscendC
using AscendC::tiling::TCubeTiling;
#endif
