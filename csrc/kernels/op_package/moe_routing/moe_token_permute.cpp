// moe_token_permute for the op package: the three phases of kernels/moe_routing_permute.cpp (chunk
// sort, 4-way merge rounds, row gather), which the torch path launches one after another, here in
// one launch meeting at SyncAll. blockDim is the gather's row blocks (at most the vector cores, all
// resident: batch schedule mode, op_host/moe_token_permute.cpp); the sort's chunks and each merge
// round's groups of four lists are dealt round-robin over those blocks. The (score, index) pairs
// live in the user workspace, two buffers of sortLen pairs swapped after every round.
#include "kernels/moe_routing_permute.cpp"

// Chunk c on block b: SortChunk places its chunk by GetBlockIdx(), so it gets the arrays shifted
// by c - b chunks, and the indices it wrote (positions in the shifted arrays) are moved back.
template <typename I>
__aicore__ inline void SortChunkAt(GM_ADDR indices, GM_ADDR pairsGm, const MoeRoutingTilingData& t, int64_t c) {
  const int64_t shift = (c - int64_t(GetBlockIdx())) * t.chunkLen;
  MoeRoutingTilingData s = t;
  s.sortLen = t.sortLen - shift;
  SortChunk<I>(indices + shift * int64_t(sizeof(I)), pairsGm + shift * 8, s);
  PipeBarrier<PIPE_ALL>();  // the chunk's pairs are in GM
  if (shift == 0) return;
  const int64_t len = MoeMin(t.chunkLen, t.sortLen - c * t.chunkLen);
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, static_cast<uint32_t>(t.chunkLen * 8));
  LocalTensor<uint32_t> pairs = buf.Get<uint32_t>();
  GlobalTensor<uint32_t> gm;
  gm.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t*>(pairsGm) + c * t.chunkLen * 2, len * 2);
  DataCopyPad(pairs, gm, DataCopyExtParams(1, static_cast<uint32_t>(len * 8), 0, 0, 0),
              DataCopyPadExtParams<uint32_t>());
  SyncPipes<HardEvent::MTE2_S>();
  for (uint32_t i = 1; i < static_cast<uint32_t>(2 * len); i += 2) {
    pairs.SetValue(i, pairs.GetValue(i) + static_cast<uint32_t>(shift));
  }
  SyncPipes<HardEvent::S_MTE3>();
  DataCopyPad(gm, pairs, DataCopyExtParams(1, static_cast<uint32_t>(len * 8), 0, 0, 0));
  PipeBarrier<PIPE_ALL>();
}

// Group g of four lists on block b: MergeLists picks lists by GetBlockIdx(); positions are not
// stored, so shifting the arrays by g - b groups is all it takes.
__aicore__ inline void MergeGroupAt(GM_ADDR src, GM_ADDR dst, const MoeRoutingTilingData& round, int64_t g) {
  const int64_t groupsBefore = g - int64_t(GetBlockIdx());
  const int64_t shift = groupsBefore * 4 * round.listLen;
  MoeRoutingTilingData s = round;
  s.sortLen = round.sortLen - shift;
  s.lists = round.lists - groupsBefore * 4;
  MergeLists(src + shift * 8, dst + shift * 8, s);
  PipeBarrier<PIPE_ALL>();
}

template <typename T, typename I>
__aicore__ inline void PermuteOneLaunch(GM_ADDR tokens, GM_ADDR indices, GM_ADDR permuted, GM_ADDR sortedIndices,
                                        GM_ADDR workspace, const MoeRoutingTilingData& t) {
  const int64_t block = GetBlockIdx(), blocks = GetBlockNum();
  GM_ADDR src = GetUserWorkspace(workspace);
  GM_ADDR dst = src + t.sortLen * 8;
  for (int64_t c = block; c < t.chunks; c += blocks) SortChunkAt<I>(indices, src, t, c);
  SyncAll();
  // The rounds of tiling::MoeMergeRound: lists of chunkLen * 4^round pairs until one is left.
  MoeRoutingTilingData round = t;
  round.listLen = t.chunkLen;
  round.lists = t.chunks;
  while (round.lists > 1) {
    for (int64_t g = block; g < (round.lists + 3) / 4; g += blocks) MergeGroupAt(src, dst, round, g);
    SyncAll();
    GM_ADDR merged = dst;
    dst = src;
    src = merged;
    round.listLen *= 4;
    round.lists = (t.sortLen + round.listLen - 1) / round.listLen;
  }
  GatherRows<T>(tokens, src, permuted, sortedIndices, t);
}

extern "C" __global__ __aicore__ void moe_token_permute(GM_ADDR tokens, GM_ADDR indices, GM_ADDR permuted_tokens,
                                                        GM_ADDR sorted_indices, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(MoeRoutingTilingData);
  GET_TILING_DATA_WITH_STRUCT(MoeRoutingTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);  // SyncAll: AIV_ONLY starts no cross-core scheduler
  PermuteOneLaunch<DTYPE_TOKENS, DTYPE_INDICES>(tokens, indices, permuted_tokens, sorted_indices, workspace,
                                                tilingData);
}
