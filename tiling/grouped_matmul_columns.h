// The forward's column width for the round-robin deal, chosen on the core once it has read
// group_list (the host cannot see the group sizes), and by the host tiling to decide whether the
// choice can change anything (GroupedMatmulTilingData::dealtColumns). Plain arithmetic shared by both:
// __aicore__ where a kernel header defined it.
#pragma once
#include <cstdint>

#ifdef __aicore__
#define GROUPED_MATMUL_COLUMNS_FN __aicore__ inline
#else
#define GROUPED_MATMUL_COLUMNS_FN inline
#endif

// Groups whose rows a core keeps while it deals (on its stack): past these it reads group_list as it goes.
constexpr int64_t kDealtColumnsMaxGroups = 64;

// A2's figures for a block's cost (the pipeline model's, python/ascendc_ops/harness/platforms/ascend910b.json):
// MTE2 GM -> L1 78 B/cycle and Fixpipe L0C -> GM 41 B/cycle (PTO cost model), 300 cycles for a Fixpipe's
// GM write to land (an assumption, none published); the cube's MACs a cycle, 4096 (fp32 1024; asc-devkit).
constexpr int64_t kGmToL1BytesPerCycle = 78, kFixBytesPerCycle = 41, kFixLatencyCycles = 300;
constexpr int64_t kHalfMacsPerCycle = 4096, kFloatMacsPerCycle = 1024;
// A block's fixed latencies (a load's and a store's round trip): about 800 cycles, an assumption.
constexpr int64_t kBlockFixedCycles = 800;

// Cycles of one singleM x sn block (elements of `bytes`): its GM -> L1 bytes (x's rows once, the
// weight's columns once) or, with x's rows resident over K (tiling iterateOrder 1), its cube work if
// more, plus the fixed latencies. The cube work is the Mmads and, after each base block of N, its
// Fixpipe out of the one L0C buffer (dbL0C 1), which the next base block's Mmads wait for. Without x
// resident its loads alone: x is read again for every base block of N, which binds.
GROUPED_MATMUL_COLUMNS_FN int64_t DealtBlockCycles(int64_t k, int64_t bytes, int64_t singleM, int64_t sn, int64_t baseN,
                                                   bool resident) {
  const int64_t load = (singleM + sn) * k * bytes / kGmToL1BytesPerCycle;
  if (!resident) return load;
  const int64_t macs = bytes == 4 ? kFloatMacsPerCycle : kHalfMacsPerCycle;
  const int64_t cube =
      singleM * k * sn / macs + singleM * sn * bytes / kFixBytesPerCycle + (sn + baseN - 1) / baseN * kFixLatencyCycles;
  return (load > cube ? load : cube) + kBlockFixedCycles;
}

// The busiest of blockNum cores' cycles with blocks of sn columns dealt round-robin over rowBlocks.
GROUPED_MATMUL_COLUMNS_FN int64_t DealtCycles(int64_t n, int64_t k, int64_t bytes, int64_t singleM, int64_t sn,
                                              int64_t baseN, bool resident, int64_t rowBlocks, int64_t blockNum) {
  const int64_t waves = (rowBlocks * ((n + sn - 1) / sn) + blockNum - 1) / blockNum;
  return waves * DealtBlockCycles(k, bytes, singleM, sn, baseN, resident);
}

// Of the splits of n no wider than the tiling's singleN and with no partial second base block of N
// (it walks K again), the one whose blocks finish first (DealtCycles), the widest among equals.
// cann-bench 4 (8 row blocks, 24 cores) takes 6 columns of 176 in 2 waves, not 4 of 256 in 2 (MTE2
// binds); case 13 (32 row blocks) 8 of 256 in 11 waves, not 2 of 1024 in 3 (the cube and Fixpipe bind:
// 11 base blocks of N on the busiest core, not 12).
GROUPED_MATMUL_COLUMNS_FN int64_t DealtColumns(int64_t n, int64_t k, int64_t bytes, int64_t singleM, int64_t singleN,
                                               int64_t baseN, bool resident, int64_t rowBlocks, int64_t blockNum) {
  const auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t best = singleN, bestCost = DealtCycles(n, k, bytes, singleM, singleN, baseN, resident, rowBlocks, blockNum);
  const int64_t floor = DealtBlockCycles(k, bytes, singleM, 0, baseN, resident);  // a block of no columns
  for (int64_t nb = ceilDiv(n, singleN) + 1; nb <= ceilDiv(n, 16); ++nb) {
    const int64_t sn = ceilDiv(ceilDiv(n, nb), 16) * 16;
    if (ceilDiv(rowBlocks * nb, blockNum) * floor >= bestCost) break;  // more waves than any split saves
    if (ceilDiv(n, sn) != nb || (sn > baseN && sn % baseN != 0)) continue;
    const int64_t cost = DealtCycles(n, k, bytes, singleM, sn, baseN, resident, rowBlocks, blockNum);
    if (cost < bestCost) best = sn, bestCost = cost;
  }
  return best;
}
