// The fused attention kernel's tasks: (batch, query head, S1 block), task t done by core group
// t % blockDim, in the order the host tiling counts them (AttentionTaskBlocks): batches, then heads,
// then S1 blocks. Varlen (TND) batch lengths come from the int64 table after the tiling struct in GM.
#pragma once
#include "attention_blocks.h"
#include "attention_tiling_data.h"
#include "kernel_operator.h"

using namespace AscendC;

struct AttentionTask {
  int64_t b, n, i0, rows;  // batch, query head, first query row of the block and its rows
  int64_t s1, s2;          // the batch's query rows and keys
  int64_t qTok0, kTok0;    // the batch's first query / key token (TND; else 0)
  int64_t first, count;    // the S2 blocks the rows need (attention_blocks.h)
};

class AttentionTaskWalk {
 public:
  __aicore__ inline void Init(const AttentionTilingData& t, GM_ADDR tiling, int64_t group) {
    t_ = &t;
    next_ = group;
    if (t.varlen) {
      const int64_t batches = t.batch;
      cum_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(tiling + sizeof(AttentionTilingData)), 2 * batches);
    }
    b_ = -1;
    batchStart_ = 0, batchTasks_ = 0;
    qEnd_ = 0, kEnd_ = 0;
  }
  // The next task of this group; false once there is none.
  __aicore__ inline bool Next(AttentionTask& task) {
    const AttentionTilingData& t = *t_;
    if (next_ >= t.tasks) return false;
    while (next_ >= batchStart_ + batchTasks_) NextBatch();
    const int64_t perHead = (s1_ + t.s1Block - 1) / t.s1Block, local = next_ - batchStart_;
    task.b = b_, task.n = local / perHead;
    task.i0 = (local % perHead) * t.s1Block;
    task.rows = s1_ - task.i0 < t.s1Block ? s1_ - task.i0 : t.s1Block;
    task.s1 = s1_, task.s2 = s2_, task.qTok0 = qTok0_, task.kTok0 = kTok0_;
    AttentionS2Blocks(t, task.i0, task.i0 + task.rows, s1_, s2_, task.first, task.count);
    next_ += t.blockDim;
    return true;
  }

 private:
  __aicore__ inline void NextBatch() {
    const AttentionTilingData& t = *t_;
    batchStart_ += batchTasks_;
    ++b_;
    if (t.varlen) {
      qTok0_ = qEnd_, kTok0_ = kEnd_;
      qEnd_ = cum_.GetValue(b_), kEnd_ = cum_.GetValue(t.batch + b_);
      s1_ = qEnd_ - qTok0_, s2_ = kEnd_ - kTok0_;
    } else {
      qTok0_ = 0, kTok0_ = 0, s1_ = t.s1, s2_ = t.s2;
    }
    batchTasks_ = t.heads * ((s1_ + t.s1Block - 1) / t.s1Block);
  }

  const AttentionTilingData* t_ = nullptr;
  GlobalTensor<int64_t> cum_;
  int64_t next_ = 0, b_ = -1, batchStart_ = 0, batchTasks_ = 0;
  int64_t s1_ = 0, s2_ = 0, qTok0_ = 0, kTok0_ = 0, qEnd_ = 0, kEnd_ = 0;
};

// Cross-core flags of one group (mode 2: the AIC and its two AIVs). No Matmul object and no SyncAll
// here, so ids 1-4 are free (the library takes 0..2N-1, SyncAll 11-14).
namespace attention_flags {
constexpr uint16_t kSReady = 1;  // AIC -> AIVs: an S block is in its workspace slot
constexpr uint16_t kPReady = 2;  // AIVs -> AIC: both halves of P are in the workspace
constexpr uint16_t kOReady = 3;  // AIC -> AIVs: P V of the block is in the workspace
constexpr uint16_t kOFree = 4;   // AIVs -> AIC: both have read P V; its slot may be written again
}  // namespace attention_flags
