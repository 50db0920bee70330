// The fused attention kernels' tasks, in the order the host tilings count them: batches, then heads, then
// blocks. Query tasks (the forward, the backward's dq) are (batch, query head, S1 block) and walk the S2
// blocks their rows need; key tasks (the backward's dk / dv) are (batch, kv head, S2 block) and walk the S1
// blocks whose rows need their keys. Tasks are dealt to the core groups in rounds of blockDim (the forward:
// snake order, the backward: round-robin; AttentionTaskWalk::Init). Varlen (TND) batch lengths
// come from the int64 table the host writes after the tiling struct in GM.
#pragma once
#include "attention_blocks.h"
#include "attention_tiling_data.h"
#include "kernel_operator.h"

using namespace AscendC;

struct AttentionTask {
  int64_t b, n, i0, rows;  // batch, head, the block's first row and its rows (key tasks: kv head, keys)
  int64_t s1, s2;          // the batch's query rows and keys
  int64_t qTok0, kTok0;    // the batch's first query / key token (TND; else 0)
  int64_t first, count;    // the other side's blocks the task visits (attention_blocks.h)
  int64_t index;           // the task's place in its pass, as the tiling counts them
};

// The batch a walk is in, stepped as its task count passes each batch's end: the batch's query rows and keys and,
// for TND, its first tokens from the cumulative lengths in GM. Both walks below step batches with it.
class AttentionBatchCursor {
 public:
  __aicore__ inline void Init(const AttentionTilingData& t, GM_ADDR table) {
    if (t.varlen) cum_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(table), 2 * t.batch);
    b_ = -1, qEnd_ = 0, kEnd_ = 0;
  }
  __aicore__ inline void Next(const AttentionTilingData& t) {
    ++b_;
    if (t.varlen) {
      qTok0_ = qEnd_, kTok0_ = kEnd_;
      qEnd_ = cum_.GetValue(b_), kEnd_ = cum_.GetValue(t.batch + b_);
      s1_ = qEnd_ - qTok0_, s2_ = kEnd_ - kTok0_;
    } else {
      qTok0_ = 0, kTok0_ = 0, s1_ = t.s1, s2_ = t.s2;
    }
  }
  // The task's batch fields.
  __aicore__ inline void Fill(AttentionTask& task) const {
    task.b = b_, task.s1 = s1_, task.s2 = s2_, task.qTok0 = qTok0_, task.kTok0 = kTok0_;
  }
  __aicore__ inline int64_t S1() const { return s1_; }
  __aicore__ inline int64_t S2() const { return s2_; }

 private:
  GlobalTensor<int64_t> cum_;
  int64_t b_ = -1, s1_ = 0, s2_ = 0, qTok0_ = 0, kTok0_ = 0, qEnd_ = 0, kEnd_ = 0;
};

class AttentionTaskWalk {
 public:
  // `first`: the group's first task of the walk's `tasks`; `table`: TND's cumulative lengths in GM.
  // Round-robin: the group takes every blockDim-th task from `first`. Snake (`first` is then the group):
  // round r of blockDim tasks is dealt forwards when r is even, backwards when odd, so a group that drew a
  // cheap task (a causal row block near the top) draws a dear one next.
  __aicore__ inline void Init(const AttentionTilingData& t, GM_ADDR table, int64_t first, int64_t tasks, bool keyTasks,
                              bool snake = false) {
    t_ = &t;
    next_ = first, tasks_ = tasks, keys_ = keyTasks;
    snake_ = snake, group_ = first, round_ = 0;
    batch_.Init(t, table);
    batchStart_ = 0, batchTasks_ = 0;
  }
  // The next task of this group; false once there is none.
  __aicore__ inline bool Next(AttentionTask& task) {
    const AttentionTilingData& t = *t_;
    if (next_ >= tasks_) return false;
    while (next_ >= batchStart_ + batchTasks_) NextBatch();
    const int64_t local = next_ - batchStart_, s1 = batch_.S1(), s2 = batch_.S2();
    batch_.Fill(task);
    task.index = next_;
    if (Stacked()) {  // the kv head's group, all query rows
      task.n = local * t.stackHeads, task.i0 = 0, task.rows = s1 * t.stackHeads;
      AttentionS2Blocks(t, 0, s1, s1, s2, task.first, task.count);
    } else {
      const int64_t block = keys_ ? t.s2Block : t.s1Block, len = keys_ ? s2 : s1;
      const int64_t perHead = (len + block - 1) / block;
      task.n = local / perHead;
      task.i0 = (local % perHead) * block;
      task.rows = len - task.i0 < block ? len - task.i0 : block;
      if (keys_) AttentionS1Blocks(t, task.i0, task.i0 + task.rows, s1, s2, task.first, task.count);
      else AttentionS2Blocks(t, task.i0, task.i0 + task.rows, s1, s2, task.first, task.count);
    }
    ++round_;
    next_ = !snake_ ? next_ + t.blockDim : round_ * t.blockDim + (round_ % 2 ? t.blockDim - 1 - group_ : group_);
    return true;
  }

 private:
  __aicore__ inline void NextBatch() {
    const AttentionTilingData& t = *t_;
    batchStart_ += batchTasks_;
    batch_.Next(t);
    batchTasks_ = keys_       ? t.kvHeads * ((batch_.S2() + t.s2Block - 1) / t.s2Block)
                  : Stacked() ? t.kvHeads
                              : t.heads * ((batch_.S1() + t.s1Block - 1) / t.s1Block);
  }

  __aicore__ inline bool Stacked() const { return !keys_ && t_->stackHeads > 1; }

  const AttentionTilingData* t_ = nullptr;
  AttentionBatchCursor batch_;
  int64_t next_ = 0, tasks_ = 0, batchStart_ = 0, batchTasks_ = 0;
  bool keys_ = false, snake_ = false;
  int64_t group_ = 0, round_ = 0;
};

// The forward's query tasks in bundles of groupHeads heads of one kv group (tiling/attention_tiling_data.h):
// bundle (batch, head chunk, S1 block), in the order AttentionTaskWalk counts tasks with heads / groupHeads
// for heads, dealt in snake rounds of blockDim; its tasks, head by head, all to the same group. Lead(): the
// last task was its bundle's first (the one that brings K and V into L1).
class AttentionGroupWalk {
 public:
  __aicore__ inline void Init(const AttentionTilingData& t, GM_ADDR table, int64_t group) {
    t_ = &t;
    group_ = group, next_ = group, bundles_ = t.tasks / t.groupHeads, round_ = 0, head_ = t.groupHeads;
    batch_.Init(t, table);
    batchStart_ = 0, batchBundles_ = 0;
  }
  __aicore__ inline bool Next(AttentionTask& task) {
    const AttentionTilingData& t = *t_;
    if (head_ == t.groupHeads) {  // the next bundle
      if (next_ >= bundles_) return false;
      while (next_ >= batchStart_ + batchBundles_) NextBatch();
      const int64_t local = next_ - batchStart_, perHead = (batch_.S1() + t.s1Block - 1) / t.s1Block;
      n0_ = local / perHead * t.groupHeads, i0_ = local % perHead * t.s1Block, head_ = 0;
      ++round_;
      next_ = round_ * t.blockDim + (round_ % 2 ? t.blockDim - 1 - group_ : group_);
    }
    const int64_t s1 = batch_.S1();
    batch_.Fill(task);
    task.n = n0_ + head_, task.i0 = i0_;
    task.rows = s1 - i0_ < t.s1Block ? s1 - i0_ : t.s1Block;
    AttentionS2Blocks(t, task.i0, task.i0 + task.rows, s1, batch_.S2(), task.first, task.count);
    lead_ = head_ == 0;
    ++head_;
    return true;
  }
  __aicore__ inline bool Lead() const { return lead_; }

 private:
  __aicore__ inline void NextBatch() {
    const AttentionTilingData& t = *t_;
    batchStart_ += batchBundles_;
    batch_.Next(t);
    batchBundles_ = t.heads / t.groupHeads * ((batch_.S1() + t.s1Block - 1) / t.s1Block);
  }

  const AttentionTilingData* t_ = nullptr;
  AttentionBatchCursor batch_;
  int64_t group_ = 0, next_ = 0, bundles_ = 0, round_ = 0, head_ = 0, n0_ = 0, i0_ = 0;
  int64_t batchStart_ = 0, batchBundles_ = 0;
  bool lead_ = false;
};

// A run of a query task's rows [r, r + count) that lie one stride apart in GM: one head's consecutive
// query rows, or (stacked heads) one query row's consecutive heads. `head` and `row` are row r's.
struct AttentionRowRun {
  uint32_t count;
  int64_t head, row;
};

// The run of `task`'s rows that starts at r and ends by `end`.
__aicore__ inline AttentionRowRun AttentionRun(const AttentionTilingData& t, const AttentionTask& task, uint32_t r,
                                               uint32_t end) {
  if (t.stackHeads <= 1) return AttentionRowRun{end - r, task.n, task.i0 + r};
  const uint32_t g = uint32_t(t.stackHeads), last = (r / g + 1) * g;
  return AttentionRowRun{(last < end ? last : end) - r, task.n + r % g, int64_t(r / g)};
}

// Cross-core flags of one group (mode 2: the AIC and its two AIVs). No Matmul object and no SyncAll
// here, so ids 1-4 are free (the library takes 0..2N-1, SyncAll 11-14).
namespace attention_flags {
constexpr uint16_t kSReady = 1;  // AIC -> AIVs: an S block is in its workspace slot
constexpr uint16_t kPReady = 2;  // AIVs -> AIC: both halves of P are in the workspace
constexpr uint16_t kOReady = 3;  // AIC -> AIVs: P V of the block is in the workspace
constexpr uint16_t kOFree = 4;   // AIVs -> AIC: both have read P V; its slot may be written again
}  // namespace attention_flags
