// MoE token permute (npu_moe_token_permute), vector kernels in three phases:
//  1. moe_sort_chunks: each block sorts chunkLen expert ids with Sort<float, true> on the
//     (score = -id, index = flat position) pairs: descending scores = ascending ids, ties in
//     position order, so the sort is stable.
//  2. moe_merge_sorted (rounds, on the host's loop): each block merges four sorted lists into one
//     with MrgSort, streaming mergeWindow pairs of each list through UB and stopping whenever a
//     window runs dry (isExhaustedSuspension) to refill it.
//  3. moe_token_permute, over tokens: position j of the sorted order holds flat index i:
//     sorted_indices[i] = j (the sort inverted in UB, GatherRows) and, for j < num_out_tokens,
//     permuted[j] = tokens[i / topK]: each token row is read once and written to its topK places.
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "moe_routing_tiling_data.h"

using namespace AscendC;

constexpr float MOE_PAD_SCORE = -3.0e38f;  // below every -id: padding sorts last
constexpr uint32_t MOE_PAIR_BATCH = 1024;     // sorted pairs read per UB load when inverting the sort
constexpr uint32_t MOE_INDEX_WINDOW = 16384;  // sorted_indices entries a gather pass holds in UB (64 KiB)

__aicore__ inline int64_t MoeMin(int64_t a, int64_t b) { return a < b ? a : b; }

// Sorts chunk `chunk` (direct launch: the block's own; the op package's one launch deals chunks over its blocks).
template <typename I>
__aicore__ inline void SortChunk(GM_ADDR indices, GM_ADDR sorted, const MoeRoutingTilingData& t, int64_t chunk) {
  const int64_t first = chunk * t.chunkLen;
  const int64_t len = MoeMin(t.chunkLen, t.sortLen - first);
  if (len <= 0) return;
  const int32_t repeat = static_cast<int32_t>((len + 31) / 32);
  const uint32_t padded = static_cast<uint32_t>(repeat) * 32;
  TPipe pipe;
  TBuf<TPosition::VECCALC> idsBuf, scoreBuf, indexBuf, sortedBuf, tmpBuf;
  pipe.InitBuffer(idsBuf, static_cast<uint32_t>(t.chunkLen * sizeof(I)));
  pipe.InitBuffer(scoreBuf, static_cast<uint32_t>(t.chunkLen * sizeof(float)));
  pipe.InitBuffer(indexBuf, static_cast<uint32_t>(t.chunkLen * sizeof(uint32_t)));
  pipe.InitBuffer(sortedBuf, static_cast<uint32_t>(GetSortLen<float>(t.chunkLen) * sizeof(float)));
  pipe.InitBuffer(tmpBuf, static_cast<uint32_t>(GetSortLen<float>(t.chunkLen) * sizeof(float)));
  GlobalTensor<I> idsGm;
  idsGm.SetGlobalBuffer(reinterpret_cast<__gm__ I*>(indices) + first, len);
  LocalTensor<I> ids = idsBuf.Get<I>();
  DataCopyPad(ids, idsGm, DataCopyExtParams(1, static_cast<uint32_t>(len * sizeof(I)), 0, 0, 0),
              DataCopyPadExtParams<I>());
  SyncPipes<HardEvent::MTE2_S>();
  LocalTensor<float> score = scoreBuf.Get<float>();
  LocalTensor<uint32_t> index = indexBuf.Get<uint32_t>();
  for (uint32_t i = 0; i < padded; ++i) {
    score.SetValue(i, i < len ? -static_cast<float>(ids.GetValue(i)) : MOE_PAD_SCORE);
    index.SetValue(i, static_cast<uint32_t>(first + i));
  }
  SyncPipes<HardEvent::S_V>();
  LocalTensor<float> tmp = tmpBuf.Get<float>();
  LocalTensor<float> concat;
  Concat(concat, score, tmp, repeat);
  LocalTensor<float> pairs = sortedBuf.Get<float>();
  Sort<float, true>(pairs, concat, index, tmp, repeat);
  SyncPipes<HardEvent::V_MTE3>();
  GlobalTensor<float> out;
  out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(sorted) + first * 2, len * 2);
  DataCopyPad(out, pairs, DataCopyExtParams(1, static_cast<uint32_t>(len * 8), 0, 0, 0));
}

// Merges lists 4g .. 4g+3 of group `group` (each listLen pairs, the last list of the input possibly shorter).
__aicore__ inline void MergeLists(GM_ADDR src, GM_ADDR dst, const MoeRoutingTilingData& t, int64_t group) {
  const int64_t firstList = group * 4;
  const int64_t nLists = MoeMin(4, t.lists - firstList);
  if (nLists <= 0) return;
  const int64_t w = t.mergeWindow;
  TPipe pipe;
  TBuf<TPosition::VECCALC> winBuf, outBuf;
  pipe.InitBuffer(winBuf, static_cast<uint32_t>(4 * w * 8));
  pipe.InitBuffer(outBuf, static_cast<uint32_t>(4 * w * 8));
  GlobalTensor<float> in, out;
  in.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(src), t.sortLen * 2);
  out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(dst), t.sortLen * 2);
  int64_t cursor[4], end[4];
  for (int64_t l = 0; l < 4; ++l) {
    cursor[l] = (firstList + l) * t.listLen;
    end[l] = l < nLists ? MoeMin(cursor[l] + t.listLen, t.sortLen) : cursor[l];
  }
  int64_t outPos = cursor[0];
  LocalTensor<float> merged = outBuf.Get<float>();
  while (true) {
    int64_t active[4], nActive = 0;
    for (int64_t l = 0; l < 4; ++l)
      if (cursor[l] < end[l]) active[nActive++] = l;  // list order kept: ties go to the earlier list
    if (nActive == 0) break;
    LocalTensor<float> win[4];
    uint16_t counts[4] = {0, 0, 0, 0};
    for (int64_t s = 0; s < nActive; ++s) {
      const int64_t l = active[s];
      counts[s] = static_cast<uint16_t>(MoeMin(w, end[l] - cursor[l]));
      win[s] = winBuf.GetWithOffset<float>(static_cast<uint32_t>(2 * w), static_cast<uint32_t>(s * w * 8));
      DataCopyPad(win[s], in[cursor[l] * 2], DataCopyExtParams(1, counts[s] * 8u, 0, 0, 0),
                  DataCopyPadExtParams<float>());
    }
    SyncPipes<HardEvent::MTE2_V>();
    uint32_t taken[4] = {0, 0, 0, 0};
    int64_t total = 0;
    if (nActive == 1) {  // one list left: it passes through
      DataCopy(merged, win[0], GetSortLen<float>((counts[0] + 3u) / 4u * 4u));
      taken[0] = counts[0];
    } else {
      for (int64_t s = nActive; s < 4; ++s) win[s] = win[0];
      const uint16_t validBit = nActive == 2 ? 0b0011 : nActive == 3 ? 0b0111 : 0b1111;
      MrgSortSrcList<float> lists(win[0], win[1], win[2], win[3]);
      MrgSort<float, true>(merged, lists, counts, taken, validBit, 1);
    }
    for (int64_t s = 0; s < nActive; ++s) {
      cursor[active[s]] += taken[s];
      total += taken[s];
    }
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(out[outPos * 2], merged, DataCopyExtParams(1, static_cast<uint32_t>(total * 8), 0, 0, 0));
    outPos += total;
    SyncPipes<HardEvent::MTE3_MTE2>();  // the windows are reloaded only after the merged run left UB
  }
}

// Flat positions [lo, hi) of sorted_indices in UB: one scan of all sorted (score, index) pairs; pair j
// holding index i in the range sets slot[i - lo] = j (the inverse of the sort, scattered in UB).
__aicore__ inline void InvertRange(LocalTensor<uint32_t>& pairs, LocalTensor<int32_t>& slot,
                                   const GlobalTensor<uint32_t>& pairsGm, int64_t lo, int64_t hi,
                                   const MoeRoutingTilingData& t) {
  for (int64_t j0 = 0; j0 < t.sortLen; j0 += MOE_PAIR_BATCH) {
    const int64_t n = MoeMin(MOE_PAIR_BATCH, t.sortLen - j0);
    DataCopyPad(pairs, pairsGm[j0 * 2], DataCopyExtParams(1, static_cast<uint32_t>(n * 8), 0, 0, 0),
                DataCopyPadExtParams<uint32_t>());
    SyncPipes<HardEvent::MTE2_S>();
    for (int64_t q = 0; q < n; ++q) {
      const int64_t i = static_cast<int64_t>(pairs.GetValue(static_cast<uint32_t>(2 * q + 1)));
      if (i >= lo && i < hi) slot.SetValue(static_cast<uint32_t>(i - lo), static_cast<int32_t>(j0 + q));
    }
    SyncPipes<HardEvent::S_MTE2>();  // the next batch lands after the scalar reads
  }
}

// Over tokens: block b takes tokens [begin, begin + count), i.e. flat positions [begin K, (begin + count) K),
// in passes of MOE_INDEX_WINDOW / K tokens. A pass inverts the sort for its positions in UB and writes
// them to sorted_indices in one copy; then each token row is read once and written to its K sorted
// positions j (those below num_out_tokens): a token's row crosses GM -> UB once, not K times.
template <typename T>
__aicore__ inline void GatherRows(GM_ADDR tokens, GM_ADDR sorted, GM_ADDR permuted, GM_ADDR sortedIndices,
                                  const MoeRoutingTilingData& t) {
  int64_t begin, count;
  BlockTaskRange(t.tasksPerBlock, t.tasksRemainder, begin, count);
  if (count <= 0) return;
  const int64_t k = t.topK;
  const int64_t passTokens = MOE_INDEX_WINDOW / k;  // topK <= 512: at least 32 tokens a pass
  TPipe pipe;
  TBuf<TPosition::VECCALC> pairBuf, slotBuf, rowBuf;
  pipe.InitBuffer(pairBuf, MOE_PAIR_BATCH * 8);
  pipe.InitBuffer(slotBuf, MOE_INDEX_WINDOW * 4);
  pipe.InitBuffer(rowBuf, t.colChunk * sizeof(T));
  GlobalTensor<uint32_t> pairsGm;
  GlobalTensor<int32_t> sidxGm;
  GlobalTensor<T> src, dst;
  pairsGm.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t*>(sorted), t.sortLen * 2);
  sidxGm.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(sortedIndices), t.sortLen);
  src.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(tokens), t.tokens * t.hidden);
  dst.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(permuted), t.numOut * t.hidden);
  LocalTensor<uint32_t> pairs = pairBuf.Get<uint32_t>();
  LocalTensor<int32_t> slot = slotBuf.Get<int32_t>();
  LocalTensor<T> row = rowBuf.Get<T>();
  for (int64_t t0 = begin; t0 < begin + count; t0 += passTokens) {
    const int64_t nt = MoeMin(passTokens, begin + count - t0);
    InvertRange(pairs, slot, pairsGm, t0 * k, (t0 + nt) * k, t);
    SyncPipes<HardEvent::S_MTE3>();
    DataCopyPad(sidxGm[t0 * k], slot, DataCopyExtParams(1, static_cast<uint32_t>(nt * k * 4), 0, 0, 0));
    for (int64_t token = t0; token < t0 + nt; ++token) {
      for (int64_t c = 0; c < t.hidden; c += t.colChunk) {
        const uint32_t bytes = static_cast<uint32_t>(MoeMin(t.colChunk, t.hidden - c) * sizeof(T));
        // GM -> UB -> GM with no vector stage: the hand-offs are MTE2 -> MTE3 and back (a VECIN
        // queue's EnQue/DeQue would order MTE2 against V only)
        DataCopyPad(row, src[token * t.hidden + c], DataCopyExtParams(1, bytes, 0, 0, 0), DataCopyPadExtParams<T>());
        SyncPipes<HardEvent::MTE2_MTE3>();
        for (int64_t q = 0; q < k; ++q) {
          const int64_t j = slot.GetValue(static_cast<uint32_t>((token - t0) * k + q));
          if (j < t.numOut) DataCopyPad(dst[j * t.hidden + c], row, DataCopyExtParams(1, bytes, 0, 0, 0));
        }
        SyncPipes<HardEvent::MTE3_MTE2>();
      }
    }
    SyncPipes<HardEvent::MTE3_S>();  // the next pass rewrites slot after its copy out
  }
}

// The chunk sort, one entry per expert-id dtype (MOE_SORT_CHUNKS_DTYPES, tiling/moe_routing_tiling_data.h).
#define MOE_SORT_CHUNKS_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(MOE_SORT_CHUNKS_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                      \
    MoeRoutingTilingData t;                                                              \
    CopyTiling(&t, tiling);                                                              \
    SortChunk<T>(indices, sorted, t, GetBlockIdx());                                     \
  }
MOE_SORT_CHUNKS_DTYPES(MOE_SORT_CHUNKS_ENTRY, moe_sort_chunks)
#undef MOE_SORT_CHUNKS_ENTRY

extern "C" __global__ __aicore__ void moe_merge_sorted(MOE_MERGE_SORTED_PARAMS(GM_ADDR)) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  MoeRoutingTilingData t;
  CopyTiling(&t, tiling);
  MergeLists(src, dst, t, GetBlockIdx());
}

// The row gather, one entry per tokens dtype (MOE_TOKEN_PERMUTE_DTYPES).
#define MOE_TOKEN_PERMUTE_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(MOE_TOKEN_PERMUTE_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                        \
    MoeRoutingTilingData t;                                                                \
    CopyTiling(&t, tiling);                                                                \
    GatherRows<T>(tokens, sorted, permuted, sortedIndices, t);                             \
  }
MOE_TOKEN_PERMUTE_DTYPES(MOE_TOKEN_PERMUTE_ENTRY, moe_token_permute)
#undef MOE_TOKEN_PERMUTE_ENTRY
