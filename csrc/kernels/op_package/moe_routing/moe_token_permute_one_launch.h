// moe_token_permute as one op-package launch: the three phases of kernels/moe_routing_permute.cpp (chunk
// sort, 4-way merge rounds, row gather), which the torch path launches one after another, here meeting
// at SyncAll. blockDim is the gather's row blocks (at most the vector cores, all resident: batch schedule
// mode, csrc/op_host/moe_routing/moe_routing_host.h); the sort's chunks and each merge round's groups of
// four lists are dealt round-robin over those blocks, through the same SortChunk and MergeLists the
// direct launches call with their block index. The (score, index) pairs live in the user workspace, two
// buffers of sortLen pairs swapped after every round.
#pragma once
#include "kernels/moe_routing_permute.cpp"

template <typename T, typename I>
__aicore__ inline void PermuteOneLaunch(GM_ADDR tokens, GM_ADDR indices, GM_ADDR permuted, GM_ADDR sortedIndices,
                                        GM_ADDR workspace, const MoeRoutingTilingData& t) {
  const int64_t block = GetBlockIdx(), blocks = GetBlockNum();
  GM_ADDR src = GetUserWorkspace(workspace);
  GM_ADDR dst = src + t.sortLen * 8;
  for (int64_t c = block; c < t.chunks; c += blocks) {
    SortChunk<I>(indices, src, t, c);
    // the chunk's pairs leave UB before the next chunk's TPipe reuses it (~TPipe drains every pipe, but not in
    // a SuperKernel build: asc-devkit's TPipe::Destroy skips its PIPE_ALL there)
    PipeBarrier<PIPE_ALL>();
  }
  SyncAll();
  // The rounds of tiling::MoeMergeRound: lists of chunkLen * 4^round pairs until one is left.
  MoeRoutingTilingData round = t;
  round.listLen = t.chunkLen;
  round.lists = t.chunks;
  while (round.lists > 1) {
    for (int64_t g = block; g < (round.lists + 3) / 4; g += blocks) {
      MergeLists(src, dst, round, g);
      PipeBarrier<PIPE_ALL>();
    }
    SyncAll();
    GM_ADDR merged = dst;
    dst = src;
    src = merged;
    round.listLen *= 4;
    round.lists = (t.sortLen + round.listLen - 1) / round.listLen;
  }
  GatherRows<T>(tokens, src, permuted, sortedIndices, t);
}
