// Fused attention backward tiling: the forward's shapes, strides, mask and band (TileAttention), then
// the backward's own blocks: the largest S1 x S2 blocks whose buffers fit A2's L1, L0 and UB (the AIVs
// hold S, dP, P, dS and the fp32 sums of dk / dv or dq, so the blocks come out smaller than the
// forward's); the dk / dv tasks first, then the dq tasks, each pass dealt in snake order over the core
// groups; two L1 buffers of Q, dy and K (loads overlap the Mmads before them; with one the AIC runs
// without its lead) and two L0C buffers where they fit, and a workspace slot per step in flight. Blocks whose
// task sums fit L0C beside S and dP come first (attention_grad_cube.h: one Fixpipe of dk / dv or dq per task).
#include "attention_grad_tiling.h"

#include <algorithm>
#include <string>

#include "attention_blocks.h"
#include "attention_buffers.h"
#include "op_spec.h"

namespace tiling {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

constexpr int64_t kWorkspaceAlign = 512;

}  // namespace

AttentionGradTiling TileAttentionGrad(const AttentionProblem& p, const CubePlatform& platform) {
  const AttentionTiling fwd = TileAttention(p, platform);
  AttentionGradTiling out{};
  AttentionGradTilingData& g = out.data;
  AttentionTilingData& t = g.fwd;
  t = fwd.data;
  t.stackHeads = 1;  // the backward's query tasks are one head's rows
  out.varlenTable = fwd.varlenTable;
  const int64_t bytes = ElementBytes(p.dtype);
  const int64_t d16 = AlignUp(p.headDim, 16), v16 = t.vPitch;
  g.dPitch = int32_t(d16);

  const int64_t l1 = platform.l1Bytes - 256, half0a = platform.l0aBytes / 2, half0b = platform.l0bBytes / 2;
  std::string why;
  t.s1Block = 0;
  // First blocks whose task sums (dk and dv of the keys, or dq of the rows) stay in L0C beside S and dP, so a
  // step Fixpipes only S and dP; else (head dims past 256) the blocks of old, each step's parts Fixpipe'd out.
  for (const bool sums : {true, false}) {
    for (int64_t s2b : {128, 64, 32}) {
      for (int64_t s1b : {128, 64, 32}) {
        const uint32_t rows = AttentionGradHalf(uint32_t(s1b)), keys = AttentionGradHalf(uint32_t(s2b));
        const int64_t s1p = AlignUp(s1b, 16);
        const int64_t qk = std::min<int64_t>(d16, half0a / (std::max(s1b, s2b) * bytes) / 16 * 16);
        const int64_t rc = std::min<int64_t>(s1p, std::min(half0a / (s2b * bytes), half0b / (d16 * bytes)) / 16 * 16);
        const int64_t pv = std::min<int64_t>(s2b, std::min(half0a / (s1b * bytes), half0b / (d16 * bytes)) / 16 * 16);
        // Q, dy, K, V, P^T, dS (the AIC's L1 queues, attention_grad_cube.h)
        const int64_t l1Bytes = (s1b * (d16 + v16) + s2b * (d16 + v16) + s2b * s1p + s1b * s2b) * bytes;
        const AttentionGradL0c l0c = AttentionGradL0cBytes(s1b, s2b, d16, v16, sums);
        // L0C sums only with blocks that pass D's rows 8 at a time (ComputeD's fast path): else D 256's sums
        // would take 64-row blocks that leave it 4
        if (sums && rows * s2b < 8 * v16) continue;
        if (qk < 16 || rc < 16 || pv < 16) why = "L0A / L0B";
        else if (rows * s2b < v16) why = "UB (a row of dy through an S block)";  // ComputeD's passes
        else if (l1Bytes > l1) why = "L1";
        else if (l0c.sums + l0c.product > int64_t(platform.l0cBytes)) why = "L0C";
        else if (AttentionGradVectorBuffers(rows, keys, uint32_t(s2b), uint32_t(d16), uint32_t(v16), uint32_t(bytes),
                                            t.maskFull, 1, t.dropout)
                     .Total() > kA2UbBudget)
          why = "UB";  // the AIV's buffers as its Init carves them (attention_buffers.h)
        else {
          t.s1Block = int32_t(s1b), t.s2Block = int32_t(s2b);
          t.qkChunk = int32_t(qk), t.pvChunk = int32_t(pv), g.rowChunk = int32_t(rc);
          // a second buffer of Q, dy and K: the loads of the Scores and the Parts overlap the Mmads before them
          t.l1Buffers = l1Bytes + (s1b * (d16 + v16) + s2b * d16) * bytes <= l1 ? 2 : 1;
          t.l0cBuffers = l0c.sums + 2 * l0c.product <= int64_t(platform.l0cBytes) ? 2 : 1;
          g.l0cSums = sums;
          // a second set of S / dP / statistics buffers where UB holds it: the AIVs load step n + 1 before they form
          // step n, which needs the cube's lead (at lead 0 its Scores of step n + 1 wait for that very step n)
          const bool twoSets = AttentionGradVectorBuffers(rows, keys, uint32_t(s2b), uint32_t(d16), uint32_t(v16),
                                                          uint32_t(bytes), t.maskFull, 2, t.dropout)
                                   .Total() <= kA2UbBudget;
          g.vecSets = twoSets && t.l1Buffers > 1 ? 2 : 1;
          // the ring of step tiles beside the task's tile, P with dS: where it fits, no operand is read twice from GM
          g.qdyRing = t.l1Buffers > 1 && AttentionGradRingL1Bytes(s1b, s2b, s1p, d16, v16, bytes) <= l1 ? 1 : 0;
          break;
        }
      }
      if (t.s1Block != 0) break;
    }
    if (t.s1Block != 0) break;
  }
  if (t.s1Block == 0)
    throw TilingError("head dims D = " + std::to_string(p.headDim) + ", Dv = " + std::to_string(p.valueDim) + " in " +
                      DTypeName(p.dtype) + " leave no attention backward block that fits " + why);
  g.s1Pitch = int32_t(AlignUp(t.s1Block, 16));

  int64_t qTasks = 0, kvTasks = 0;
  for (const auto& [s1, s2] : AttentionBatchLengths(t, out.varlenTable))
    qTasks += p.heads * CeilDiv(s1, t.s1Block), kvTasks += p.kvHeads * CeilDiv(s2, t.s2Block);
  t.tasks = qTasks, g.kvTasks = kvTasks;
  const int64_t s1b = t.s1Block, s2b = t.s2Block;
  t.sSlotBytes = AlignUp(s1b * s2b * 4, kWorkspaceAlign);
  g.dpOffset = t.sSlotBytes;
  g.pOffset = g.dpOffset + t.sSlotBytes;
  g.dsOffset = g.pOffset + AlignUp(s2b * g.s1Pitch * bytes, kWorkspaceAlign);
  g.r1Offset = g.dsOffset + AlignUp(std::max<int64_t>(s1b * s2b, s2b * g.s1Pitch) * bytes, kWorkspaceAlign);
  g.r2Offset = g.r1Offset + AlignUp(std::max(s1b, s2b) * d16 * 4, kWorkspaceAlign);
  g.slotBytes = g.r2Offset + AlignUp(s2b * v16 * 4, kWorkspaceAlign);
  g.workspacePerGroup = kAttentionGradSlots * g.slotBytes;
  t.workspacePerGroup = g.workspacePerGroup;
  out.blockDim = uint32_t(std::min<int64_t>(qTasks + kvTasks, platform.cubeCores));
  t.blockDim = int32_t(out.blockDim);
  g.dOffset = int64_t(out.blockDim) * g.workspacePerGroup;
  int64_t rows = 0;  // the statistics' rows: B x N1 x S1 (TND: T x N1)
  for (const auto& [s1, s2] : AttentionBatchLengths(t, out.varlenTable)) rows += p.heads * s1;
  g.sinkOffset = g.dOffset + AlignUp(rows * 4, kWorkspaceAlign);
  g.headTasks = qTasks / p.heads;  // every head has the same row blocks
  out.workspaceBytes = g.sinkOffset + (t.sink ? AlignUp(2 * qTasks * 32, kWorkspaceAlign) : 0);  // 32-byte slots
  return out;
}

std::vector<int64_t> AttentionGradKvTaskBlocks(const AttentionGradTiling& tiling) {
  const AttentionTilingData& t = tiling.data.fwd;
  std::vector<int64_t> blocks;
  for (const auto& [s1, s2] : AttentionBatchLengths(t, tiling.varlenTable))
    for (int64_t n = 0; n < t.kvHeads; ++n)
      for (int64_t j0 = 0; j0 < s2; j0 += t.s2Block) {
        int64_t first, count;
        AttentionS1Blocks(t, j0, std::min<int64_t>(s2, j0 + t.s2Block), s1, s2, first, count);
        blocks.push_back(count);
      }
  return blocks;
}

}  // namespace tiling
