// Which keys a query row of fused attention keeps under the band (sparse modes 2, 3, 4, and 0 with a mask),
// and so which S2 blocks a block of rows needs: blocks the band leaves fully masked are skipped, not
// computed. Plain arithmetic shared by the host tiling (its tests count the blocks) and the kernel:
// __aicore__ where a kernel header defined it.
#pragma once
#include <cstdint>

#include "attention_tiling_data.h"

#ifdef __aicore__
#define ATTENTION_BLOCKS_FN __aicore__ inline
#else
#define ATTENTION_BLOCKS_FN inline
#endif

// The keys [lo, hi) row i of a batch with s1 query rows and s2 keys keeps under the band (all of them
// without one); lo >= hi: none.
ATTENTION_BLOCKS_FN void AttentionRowKeys(const AttentionTilingData& t, int64_t i, int64_t s1, int64_t s2, int64_t& lo,
                                          int64_t& hi) {
  lo = 0, hi = s2;
  if (t.band == 0) return;
  const int64_t offset = t.bottomRight ? s2 - s1 : 0;
  const int64_t first = i + offset - t.preTokens, last = i + offset + t.nextTokens;
  if (first > lo) lo = first;
  if (last + 1 < hi) hi = last + 1;
}

// The S2 blocks [first, first + count) rows [i0, i1) need: the union of their rows' keys (the band is
// monotone in i, so the first row's lo and the last row's hi bound it).
ATTENTION_BLOCKS_FN void AttentionS2Blocks(const AttentionTilingData& t, int64_t i0, int64_t i1, int64_t s1, int64_t s2,
                                           int64_t& first, int64_t& count) {
  int64_t lo, hi, lo1, hi1;
  AttentionRowKeys(t, i0, s1, s2, lo, hi);
  AttentionRowKeys(t, i1 - 1, s1, s2, lo1, hi1);
  first = 0, count = 0;
  if (hi1 <= lo || i1 <= i0) return;
  first = lo / t.s2Block;
  count = (hi1 + t.s2Block - 1) / t.s2Block - first;
}

// The S1 blocks [first, first + count) whose rows keep a key of [j0, j1): row i keeps key j when
// i + offset - preTokens <= j <= i + offset + nextTokens, so the rows form one run.
ATTENTION_BLOCKS_FN void AttentionS1Blocks(const AttentionTilingData& t, int64_t j0, int64_t j1, int64_t s1, int64_t s2,
                                           int64_t& first, int64_t& count) {
  int64_t lo = 0, hi = s1;  // rows [lo, hi)
  if (t.band) {
    const int64_t offset = t.bottomRight ? s2 - s1 : 0;
    if (j0 - offset - t.nextTokens > lo) lo = j0 - offset - t.nextTokens;
    if (j1 - offset + t.preTokens < hi) hi = j1 - offset + t.preTokens;
  }
  first = 0, count = 0;
  if (hi <= lo || j1 <= j0) return;
  first = lo / t.s1Block;
  count = (hi + t.s1Block - 1) / t.s1Block - first;
}
