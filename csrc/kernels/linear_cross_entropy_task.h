// The fused linear cross-entropy kernels' tasks and hand-offs. A task is a fixed block of up to kLceBlock rows of
// one operand (hidden's tokens, or in the backward's dw tasks weight's vocab rows) that walks a range of the
// kLceBlock-row blocks of the other ("moving") operand: score block = fixed rows x moving rows^T over H. Forward
// token tasks take one vocabulary split of the launch's range (split-major: the groups at work at once share a
// split's weight rows); backward tasks every block. The backward groups a task's moving blocks into segments of
// segBlocks; a backward launch takes the vocabulary rows [vocabBegin, vocabEnd): its vocab tasks' and the range
// its token tasks walk. Forward tasks are dealt round-robin: group g takes g, g + blockDim, .... Backward tasks are of
// two lengths (a token task walks V / 128 blocks, a vocab task T / 128: 250 against 8 at 1024 x 32,000), and
// round-robin put a token task on top of a full share of vocab tasks (330 blocks on a group against 167 on average):
// they are dealt longest first, each to the group with the fewest blocks so far (the lowest index of equals), every
// core replaying the same deal (task index: vocab tasks first, then token tasks).
#pragma once
#include "kernel_operator.h"
#include "linear_cross_entropy_tiling_data.h"

using namespace AscendC;

struct LceTask {
  bool vocabRows;      // the fixed rows are weight's (the backward's dw), else hidden's
  int64_t row0, rows;  // the fixed rows
  int64_t moving;      // the moving operand's rows end here (vocabEnd, or T)
  int64_t first, count;  // the moving blocks [first, first + count) (absolute block indices)
  int64_t split;         // forward: the vocabulary split whose partial statistics the task writes
  __aicore__ inline int64_t Blocks() const { return count; }
};

class LceTaskWalk {
 public:
  __aicore__ inline void Init(const LinearCrossEntropyTilingData& t, int64_t group) {
    t_ = &t;
    group_ = group;
    next_ = t.vocabTasks > 0 ? 0 : group;
    for (int64_t g = 0; t.vocabTasks > 0 && g < t.blockDim; ++g) blocks_[g] = 0;
  }
  __aicore__ inline bool Next(LceTask& task) {
    const LinearCrossEntropyTilingData& t = *t_;
    if (t.vocabTasks > 0 && !DealNext()) return false;
    if (next_ >= t.vocabTasks + t.tokenTasks * t.vocabSplits) return false;
    task.vocabRows = next_ < t.vocabTasks;
    const int64_t index = task.vocabRows ? next_ : next_ - t.vocabTasks, total = task.vocabRows ? t.vocabEnd : t.tokens;
    const int64_t block = task.vocabRows ? index : index % t.tokenTasks;
    task.row0 = (task.vocabRows ? t.vocabBegin : 0) + block * kLceBlock;
    task.rows = total - task.row0 < kLceBlock ? total - task.row0 : kLceBlock;
    task.moving = task.vocabRows ? t.tokens : t.vocabEnd;
    task.split = task.vocabRows ? 0 : index / t.tokenTasks;
    const int64_t begin = task.vocabRows ? 0 : t.vocabBegin / kLceBlock + task.split * t.splitBlocks;
    const int64_t end = (task.moving + kLceBlock - 1) / kLceBlock, span = task.vocabRows ? end : t.splitBlocks;
    task.first = begin;
    task.count = end - begin < span ? (end > begin ? end - begin : 0) : span;
    if (t.vocabTasks == 0) next_ += t.blockDim;
    return true;
  }

 private:
  // Backward: deals tasks in longest-first order until one falls to this group; next_ is its index.
  __aicore__ inline bool DealNext() {
    const LinearCrossEntropyTilingData& t = *t_;
    // a token task walks one split of the launch's blocks (the last split's shorter length is not told apart)
    const int64_t tokenBlocks = t.splitBlocks, vocabBlocks = (t.tokens + kLceBlock - 1) / kLceBlock;
    const bool tokensFirst = tokenBlocks > vocabBlocks;
    const int64_t tokenCount = t.tokenTasks * t.vocabSplits, total = t.vocabTasks + tokenCount;
    while (dealt_ < total) {
      const int64_t firstKind = tokensFirst ? tokenCount : t.vocabTasks, p = dealt_++;
      const bool token = tokensFirst ? p < firstKind : p >= firstKind;
      const int64_t index =
          token ? t.vocabTasks + (tokensFirst ? p : p - firstKind) : (tokensFirst ? p - firstKind : p);
      int64_t least = 0;
      for (int64_t g = 1; g < t.blockDim; ++g)
        if (blocks_[g] < blocks_[least]) least = g;
      blocks_[least] += token ? tokenBlocks : vocabBlocks;
      if (least == group_) {
        next_ = index;
        return true;
      }
    }
    return false;
  }

  const LinearCrossEntropyTilingData* t_ = nullptr;
  int64_t group_ = 0, next_ = 0, dealt_ = 0;
  int64_t blocks_[kLceMaxGroups];  // backward: the blocks dealt to each group so far
};

// The moving rows [first, first + count) of block `b`.
__aicore__ inline int64_t LceBlockRows(const LceTask& task, int64_t b) {
  const int64_t first = b * kLceBlock;
  return task.moving - first < kLceBlock ? task.moving - first : kLceBlock;
}

// The backward's segment `s` of a task: its first moving block (absolute) and its block count.
__aicore__ inline void LceSegment(const LinearCrossEntropyTilingData& t, const LceTask& task, int64_t s,
                                  int64_t& firstBlock, int64_t& blocks) {
  firstBlock = task.first + s * t.segBlocks;
  const int64_t left = task.Blocks() - s * t.segBlocks;
  blocks = left < t.segBlocks ? left : t.segBlocks;
}

__aicore__ inline int64_t LceSegments(const LinearCrossEntropyTilingData& t, const LceTask& task) {
  return (task.Blocks() + t.segBlocks - 1) / t.segBlocks;
}

// Cross-core flags of one group (mode 2: the AIC and its two AIVs; ids clear of SyncAll's 11-14).
namespace lce_flags {
constexpr uint16_t kScoreReady = 1;  // AIC -> AIVs: a score block is in its slot
constexpr uint16_t kScoreFree = 2;   // AIVs -> AIC: both have loaded it; the slot may be written again
constexpr uint16_t kGradReady = 3;   // AIVs -> AIC: a segment's G is in its slot
constexpr uint16_t kGradFree = 4;    // AIC -> AIVs: the segment's G is in L1; its slot may be written again
constexpr uint16_t kAccReady = 5;    // AIC -> AIVs: a task's fp32 accumulator is complete
constexpr uint16_t kAccFree = 6;     // AIVs -> AIC: both have read it out; the next task may write it
}  // namespace lce_flags
