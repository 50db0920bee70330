// Fused linear cross-entropy tiling: score blocks of kLceBlock x kLceBlock, their reduction over H in chunks that
// fill half of L0A / L0B (the queues hold two), the backward's G segments of 128 KB in L1, and every buffer held to
// A2's L1, L0 and UB (linear_cross_entropy_buffers.h). Backward: one task per block of 128 tokens (dx) or of 128
// vocab rows (dw), each walking every block of the other. Forward: launches over vocabulary ranges that fit the
// L2, each cut into splits so that (split, token block) tasks fill the cube cores in waves that end together.
// Forward tasks are dealt round-robin to the core groups, backward ones longest first (linear_cross_entropy_task.h).
#include "linear_cross_entropy_tiling.h"

#include <algorithm>
#include <string>
#include <vector>

#include "linear_cross_entropy_buffers.h"
#include "op_spec.h"

namespace tiling {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

constexpr int64_t kWorkspaceAlign = 512;
constexpr int64_t kGradSegmentBytes = 128 * 1024;  // a G segment in L1: 4 blocks in 16-bit dtypes, 2 in fp32

// Forward: the launch's vocabulary rows [begin, end) in splits of whole block pairs (the AIC scores two blocks
// at a time), as many as make tokenTasks x splits tasks take the fewest waves x pairs per task (the launch's
// time on `cores` groups), the fewest of equals (less to combine); then its groups, partials and workspace.
void PlanForwardRange(LinearCrossEntropyTiling& out, int64_t begin, int64_t end, bool chained, uint32_t cores) {
  LinearCrossEntropyTilingData& t = out.data;
  const int64_t blocks = CeilDiv(end - begin, kLceBlock), pairs = CeilDiv(blocks, 2);
  int64_t best = 1, bestCost = -1;
  for (int64_t s = 1; s <= std::min<int64_t>(pairs, cores); ++s) {
    const int64_t cost = CeilDiv(t.tokenTasks * s, cores) * CeilDiv(pairs, s);
    if (bestCost < 0 || cost < bestCost) best = s, bestCost = cost;
  }
  t.vocabBegin = begin, t.vocabEnd = end, t.chained = chained ? 1 : 0;
  t.splitBlocks = 2 * CeilDiv(pairs, best);
  t.vocabSplits = CeilDiv(blocks, t.splitBlocks);  // no empty split
  out.blockDim = uint32_t(std::min<int64_t>(t.tokenTasks * t.vocabSplits, cores));
  t.blockDim = int32_t(out.blockDim);
  t.partialOffset = AlignUp(int64_t(out.blockDim) * t.workspacePerGroup, kWorkspaceAlign);
  out.workspaceBytes = t.partialOffset + AlignUp(t.vocabSplits * kLceStatistics * t.tokens * 4, kWorkspaceAlign);
}

// Forward: a launch's start and its combine after the SyncAll, in cube cycles (the calibrated mix launch start,
// about 6.2 us, twice, at A2's 1.8 GHz: docs/pipeline-model.md), the price of one launch more.
constexpr int64_t kLceLaunchCycles = 22000;

// Forward: the modelled cube cycles of a launch of `rows` vocabulary rows: its waves of (split, token block) tasks
// times a task's block pairs (2 x 2 x 128 x 128 x H FLOPs a pair, 8192 FLOPs a cycle; fp32 a quarter), and its start.
int64_t ForwardLaunchCycles(const LinearCrossEntropyProblem& p, const LinearCrossEntropyTiling& plan, int64_t rows,
                            uint32_t cores) {
  LinearCrossEntropyTiling l = plan;
  PlanForwardRange(l, 0, rows, false, cores);
  const int64_t waves = CeilDiv(l.data.tokenTasks * l.data.vocabSplits, cores);
  return waves * (l.data.splitBlocks / 2) * p.hidden * (ElementBytes(p.dtype) == 4 ? 32 : 8) + kLceLaunchCycles;
}

// Forward: vocabulary rows per launch, so that a launch's footprint (hidden and its tokens' inputs and outputs,
// its weight / bias / class-weight rows, the workspace) fits `budget`: of the whole block pairs that fit, the count
// whose launches (the last one shorter) take the fewest modelled cycles, the larger of equals. All of V when it
// fits, or when hidden alone does not.
int64_t LaunchRows(const LinearCrossEntropyProblem& p, const LinearCrossEntropyTiling& plan, int64_t budget,
                   uint32_t cores) {
  const int64_t bytes = ElementBytes(p.dtype),
                row = p.hidden * bytes + (p.hasBias ? bytes : 0) + (p.hasClassWeight ? 4 : 0);
  const int64_t fixed = p.tokens * (p.hidden * bytes + 8 + kLceStatistics * 4) +
                        int64_t(cores) * plan.data.workspacePerGroup + int64_t(cores) * kLceStatistics * p.tokens * 4;
  if (budget <= 0 || row <= 0 || budget - fixed < row * 2 * kLceBlock) return p.vocab;
  const int64_t pair = 2 * kLceBlock, most = (budget - fixed) / row / pair * pair;
  if (most >= p.vocab) return p.vocab;
  int64_t best = most, bestCycles = -1;
  for (int64_t rows = most; rows >= pair; rows -= pair) {
    const int64_t left = p.vocab % rows;
    const int64_t cycles = p.vocab / rows * ForwardLaunchCycles(p, plan, rows, cores) +
                           (left > 0 ? ForwardLaunchCycles(p, plan, left, cores) : 0);
    if (bestCycles < 0 || cycles < bestCycles) best = rows, bestCycles = cycles;
  }
  return best;
}

// Backward: vocabulary rows per launch. A launch's vocab tasks (its weight rows fixed) and token tasks (the same
// rows moving) read each row within the launch, so its rows, at most half the budget, are read from HBM once and
// hit the L2 after; grad_hidden's fp32 sums go from launch to launch through the workspace (2 x 4TH bytes a
// launch), so a launch has at least as many rows as there are tokens (those bytes at most 8 / 6R of the launch's
// 6THR FLOPs). Whole blocks, the launches as even as that allows; all of V when it fits.
int64_t BackwardLaunchRows(const LinearCrossEntropyProblem& p, int64_t budget) {
  const int64_t row = p.hidden * ElementBytes(p.dtype);
  if (budget <= 0 || row <= 0) return p.vocab;
  const int64_t rows = std::max({budget / 2 / row / kLceBlock * kLceBlock, p.tokens, kLceBlock});
  if (rows >= p.vocab) return p.vocab;
  return std::min(p.vocab, AlignUp(CeilDiv(p.vocab, CeilDiv(p.vocab, rows)), kLceBlock));
}

// Backward: the launch's vocabulary blocks in `splits` token walks of splitBlocks blocks each (no empty one).
void SplitTokenWalks(LinearCrossEntropyTilingData& t, int64_t splits) {
  const int64_t blocks = t.vocabTasks;
  t.splitBlocks = CeilDiv(blocks, std::min(splits, blocks));
  t.vocabSplits = CeilDiv(blocks, t.splitBlocks);
}

// Backward: the busiest group's blocks when a launch's tasks are dealt as the kernel deals them (LceTaskWalk:
// the longer kind first, each task to the group with the fewest blocks so far).
int64_t BackwardMakespan(const LinearCrossEntropyTilingData& t, int64_t cores) {
  const int64_t tokenLen = t.splitBlocks, vocabLen = t.tokenTasks, tokenCount = t.tokenTasks * t.vocabSplits;
  std::vector<int64_t> load(size_t(std::min<int64_t>({cores, tokenCount + t.vocabTasks, kLceMaxGroups})), 0);
  const bool tokensFirst = tokenLen > vocabLen;
  for (int64_t kind = 0; kind < 2; ++kind) {
    const bool token = (kind == 0) == tokensFirst;
    for (int64_t n = token ? tokenCount : t.vocabTasks; n > 0; --n)
      *std::min_element(load.begin(), load.end()) += token ? tokenLen : vocabLen;
  }
  return *std::max_element(load.begin(), load.end());
}

// Backward: token walks per launch. With few token blocks their walks are the longest tasks (8 at T 1024 against
// 24 groups), so each launch's range is walked in several splits, each summing into its own fp32 grad_hidden
// buffer (combined in order after the last launch's tasks). The count is the least busiest-group time, in block
// steps (a score and its product, 2 x 2 x 128 x 128 x H FLOPs: 8H cycles of A2's 8192 FLOPs a cycle, 32H in
// fp32), with each split's sums (read and written, 8TH bytes a launch) at A2's 32 HBM bytes per core cycle
// (docs/pipeline-model.md): T / 32 / cores block steps in 16-bit dtypes, T / 128 / cores in fp32.
int64_t BackwardSplits(const LinearCrossEntropyTilingData& first, DType dtype, int64_t cores) {
  const int64_t perStep = (ElementBytes(dtype) == 4 ? 128 : 32) * cores;  // tokens per block step of sums
  int64_t best = 1, bestCost = -1;
  for (int64_t s = 1; s <= kLceMaxGradSums && s <= first.vocabTasks; ++s) {
    LinearCrossEntropyTilingData t = first;
    SplitTokenWalks(t, s);
    const int64_t cost = BackwardMakespan(t, cores) * perStep + s * first.tokens;
    if (bestCost < 0 || cost < bestCost) best = s, bestCost = cost;
  }
  return best;
}

}  // namespace

LinearCrossEntropyTiling TileLinearCrossEntropyLaunch(const LinearCrossEntropyTiling& first, int64_t k,
                                                      const CubePlatform& platform) {
  LinearCrossEntropyTiling out = first;
  const int64_t begin = k * first.data.launchRows, end = std::min(first.data.vocab, begin + first.data.launchRows);
  if (k < 0 || k >= first.data.launches)
    throw TilingError("the linear cross-entropy " + std::string(first.data.vocabTasks != 0 ? "backward" : "forward") +
                      " has no launch " + std::to_string(k));
  if (first.data.vocabTasks == 0) {
    PlanForwardRange(out, begin, end, k > 0, platform.cubeCores);
    return out;
  }
  // the backward: the range's vocab tasks and every token task over the range; the partialOffset of the first
  // launch (which has the most groups) in every launch, as they share the workspace's fp32 sums of grad_hidden
  LinearCrossEntropyTilingData& t = out.data;
  t.vocabBegin = begin, t.vocabEnd = end, t.chained = k > 0 ? 1 : 0;
  t.vocabTasks = CeilDiv(end - begin, kLceBlock);
  SplitTokenWalks(t, std::max<int64_t>(t.gradSums, 1));
  out.blockDim =
      uint32_t(std::min<int64_t>({t.tokenTasks * t.vocabSplits + t.vocabTasks, platform.cubeCores, kLceMaxGroups}));
  t.blockDim = int32_t(out.blockDim);
  return out;
}

LinearCrossEntropyTiling TileLinearCrossEntropy(const LinearCrossEntropyProblem& p, const CubePlatform& platform,
                                                int64_t l2Budget) {
  LinearCrossEntropyTiling out{};
  LinearCrossEntropyTilingData& t = out.data;
  const int64_t bytes = ElementBytes(p.dtype);
  t.tokens = p.tokens, t.hidden = p.hidden, t.vocab = p.vocab, t.vocabStart = p.vocabStart, t.softcap = p.softcap;
  t.hasBias = p.hasBias, t.hasClassWeight = p.hasClassWeight;
  t.kChunk = int32_t(platform.l0aBytes / 2 / (kLceBlock * bytes) / 16 * 16);
  t.segBlocks = int32_t(kGradSegmentBytes / (kLceBlock * kLceBlock * bytes));
  t.gemmChunk = int32_t(kLceBlock);
  t.gemmK = t.kChunk;
  const LceCubeBuffers cube = LceCubeBuffersOf(uint32_t(bytes), uint32_t(t.kChunk), uint32_t(t.segBlocks),
                                               uint32_t(t.gemmChunk), uint32_t(t.gemmK), p.backward);
  const int64_t ub = LceVectorBuffersOf().Total();
  std::string where = cube.L1() > platform.l1Bytes - 256 ? "L1"
                      : 2 * cube.l0a > platform.l0aBytes ? "L0A"
                      : 2 * cube.l0b > platform.l0bBytes ? "L0B"
                      : 2 * cube.l0c > platform.l0cBytes ? "L0C"
                      : ub > kA2UbBudget                 ? "UB"
                                                         : "";
  if (!where.empty())
    throw TilingError(std::string("the linear cross-entropy blocks in ") + DTypeName(p.dtype) + " do not fit " + where);
  // Nd2Nz reads rows of at most 65535 elements (A2's 16-bit srcDValue); the problem function says so first.
  if (p.hidden > 65535) throw TilingError("hidden size " + std::to_string(p.hidden) + " exceeds the cube's 65535");

  t.tokenTasks = CeilDiv(p.tokens, kLceBlock);
  t.vocabTasks = p.backward ? CeilDiv(p.vocab, kLceBlock) : 0;
  // an empty side leaves nothing to multiply: the backward's outputs are zeros (the binding fills them)
  const int64_t tasks = p.tokens == 0 || p.vocab == 0 || p.hidden == 0 ? 0 : t.tokenTasks + t.vocabTasks;
  t.scoreSlots = int32_t(p.backward ? kLceScoreSlots : kLceForwardScoreSlots);
  t.scoreSlotBytes = AlignUp(kLceBlock * kLceBlock * 4, kWorkspaceAlign);
  t.gradOffset = t.scoreSlots * t.scoreSlotBytes;
  t.gradSlotBytes = p.backward ? AlignUp(kLceBlock * t.segBlocks * kLceBlock * bytes, kWorkspaceAlign) : 0;
  t.accOffset = t.gradOffset + kLceGradSlots * t.gradSlotBytes;
  t.workspacePerGroup = t.accOffset + (p.backward ? AlignUp(kLceBlock * p.hidden * 4, kWorkspaceAlign) : 0);
  // the backward: every task walking all of its moving operand, in one launch or (BackwardLaunchRows) several
  t.vocabBegin = 0, t.vocabEnd = p.vocab, t.vocabSplits = 1, t.splitBlocks = CeilDiv(p.vocab, kLceBlock);
  t.launches = 1, t.launchRows = p.vocab;
  out.blockDim = uint32_t(std::min<int64_t>({tasks, platform.cubeCores, kLceMaxGroups}));
  t.blockDim = int32_t(out.blockDim);
  out.workspaceBytes = int64_t(out.blockDim) * t.workspacePerGroup;
  if (tasks == 0) return out;
  if (p.backward) {
    t.launchRows = BackwardLaunchRows(p, l2Budget);
    t.launches = int32_t(CeilDiv(p.vocab, t.launchRows));
    t.vocabTasks = CeilDiv(t.launchRows, kLceBlock);
    // fp32 sums of grad_hidden, one [T, H] per split, when launches or splits share a token block's rows
    t.gradSums = int32_t(BackwardSplits(t, p.dtype, platform.cubeCores));
    if (t.launches == 1 && t.gradSums == 1) t.gradSums = 0;
    if (t.gradSums > 0) {
      const LinearCrossEntropyTiling widest = TileLinearCrossEntropyLaunch(out, 0, platform);
      t.partialOffset = AlignUp(int64_t(widest.blockDim) * t.workspacePerGroup, kWorkspaceAlign);
      out.workspaceBytes = t.partialOffset + AlignUp(t.gradSums * p.tokens * p.hidden * 4, kWorkspaceAlign);
    }
    return TileLinearCrossEntropyLaunch(out, 0, platform);
  }
  t.launchRows = LaunchRows(p, out, l2Budget, platform.cubeCores);
  t.launches = int32_t(CeilDiv(p.vocab, t.launchRows));
  return TileLinearCrossEntropyLaunch(out, 0, platform);
}

}  // namespace tiling
