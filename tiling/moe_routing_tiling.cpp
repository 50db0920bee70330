#include "moe_routing_tiling.h"

#include <algorithm>

namespace tiling {

MoeRoutingTiling TileMoeRouting(const MoeRoutingProblem& p, const PlatformInfo& platform) {
  if (p.tokens < 0 || p.topK < 1 || p.hidden < 0 || p.numOut < 0)
    throw TilingError("moe routing: tokens, hidden and num_out_tokens must be >= 0 and topK >= 1");
  const int64_t sortLen = p.tokens * p.topK;
  if (sortLen > (int64_t(1) << 31) - 1) throw TilingError("moe routing: tokens * topK must fit in int32");
  if (p.numOut > sortLen) throw TilingError("moe routing: num_out_tokens exceeds tokens * topK");
  MoeRoutingTiling t{};
  MoeRoutingTilingData& d = t.data;
  d.tokens = p.tokens, d.topK = p.topK, d.hidden = p.hidden, d.sortLen = sortLen, d.numOut = p.numOut;
  d.chunkLen = kMoeSortChunk;
  d.chunks = (sortLen + kMoeSortChunk - 1) / kMoeSortChunk;
  d.listLen = kMoeSortChunk;
  d.lists = d.chunks;
  d.mergeWindow = kMoeMergeWindow;
  d.hasProbs = p.hasProbs ? 1 : 0;
  const uint32_t per = 32 / ElementBytes(p.dtype);
  const uint32_t h = uint32_t(std::min<int64_t>(std::max<int64_t>(p.hidden, 1), kMoeColChunk));
  d.colChunk = (h + per - 1) / per * per;
  t.sortBlocks = p.unpermute ? 0 : uint32_t(d.chunks);
  const int64_t tasks = p.tokens;  // every row phase goes over tokens (the permute reads each row once)
  t.rowBlocks = uint32_t(std::min<int64_t>(tasks, platform.vectorCores));
  if (t.rowBlocks > 0) {
    d.tasksPerBlock = tasks / t.rowBlocks;
    d.tasksRemainder = tasks % t.rowBlocks;
  }
  t.workspaceBytes = 2 * sortLen * 8;
  return t;
}

bool MoeMergeRound(MoeRoutingTilingData& t, int round, uint32_t& blockDim) {
  int64_t listLen = t.chunkLen;
  for (int r = 0; r < round; ++r) listLen *= 4;
  const int64_t lists = (t.sortLen + listLen - 1) / listLen;
  if (lists <= 1) return false;
  t.listLen = listLen;
  t.lists = lists;
  blockDim = uint32_t((lists + 3) / 4);
  return true;
}

}  // namespace tiling
