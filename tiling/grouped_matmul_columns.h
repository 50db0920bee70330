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

// Of the splits of n no wider than the tiling's singleN and with no partial second base block of N
// (it walks K again), the one whose blocks finish first on blockNum cores: waves x a block's GM -> L1
// bytes, x's singleM rows and the weight's columns, both over K. cann-bench 4 (8 row blocks, 24 cores)
// takes 6 columns of 176 in 2 waves, not 4 of 256 in 2; case 15 (14 row blocks) 5 of 208 in 3, not 4 of 256 in 3.
GROUPED_MATMUL_COLUMNS_FN int64_t DealtColumns(int64_t n, int64_t singleM, int64_t singleN, int64_t baseN,
                                               int64_t rowBlocks, int64_t blockNum) {
  const auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t best = singleN, bestCost = ceilDiv(rowBlocks * ceilDiv(n, singleN), blockNum) * (singleM + singleN);
  for (int64_t nb = ceilDiv(n, singleN) + 1; nb <= ceilDiv(n, 16); ++nb) {
    const int64_t sn = ceilDiv(ceilDiv(n, nb), 16) * 16, waves = ceilDiv(rowBlocks * nb, blockNum);
    if (waves * singleM >= bestCost) break;  // every narrower split costs more waves than it saves
    if (ceilDiv(n, sn) != nb || (sn > baseN && sn % baseN != 0)) continue;
    if (waves * (singleM + sn) < bestCost) best = sn, bestCost = waves * (singleM + sn);
  }
  return best;
}
