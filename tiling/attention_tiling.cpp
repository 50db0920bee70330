// Fused attention tiling: S1 blocks of the fewest rows (128 at most) that hold a task's, S2 blocks of up to
// 128 x 128 / S1 keys, preferring those whose L0C holds two accumulators; the Mmads' K chunks sized to half of
// L0A / L0B (the queues hold two), and every buffer checked against A2's L1, L0 and UB (the double buffers
// where they fit); one task per (batch, query head, S1 block), dealt to the core groups by the kernel's walk.
#include "attention_tiling.h"

#include <algorithm>
#include <limits>
#include <string>

#include "attention_blocks.h"
#include "attention_buffers.h"
#include "op_spec.h"

namespace tiling {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

constexpr int64_t kS2Block = 128;  // keys of an S block (decode: up to 4x)
constexpr int64_t kWorkspaceAlign = 512;
// A band edge past every key: pre/next tokens of the causal modes.
constexpr int64_t kNoBandEdge = int64_t(1) << 40;

// Element strides (batch, head, row) of a [.., rows, heads, dim] operand in `layout`, `batch` batches.
void Strides(AttentionLayout layout, int64_t batch, int64_t rows, int64_t heads, int64_t dim, int64_t& sb, int64_t& sn,
             int64_t& ss) {
  switch (layout) {
    case kLayoutSBH: sb = heads * dim, sn = dim, ss = batch * heads * dim; break;
    case kLayoutBNSD: sb = heads * rows * dim, sn = rows * dim, ss = dim; break;
    case kLayoutTND: sb = 0, sn = dim, ss = heads * dim; break;
    default: sb = rows * heads * dim, sn = dim, ss = heads * dim;  // BSH, BSND
  }
}

}  // namespace

AttentionTiling TileAttention(const AttentionProblem& p, const CubePlatform& platform) {
  AttentionTiling out{};
  AttentionTilingData& t = out.data;
  const int64_t bytes = ElementBytes(p.dtype);
  const int64_t d16 = AlignUp(p.headDim, 16), v16 = AlignUp(p.valueDim, 16);
  t.batch = p.batch, t.heads = p.heads, t.kvHeads = p.kvHeads, t.headDim = p.headDim, t.valueDim = p.valueDim;
  t.s1 = p.s1, t.s2 = p.s2;
  t.varlen = p.layout == kLayoutTND, t.layout = p.layout;
  const int64_t tq = t.varlen ? (p.cumQ.empty() ? 0 : p.cumQ.back()) : p.s1;
  const int64_t tk = t.varlen ? (p.cumKv.empty() ? 0 : p.cumKv.back()) : p.s2;
  Strides(p.layout, p.batch, tq, p.heads, p.headDim, t.qStrideB, t.qStrideN, t.qStrideS);
  Strides(p.layout, p.batch, tk, p.kvHeads, p.headDim, t.kStrideB, t.kStrideN, t.kStrideS);
  Strides(p.layout, p.batch, tk, p.kvHeads, p.valueDim, t.vStrideB, t.vStrideN, t.vStrideS);
  Strides(p.layout, p.batch, tq, p.heads, p.valueDim, t.oStrideB, t.oStrideN, t.oStrideS);
  t.scale = p.scale;
  t.softcap = p.softcap;
  t.sink = p.sinkDefined ? 1 : 0;
  // rows of whole bytes when every sequence's keys are a multiple of 8 (TND: its blocks start at N1 * sum s1 s2)
  bool byteRows = p.s2 % 8 == 0;
  for (size_t b = 0; b < p.cumKv.size(); ++b) byteRows = byteRows && (p.cumKv[b] - (b ? p.cumKv[b - 1] : 0)) % 8 == 0;
  t.dropout = p.keepProb >= 1.0f ? kDropoutOff : byteRows ? kDropoutBytes : kDropoutBits;
  t.keepProbInv = 1.0f / p.keepProb;

  // Masks: no atten_mask, no masking (torch_npu ignores sparse_mode and the tokens then); modes 0 and 1
  // read the full mask, modes 2-4 (and 0's tokens) are the band, computed, not read.
  t.maskFull = p.maskDefined && p.sparseMode <= 1;
  if (t.maskFull) {
    const std::vector<int64_t>& m = p.maskShape;
    t.maskStrideS = p.s2;
    t.maskStrideN = m.size() == 4 && m[1] > 1 ? p.s1 * p.s2 : 0;
    t.maskStrideB = m.size() == 4 && m[0] > 1 ? m[1] * p.s1 * p.s2 : 0;
  }
  if (p.maskDefined && p.sparseMode != 1) {
    t.band = 1;
    t.bottomRight = p.sparseMode == 3 || p.sparseMode == 4;
    t.preTokens = p.sparseMode == 2 || p.sparseMode == 3 ? kNoBandEdge : p.preTokens;
    t.nextTokens = p.sparseMode == 2 || p.sparseMode == 3 ? 0 : p.nextTokens;
  }

  // Block sizes: the smallest S1 block that holds a task's rows (128 at most; smaller only if the buffers
  // need it), and with few rows longer S2 blocks: a decode task's time goes to the cube <-> vector round
  // trips of its blocks, so fewer, longer blocks.
  const int64_t l1 = platform.l1Bytes - 256, half0a = platform.l0aBytes / 2, half0b = platform.l0bBytes / 2;
  const int64_t ub = kA2UbBudget, group = p.kvHeads > 0 ? p.heads / p.kvHeads : 1;
  // Decode: a kv head's query heads stacked as one task's rows, when they fit the largest block and
  // Nd2Nz's 16-bit matrix stride reaches from one query row's heads to the next's (stackHeads below).
  const bool stack = !t.varlen && !t.dropout && group > 1 && p.s1 > 0 && group * p.s1 <= 128 && t.qStrideS <= 65535 &&
                     t.qStrideN <= 65535;  // dropout reads a row block's mask bits one head at a time
  const int64_t wanted = stack ? group * p.s1 : (t.varlen ? 128 : p.s1);
  t.vPitch = int32_t(v16);
  std::string why;
  // Blocks of s1b rows and s2b keys with `buffers` of each L1 tile, if they fit (else `why` says where not);
  // `pipelined`: only if L0C holds two accumulators, so a Mmad never waits for the last Fixpipe.
  const auto fits = [&](int64_t s1b, int64_t s2b, int64_t buffers, bool pipelined) {
    const int64_t rows = AttentionVectorRows(uint32_t(s1b)), l0c = s1b * std::max(s2b, v16) * 4;
    if (pipelined && 2 * l0c > int64_t(platform.l0cBytes)) return false;
    // the AIV's buffers as its Init carves them (attention_buffers.h), P V's own where it still fits
    const AttentionVectorUb vec =
        AttentionVectorBuffers(uint32_t(rows), uint32_t(s2b), uint32_t(v16), t.maskFull, t.dropout);
    const int64_t vecUb = vec.WithoutPv();
    const int64_t qk = std::min<int64_t>(d16, half0a / (std::max(s1b, s2b) * bytes) / 16 * 16);
    const int64_t pv = std::min<int64_t>(s2b, std::min(half0a / (s1b * bytes), half0b / (v16 * bytes)) / 16 * 16);
    const int64_t l1Bytes = buffers * (s1b * d16 + s2b * d16 + s2b * v16 + s1b * s2b) * bytes;
    if (qk < 16 || pv < 16) why = "L0A / L0B";
    else if (l1Bytes > l1) why = "L1";
    else if (l0c > int64_t(platform.l0cBytes)) why = "L0C";
    else if (vecUb > ub) why = "UB";
    else {
      t.s1Block = int32_t(s1b), t.s2Block = int32_t(s2b), t.qkChunk = int32_t(qk), t.pvChunk = int32_t(pv);
      t.l1Buffers = int32_t(buffers), t.l0cBuffers = 2 * l0c <= int64_t(platform.l0cBytes) ? 2 : 1;
      t.pvBuffer = vecUb + vec.pv <= ub;
      return true;
    }
    return false;
  };
  // The largest blocks that keep the pipeline (an S block of at most 128 x 128 elements), then any that fit.
  for (bool pipelined : {true, false})
    for (int64_t s1b : {128, 64, 32, 16}) {
      if (t.s1Block != 0 || (s1b > 16 && s1b / 2 >= wanted)) continue;  // a smaller block holds the rows
      for (int64_t s2b : {512, 256, 128})
        for (int64_t buffers : {2, 1})
          if (t.s1Block == 0 && s1b * s2b <= 128 * kS2Block) fits(s1b, s2b, buffers, pipelined);
    }
  if (t.s1Block == 0)
    throw TilingError("head dims D = " + std::to_string(p.headDim) + ", Dv = " + std::to_string(p.valueDim) + " in " +
                      DTypeName(p.dtype) + " leave no attention block that fits " + why);
  // Nd2Nz takes a row pitch of at most 65535 elements (A2's 16-bit srcDValue).
  const int64_t pitch = std::max({t.qStrideS, t.kStrideS, t.vStrideS});
  if (pitch > 65535)
    throw TilingError("a row pitch of " + std::to_string(pitch) +
                      " elements (rows of every head and batch, by layout) exceeds the cube's 65535 (use BNSD)");

  if (t.varlen) {
    out.varlenTable = p.cumQ;
    out.varlenTable.insert(out.varlenTable.end(), p.cumKv.begin(), p.cumKv.end());
  }
  t.stackHeads = stack && group * p.s1 <= t.s1Block ? int32_t(group) : 1;  // the buffers may allow less
  int64_t tasks = 0;
  for (const auto& [s1, s2] : AttentionBatchLengths(t, out.varlenTable))
    tasks += t.stackHeads > 1 ? p.kvHeads : p.heads * CeilDiv(s1, t.s1Block);
  t.tasks = tasks;
  // GQA prefill: the bundle of a kv group's heads whose snake deal leaves the busiest core group the least work
  // (its S2 blocks and one per task: causal blocks differ), the largest of those, if under 1/32 more than
  // single tasks' (reusing K / V costs little balance); its cache, the L1 the blocks' buffers leave (without
  // the streaming K / V buffers when it holds every S2 block).
  const auto cost = [&](int64_t h) {
    std::vector<int64_t> load(platform.cubeCores, 0);
    const int64_t cores = int64_t(platform.cubeCores);
    int64_t bundle = 0, first, count;
    for (const auto& [s1, s2] : AttentionBatchLengths(t, out.varlenTable))
      for (int64_t n = 0; n < p.heads / h; ++n)
        for (int64_t i0 = 0; i0 < s1; i0 += t.s1Block, ++bundle) {
          AttentionS2Blocks(t, i0, std::min<int64_t>(s1, i0 + t.s1Block), s1, s2, first, count);
          const int64_t round = bundle / cores, k = bundle % cores;
          load[size_t(round % 2 ? cores - 1 - k : k)] += h * (count + 1);
        }
    return *std::max_element(load.begin(), load.end());
  };
  t.groupHeads = 1, t.kvCacheBlocks = 0, t.kvStream = 1;
  for (int64_t h = group; h > 1 && t.stackHeads == 1; --h)
    if (group % h == 0 && 32 * cost(h) < 33 * cost(1) && (t.groupHeads == 1 || cost(h) < cost(t.groupHeads)))
      t.groupHeads = int32_t(h);
  if (t.groupHeads > 1) {
    const int64_t kvBlock = int64_t(t.s2Block) * (d16 + v16) * bytes, need = CeilDiv(p.s2, t.s2Block);
    const int64_t rest = l1 - int64_t(t.l1Buffers) * t.s1Block * (d16 + t.s2Block) * bytes;
    t.kvStream = need * kvBlock > rest;
    t.kvCacheBlocks = int32_t(t.kvStream ? std::max<int64_t>(0, rest / kvBlock - t.l1Buffers) : need);
    if (t.kvCacheBlocks == 0) t.groupHeads = 1, t.kvStream = 1;
  }
  t.sSlotBytes = AlignUp(int64_t(t.s1Block) * t.s2Block * 4, kWorkspaceAlign);
  t.pOffset = kAttentionSSlots * t.sSlotBytes;
  t.pSlotBytes = AlignUp(int64_t(t.s1Block) * t.s2Block * bytes, kWorkspaceAlign);
  t.oOffset = t.pOffset + kAttentionPSlots * t.pSlotBytes;
  t.oSlotBytes = AlignUp(int64_t(t.s1Block) * v16 * 4, kWorkspaceAlign);
  t.workspacePerGroup = t.oOffset + kAttentionOSlots * t.oSlotBytes;
  out.blockDim = uint32_t(std::min<int64_t>(tasks / t.groupHeads, platform.cubeCores));
  t.blockDim = int32_t(out.blockDim);
  out.workspaceBytes = int64_t(out.blockDim) * t.workspacePerGroup;
  return out;
}

std::vector<std::pair<int64_t, int64_t>> AttentionBatchLengths(const AttentionTilingData& t,
                                                               const std::vector<int64_t>& table) {
  if (!t.varlen) return std::vector<std::pair<int64_t, int64_t>>(size_t(t.batch), {t.s1, t.s2});
  std::vector<std::pair<int64_t, int64_t>> lengths;
  const size_t batches = table.size() / 2;
  int64_t prevQ = 0, prevK = 0;
  for (size_t b = 0; b < batches; ++b) {
    lengths.emplace_back(table[b] - prevQ, table[batches + b] - prevK);
    prevQ = table[b], prevK = table[batches + b];
  }
  return lengths;
}

std::vector<int64_t> AttentionTaskBlocks(const AttentionTiling& tiling) {
  const AttentionTilingData& t = tiling.data;
  std::vector<int64_t> blocks;
  const int64_t s1Block = t.stackHeads > 1 ? t.s1 : t.s1Block;  // stacked: one task per kv head, all rows
  for (const auto& [s1, s2] : AttentionBatchLengths(t, tiling.varlenTable))
    for (int64_t n = 0; n < t.heads / t.stackHeads; ++n)
      for (int64_t i0 = 0; i0 < s1; i0 += s1Block) {
        int64_t first, count;
        AttentionS2Blocks(t, i0, std::min<int64_t>(s1, i0 + s1Block), s1, s2, first, count);
        blocks.push_back(count);
      }
  return blocks;
}

}  // namespace tiling
