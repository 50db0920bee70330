// The AIC's half of the fused attention backward (attention_grad.cpp). Per step (query rows i, keys j):
//   Scores: S = Q_i K_j^T and dP = dy_i V_j^T (fp32) into the step's workspace slot, flag kSReady;
//   Parts:  once the AIVs flag kPReady (they recomputed P and formed dS = P * (dP - D)):
//     key tasks:   dv_j += P^T dy_i and dk_j += dS^T Q_i (P and dS from the workspace, transposed by the loads
//                  into L0A; fp32: P^T and dS^T),
//     query tasks: dq_i += dS K_j,
//   summed in L0C over the task's steps (the tiling's l0cSums) and Fixpipe'd once, after its last step, into
//   a result slot of the workspace once the AIVs have read the sums that used the slot last (kRFree), flag
//   kRReady: per step only S and dP pass Fixpipe. Without l0cSums (head dims past 256) every step's parts
//   go out so, each a "sum" of one step.
// The group's steps, its key tasks' then its query tasks', are one stream, as in the forward
// (attention_cube.h): Scores of step n + lead before the Parts of step n (lead kAttentionGradLead with two
// L1 buffers, else 0), so the AIVs find the next S and dP ready when they finish a step and the cube
// never waits for a dS it could not have yet, across tasks and passes too. K_j, V_j of a key task and
// Q_i, dy_i of a query task stay in L1 for the task's Scores. Where L1 holds it (the tiling's qdyRing), those
// take the task's tile and each step a tile of a ring of kAttentionGradRing from its Scores to its Parts (a key
// step's Q_i and dy_i, a query step's K_j and V_j), so the Parts read their operands from L1; else the Parts
// load their own again (Q_i and dy_i of a key step, K_j of a query step), double-buffered (eight buffers, the
// TPipe's MTE1 -> MTE2 hand-off ids), for one more read of those blocks per step.
// Q_i and dy_i serve as A (LoadData 2D) and as B (3Dv2) from one L1 tile each, K_j and V_j likewise.
#pragma once
#include "attention_grad_task.h"
#include "cube_matmul.h"
#include "kernel_utils.h"

template <typename T>
class AttentionGradCube {
 public:
  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR dy, GM_ADDR ws,
                              const AttentionGradTilingData& g) {
    g_ = &g;
    const AttentionTilingData& t = g.fwd;
    q_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(q));
    k_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(k));
    v_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(v));
    dy_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy));
    for (int64_t slot = 0; slot < kAttentionGradSlots; ++slot)
      ws_[slot].Init(ws + GetBlockIdx() * g.workspacePerGroup + slot * g.slotBytes, g);
    lead_ = t.l1Buffers > 1 ? kAttentionGradLead : 0;
    sums_ = g.l0cSums != 0;
    const uint32_t s1b = t.s1Block, s2b = t.s2Block, dp = g.dPitch, vp = t.vPitch, s1p = g.s1Pitch;
    const uint8_t n = uint8_t(t.l1Buffers);
    ring_ = g.qdyRing != 0;
    tileRows_ = Max(s1b, s2b);
    if (ring_) {  // Q then dy, or K then V, per tile; a tile's reads into L0 done, by its parity
      pipe_.InitBuffer(ringL1_, uint32_t(kAttentionGradRing) * tileRows_ * (dp + vp) * sizeof(T));
      pipe_.InitBuffer(taskL1_, 1, tileRows_ * (dp + vp) * sizeof(T));
      for (TEventID& e : readEvt_) e = pipe_.AllocEventID<HardEvent::MTE1_MTE2>();
    } else {
      pipe_.InitBuffer(qL1_, n, s1b * dp * sizeof(T));
      pipe_.InitBuffer(dyL1_, n, s1b * vp * sizeof(T));
      pipe_.InitBuffer(kL1_, n, s2b * dp * sizeof(T));
      pipe_.InitBuffer(vL1_, 1, s2b * vp * sizeof(T));
    }
    pipe_.InitBuffer(partsL1_, 1, Max(2 * s2b * s1p, s1b * s2b) * sizeof(T));
    const uint32_t qk = t.qkChunk, rc = g.rowChunk, pv = t.pvChunk, big = Max(s1b, s2b);
    const AttentionGradL0c l0c = AttentionGradL0cBytes(s1b, s2b, dp, vp, sums_);
    mm_.Init(pipe_, Max(big * qk, Max(s2b * rc, s1b * pv)) * sizeof(T), Max(big * qk, Max(rc, pv) * dp) * sizeof(T),
             uint32_t(l0c.product), uint32_t(t.l0cBuffers));
    if (sums_) pipe_.InitBuffer(sumsL0c_, 1, uint32_t(l0c.sums));
  }

  // The group's key tasks, then its query tasks, as one stream of steps.
  __aicore__ inline void Process(AttentionTaskWalk& keys, AttentionTaskWalk& queries) {
    AttentionTask task;
    while (keys.Next(task)) {
      if (task.count == 0) continue;  // no query row keeps these keys: the AIVs write zeros
      KeyTask(task);
    }
    while (queries.Next(task)) {
      if (task.count == 0) continue;
      QueryTask(task);
    }
    while (parted_ < scored_) Parts();
    // the AIVs' last frees: every result read, nothing of this launch is left in flight
    for (int64_t n = flushed_ > kAttentionGradSlots ? flushed_ - kAttentionGradSlots : 0; n < flushed_; ++n)
      CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);
    if (ring_)
      for (uint32_t parity = 0; parity < 2; ++parity) {
        ReadWait(parity);
        pipe_.ReleaseEventID<HardEvent::MTE1_MTE2>(readEvt_[parity]);
      }
  }

 private:
  using Flags = AttentionGradFlags;
  // A step whose Scores are out and whose Parts are still to come: where its Parts' operands are.
  struct Pending {
    bool key, first, last;  // first / last: the task's first / last step (its sums start / go out)
    uint32_t rows, cols;
    int64_t b, n, tok;  // key steps: Q_i, dy_i's head and first token; query steps: K_j's kv head and first key
    int64_t tile;       // with the ring: the step's tile (Q_i and dy_i, or K_j and V_j)
  };

  __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }

  // S and dP of the stream's next step into its slot (Q_i / dy_i and K_j / V_j in L1), flag kSReady. The
  // slot's previous S and dP (step scored_ - kAttentionGradSlots) are read: its Parts, done before this,
  // waited for its dS.
  __aicore__ inline void Scores(const LocalTensor<T>& q, const LocalTensor<T>& dy, const LocalTensor<T>& k,
                                const LocalTensor<T>& v, uint32_t rows, uint32_t cols) {
    const AttentionTilingData& t = g_->fwd;
    const AttentionGradWorkspace<T>& ws = ws_[scored_ % kAttentionGradSlots];
    LocalTensor<float> s = mm_.ABt(q, rows, k, cols, uint32_t(t.headDim), t.qkChunk);
    mm_.FixOut(ws.s, s, rows, cols, uint32_t(t.s2Block));
    LocalTensor<float> dp = mm_.ABt(dy, rows, v, cols, uint32_t(t.valueDim), t.qkChunk);
    mm_.FixOut(ws.dp, dp, rows, cols, uint32_t(t.s2Block));
    CrossCoreSetFlag<2, PIPE_FIX>(Flags::kSReady);
  }

  // The step just scored joins the stream; the oldest gets its Parts once lead_ steps are ahead of it.
  __aicore__ inline void Scored(const Pending& p) {
    pending_[scored_ % kAttentionGradSlots] = p;
    ++scored_;
    if (scored_ - parted_ > lead_) Parts();
  }

  // The Parts of the stream's oldest step without them: into the task's sums in L0C, out after its last step
  // (flag kRReady); without L0C sums each part goes out at once.
  __aicore__ inline void Parts() {
    const AttentionTilingData& t = g_->fwd;
    Pending& p = pending_[parted_ % kAttentionGradSlots];
    const AttentionGradWorkspace<T>& ws = ws_[parted_ % kAttentionGradSlots];
    const AttentionGradWorkspace<T>& out = ws_[flushed_ % kAttentionGradSlots];
    const uint32_t d = uint32_t(t.headDim), dv = uint32_t(t.valueDim), dp = uint32_t(g_->dPitch);
    const uint32_t vp = uint32_t(t.vPitch);
    if (sums_ && p.first) sumsC_ = sumsL0c_.template AllocTensor<float>();
    if (p.key) {
      LocalTensor<T> q, dy;
      if (ring_) RingTile(p.tile, q, dy);
      else LoadQueryRows(p.b, p.n, p.tok, p.rows, q, dy);
      CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kPReady);
      LocalTensor<T> parts = LoadKeyParts(ws, p.cols, p.rows);
      LocalTensor<T> pt = parts, dst = parts[uint32_t(t.s2Block) * uint32_t(g_->s1Pitch)];
      if (sums_) {  // dk [s2Block, dPitch] then dv in the sums' buffer
        const LocalTensor<float> dkSum = sumsC_, dvSum = sumsC_[uint32_t(t.s2Block) * dp];
        KeyPart(dvSum, pt, p.cols, dy, p.rows, dv, vp, p.first);
        KeyPart(dkSum, dst, p.cols, q, p.rows, d, dp, p.first);
        if (p.last) FlushSums(true, p.cols, out);
      } else {
        LocalTensor<float> dvPart = mm_.NewC();
        KeyPart(dvPart, pt, p.cols, dy, p.rows, dv, vp, true);
        WaitResultsFree();
        mm_.FixOut(out.r2, dvPart, p.cols, dv, vp);
        LocalTensor<float> dkPart = mm_.NewC();
        KeyPart(dkPart, dst, p.cols, q, p.rows, d, dp, true);
        mm_.FixOut(out.r1, dkPart, p.cols, d, dp);
        Flushed();
      }
      partsL1_.FreeTensor(parts);
      FreeRows(q, dy, p.tile);
    } else {
      const uint32_t pitch = (p.cols + 7) / 8 * 8;  // the AIVs' row pitch of dS (attention_grad_vector.h)
      LocalTensor<T> k, v;
      if (ring_) RingTile(p.tile, k, v);
      else
        k = mm_.Load(kL1_, k_[p.b * t.kStrideB + p.n * t.kStrideN + p.tok * t.kStrideS], p.cols, d,
                     uint32_t(t.kStrideS));
      CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kPReady);
      LocalTensor<T> ds = mm_.Load(partsL1_, ws.ds, p.rows, p.cols, pitch);
      if (sums_) {
        mm_.ABInto(sumsC_, ds, p.rows, k, p.cols, d, dp, t.pvChunk, p.first);
        if (p.last) FlushSums(false, p.rows, out);
      } else {
        LocalTensor<float> dqPart = mm_.AB(ds, p.rows, k, p.cols, d, dp, t.pvChunk);
        WaitResultsFree();
        mm_.FixOut(out.r1, dqPart, p.rows, d, dp);
        Flushed();
      }
      partsL1_.FreeTensor(ds);
      if (ring_) TileRead(p.tile);
      else kL1_.FreeTensor(k);
    }
    ++parted_;
  }

  // A task's sums out of L0C into the result slot `out` once it is free, then kRReady: a key task's dk and dv
  // of its `rows` keys, or a query task's dq of its rows.
  __aicore__ inline void FlushSums(bool key, uint32_t rows, const AttentionGradWorkspace<T>& out) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t dp = uint32_t(g_->dPitch);
    WaitResultsFree();
    sumsL0c_.EnQue(sumsC_);
    sumsC_ = sumsL0c_.template DeQue<float>();
    FixSum(out.r1, sumsC_, rows, uint32_t(t.headDim), dp);
    if (key) FixSum(out.r2, sumsC_[uint32_t(t.s2Block) * dp], rows, uint32_t(t.valueDim), uint32_t(t.vPitch));
    sumsL0c_.FreeTensor(sumsC_);
    Flushed();
  }

  // C [rows, n] of the sums' buffer (fp32 in L0C) -> GM at row pitch `pitch`.
  __aicore__ inline void FixSum(const GlobalTensor<float>& dst, const LocalTensor<float>& c, uint32_t rows, uint32_t n,
                                uint32_t pitch) {
    FixpipeParamsV220 fp;
    fp.nSize = uint16_t(n), fp.mSize = uint16_t(rows), fp.srcStride = uint16_t((rows + 15) / 16 * 16);
    fp.dstStride = pitch;
    fp.quantPre = QuantMode_t::NoQuant;
    Fixpipe<float, float, CFG_ROW_MAJOR>(dst, c, fp);
  }

  // A result slot was written: flag kRReady.
  __aicore__ inline void Flushed() {
    CrossCoreSetFlag<2, PIPE_FIX>(Flags::kRReady);
    ++flushed_;
  }

  // C (+)= X^T B of a key step: X its P or dS, B its dy or Q rows ([rows, n], row pitch nPitch in L1).
  __aicore__ inline void KeyPart(const LocalTensor<float>& c, const LocalTensor<T>& x, uint32_t cols,
                                 const LocalTensor<T>& b, uint32_t rows, uint32_t n, uint32_t nPitch, bool first) {
    if constexpr (kAttentionGradCubeTransposes<T>) mm_.AtBInto(c, x, cols, b, rows, n, nPitch, g_->rowChunk, first);
    else mm_.ABInto(c, x, cols, b, rows, n, nPitch, g_->rowChunk, first);
  }

  // A key step's P and dS [rows, cols] (row pitch Align8(cols) in the workspace; fp32: P^T and dS^T [cols, rows],
  // pitch s1Pitch) into one L1 tile, dS s2Block * s1Pitch elements after P (as mm_.Load lays out one): one buffer
  // for both keeps the AIC's eight L1 buffers (Q, dy, K two each, V, these) within the TPipe's 8 MTE1 -> MTE2
  // hand-off event ids.
  __aicore__ inline LocalTensor<T> LoadKeyParts(const AttentionGradWorkspace<T>& ws, uint32_t cols, uint32_t rows) {
    constexpr uint32_t c0 = 32 / sizeof(T);
    const bool asHeld = kAttentionGradCubeTransposes<T>;
    const uint32_t n = asHeld ? rows : cols, d = asHeld ? cols : rows;
    const uint32_t pitch = asHeld ? (cols + 7) / 8 * 8 : uint32_t(g_->s1Pitch);
    LocalTensor<T> x = partsL1_.template AllocTensor<T>();
    const Nd2NzParams nz(1, uint16_t(n), uint16_t(d), 0, uint16_t(pitch), uint16_t((n + 15) / 16 * 16), 1,
                         uint16_t(n * c0));
    DataCopy(x, ws.p, nz);
    DataCopy(x[uint32_t(g_->fwd.s2Block) * uint32_t(g_->s1Pitch)], ws.ds, nz);
    partsL1_.EnQue(x);
    return partsL1_.template DeQue<T>();
  }

  // The slot's results of sums flushed_ - kAttentionGradSlots are read once the AIVs flag it.
  __aicore__ inline void WaitResultsFree() {
    if (flushed_ >= kAttentionGradSlots) CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);
  }

  // query (token) rows [row, row + rows) of batch b, head n into L1: q and dy, both walks' left operands.
  __aicore__ inline void LoadQueryRows(int64_t b, int64_t n, int64_t row, uint32_t rows, LocalTensor<T>& q,
                                       LocalTensor<T>& dy) {
    const AttentionTilingData& t = g_->fwd;
    q = mm_.Load(qL1_, q_[b * t.qStrideB + n * t.qStrideN + row * t.qStrideS], rows, uint32_t(t.headDim),
                 uint32_t(t.qStrideS));
    dy = mm_.Load(dyL1_, dy_[b * t.oStrideB + n * t.oStrideN + row * t.oStrideS], rows, uint32_t(t.valueDim),
                  uint32_t(t.oStrideS));
  }

  // Tile `tile`'s slot of the ring: its Q then its dy (a key step), or its K then its V (a query step).
  __aicore__ inline void RingTile(int64_t tile, LocalTensor<T>& a, LocalTensor<T>& b) {
    const uint32_t size = tileRows_ * uint32_t(g_->dPitch + g_->fwd.vPitch);
    a = ringL1_.Get<T>()[uint32_t(tile % kAttentionGradRing) * size];
    b = a[tileRows_ * uint32_t(g_->dPitch)];
  }

  // rows x cols of src (row pitch `pitch`) into the Nz tile x of Align16(rows) rows.
  __aicore__ inline void CopyRows(const LocalTensor<T>& x, const GlobalTensor<T>& src, uint32_t rows, uint32_t cols,
                                  int64_t pitch) {
    constexpr uint32_t c0 = 32 / sizeof(T);
    DataCopy(x, src,
             Nd2NzParams(1, uint16_t(rows), uint16_t(cols), 0, uint16_t(pitch), uint16_t((rows + 15) / 16 * 16), 1,
                         uint16_t(rows * c0)));
  }

  // With the ring: rows [row, row + rows) of a (head dim wide, pitch aPitch) and of b (Dv wide) into the task's tile
  // (`ring` false: a query task's Q and dy, a key task's K and V) or the ring's next tile (a step's), returned.
  __aicore__ inline int64_t TileRows(const GlobalTensor<T>& a, int64_t aPitch, const GlobalTensor<T>& b, int64_t bPitch,
                                     uint32_t rows, bool ring, LocalTensor<T>& x, LocalTensor<T>& y) {
    int64_t tile = -1;
    if (ring) {
      tile = tiles_++;
      RingTile(tile, x, y);
      ReadWait(uint32_t(tile % 2));
    } else {
      x = taskL1_.template AllocTensor<T>();
      y = x[tileRows_ * uint32_t(g_->dPitch)];
    }
    CopyRows(x, a, rows, uint32_t(g_->fwd.headDim), aPitch);
    CopyRows(y, b, rows, uint32_t(g_->fwd.valueDim), bPitch);
    if (ring) {
      SyncPipes<HardEvent::MTE2_MTE1>();  // the loads into L0 wait for these
    } else {
      taskL1_.EnQue(x);
      x = taskL1_.template DeQue<T>();
      y = x[tileRows_ * uint32_t(g_->dPitch)];
    }
    return tile;
  }

  // The flag of the newest tile of this parity read into L0 (if set and not yet waited for) waited for. Tiles' last
  // reads are issued in stream order, so when tile u is loaded the read of tile u - kAttentionGradRing (same
  // parity) has its flag set: this wait, or an earlier one, covers it.
  __aicore__ inline void ReadWait(uint32_t parity) {
    if (readSet_[parity]) WaitFlag<HardEvent::MTE1_MTE2>(readEvt_[parity]);
    readSet_[parity] = false;
  }

  // Query rows [row, row + rows) of batch b, head n: into the ring's next tile (`ring`: a key step's) or the task's
  // tile (a query task's), or without the ring the Q / dy queues.
  __aicore__ inline int64_t QueryRows(int64_t b, int64_t n, int64_t row, uint32_t rows, bool ring, LocalTensor<T>& q,
                                      LocalTensor<T>& dy) {
    const AttentionTilingData& t = g_->fwd;
    if (ring_)
      return TileRows(q_[b * t.qStrideB + n * t.qStrideN + row * t.qStrideS], t.qStrideS,
                      dy_[b * t.oStrideB + n * t.oStrideN + row * t.oStrideS], t.oStrideS, rows, ring, q, dy);
    LoadQueryRows(b, n, row, rows, q, dy);
    return -1;
  }

  // A ring tile's last reads into L0 are issued: its flag (its parity's) is set.
  __aicore__ inline void TileRead(int64_t tile) {
    const uint32_t parity = uint32_t(tile % 2);
    ReadWait(parity);
    SetFlag<HardEvent::MTE1_MTE2>(readEvt_[parity]);
    readSet_[parity] = true;
  }

  // Q and dy's last reads into L0 are issued: the ring tile's flag set, the task's tile or queue buffers freed.
  __aicore__ inline void FreeRows(LocalTensor<T>& q, LocalTensor<T>& dy, int64_t tile) {
    if (!ring_) {
      qL1_.FreeTensor(q);
      dyL1_.FreeTensor(dy);
    } else if (tile < 0) {
      taskL1_.FreeTensor(q);
    } else {
      TileRead(tile);
    }
  }

  // key (token) rows [j, j + cols) of batch b, kv head n into L1: k and v, into the ring's next tile (`ring`: a query
  // step's) or the task's tile (a key task's), or without the ring the K / V queues.
  __aicore__ inline int64_t KeyRows(int64_t b, int64_t n, int64_t j, uint32_t cols, bool ring, LocalTensor<T>& k,
                                    LocalTensor<T>& v) {
    const AttentionTilingData& t = g_->fwd;
    const GlobalTensor<T> kRows = k_[b * t.kStrideB + n * t.kStrideN + j * t.kStrideS];
    const GlobalTensor<T> vRows = v_[b * t.vStrideB + n * t.vStrideN + j * t.vStrideS];
    if (ring_) return TileRows(kRows, t.kStrideS, vRows, t.vStrideS, cols, ring, k, v);
    k = mm_.Load(kL1_, kRows, cols, uint32_t(t.headDim), uint32_t(t.kStrideS));
    v = mm_.Load(vL1_, vRows, cols, uint32_t(t.valueDim), uint32_t(t.vStrideS));
    return -1;
  }

  // K and V of a key task, or of a query step without the ring, read for the last time.
  __aicore__ inline void FreeKeys(LocalTensor<T>& k, LocalTensor<T>& v) {
    if (ring_) {
      taskL1_.FreeTensor(k);
      return;
    }
    kL1_.FreeTensor(k);
    vL1_.FreeTensor(v);
  }

  // dk / dv of keys [j0, j0 + cols) of kv head n over every query head of its group and the S1 blocks
  // whose rows keep them.
  __aicore__ inline void KeyTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t cols = uint32_t(task.rows);
    LocalTensor<T> k, v;
    KeyRows(task.b, task.n, task.kTok0 + task.i0, cols, false, k, v);
    const int64_t group = t.heads / t.kvHeads, end = (task.n + 1) * group;
    for (int64_t n = task.n * group; n < end; ++n) {
      for (int64_t blk = task.first; blk < task.first + task.count; ++blk) {
        const int64_t i0 = blk * t.s1Block;
        const uint32_t rows = uint32_t(task.s1 - i0 < t.s1Block ? task.s1 - i0 : t.s1Block);
        LocalTensor<T> q, dy;
        const int64_t tile = QueryRows(task.b, n, task.qTok0 + i0, rows, true, q, dy);
        Scores(q, dy, k, v, rows, cols);
        if (!ring_) FreeRows(q, dy, tile);  // the ring's tile stays for the Parts
        if (n + 1 == end && blk + 1 == task.first + task.count) FreeKeys(k, v);  // the task's last Scores
        Scored(Pending{true, n == task.n * group && blk == task.first,
                       n + 1 == end && blk + 1 == task.first + task.count, rows, cols, task.b, n, task.qTok0 + i0,
                       tile});
      }
    }
  }

  // dq of query rows [i0, i0 + rows) of head n over the S2 blocks they keep.
  __aicore__ inline void QueryTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t rows = uint32_t(task.rows);
    const int64_t kvHead = task.n / (t.heads / t.kvHeads);
    LocalTensor<T> q, dy;
    const int64_t tile = QueryRows(task.b, task.n, task.qTok0 + task.i0, rows, false, q, dy);
    for (int64_t idx = 0; idx < task.count; ++idx) {
      const int64_t j0 = (task.first + idx) * t.s2Block;
      const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block);
      LocalTensor<T> k, v;
      const int64_t keys = KeyRows(task.b, kvHead, task.kTok0 + j0, cols, true, k, v);
      Scores(q, dy, k, v, rows, cols);
      if (!ring_) FreeKeys(k, v);  // the ring's tile stays for the Parts
      if (idx + 1 == task.count) FreeRows(q, dy, tile);  // the task's last Scores: Q, dy are done
      Scored(Pending{false, idx == 0, idx + 1 == task.count, rows, cols, task.b, kvHead, task.kTok0 + j0, keys});
    }
  }

  const AttentionGradTilingData* g_ = nullptr;
  GlobalTensor<T> q_, k_, v_, dy_;
  AttentionGradWorkspace<T> ws_[kAttentionGradSlots];
  Pending pending_[kAttentionGradSlots];
  int64_t scored_ = 0, parted_ = 0;  // the group's steps so far whose Scores / Parts are out
  int64_t flushed_ = 0;              // sums written to result slots (slot flushed_ % kAttentionGradSlots next)
  int64_t lead_ = 0;
  bool sums_ = false;       // the tiling's l0cSums
  bool ring_ = false;       // the tiling's qdyRing
  uint32_t tileRows_ = 0;   // rows of a ring or task tile: the larger block's
  int64_t tiles_ = 0;       // ring tiles taken so far (tile u in slot u % kAttentionGradRing)
  TEventID readEvt_[2]{};   // MTE1 -> MTE2, by tile parity: a tile is read into L0
  bool readSet_[2]{};       // readEvt_ set and not yet waited for
  LocalTensor<float> sumsC_;  // the task's sums in L0C
  TPipe pipe_;
  CubeMatmul<T> mm_;
  TQue<TPosition::A1, 1> qL1_, dyL1_, partsL1_;  // partsL1_: P^T and dS^T, or dS
  TQue<TPosition::B1, 1> kL1_, vL1_;
  TQue<TPosition::A1, 1> taskL1_;  // qdyRing: the task's tile (a key task's K and V, a query task's Q and dy)
  TBuf<TPosition::A1> ringL1_;     // qdyRing: the steps' tiles
  TQue<TPosition::CO1, 1> sumsL0c_;
};
