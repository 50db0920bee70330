// CPU twin, the high-level Matmul's IterateAll as CANN's matmul library runs it on A2 (the Norm
// schedule of asc-devkit impl/adv_api/detail/matmul: scheduler/base/scheduler_norm.h ComputeMultiIter,
// resource/l0_buffer/tbuf_pool_l0_base.h, resource/cube_out_buffer/cube_out_buffer_no_unit_flag.h,
// stage/compute/mmad_compute.h, stage/copy_cube_out/copy_cube_out_utils.h; the two M_MTE1 events
// TPipe sets for it on the AIC: impl/basic_api/kernel_tpipe_impl.h). Per base block of C (baseM x
// baseN; along M first for iterateOrder 0, along N first for 1):
//   CO1 AllocTensor (waits FIX -> M of the buffer's last Fixpipe)
//   with a bias (isBias; scheduler/bias/bias_scheduler_v220.h, copy_bias_in_v220.h, load_bias_to_c2.h,
//   resource/bias_buffer/c2_buffer/c2_buffer.h): C1 AllocTensor, DataCopy ND2NZ of the block's baseN
//   bias (MTE2), EnQue/DeQue (MTE2 -> MTE1); WaitFlag<M_MTE1>(2), DataCopy L1 -> bias table (MTE1),
//   Set/WaitFlag<MTE1_M>(2), C1 FreeTensor; the first K step's Mmad starts C from the table, then
//   SetFlag<M_MTE1>(2) frees it
//   per K step of baseK (k_loop_norm.h: kIter = ceil(K / baseK), each load one base block):
//     A's base block (baseM x baseK) and B's (baseK x baseN) into L1 unless cached (the Norm
//       CubeInBuffer, resource/cube_in_buffer/cube_in_buffer_normal.h, copy_cube_in_norm.h): depth
//       base blocks per operand; iteration indices below depth - 2 (all of them when the whole K
//       fits) load once into a cache buffer and stay until the operand is reset, the rest go through
//       two rotating buffers (depth of them when depth <= 2): AllocTensor, DataCopy ND2NZ (MTE2),
//       EnQue/DeQue (MTE2 -> MTE1), FreeTensor after the step's Mmad (ClearLoadData)
//     WaitFlag<M_MTE1>(ping), LoadData L1 -> the L0A/L0B half `ping` (MTE1), Set/WaitFlag<MTE1_M>(ping)
//     Mmad into L0C (M), fresh on the first K step; PipeBarrier<PIPE_M> when (m/16)*(n/16) < 10
//     SetFlag<M_MTE1>(ping); ping flips when dbL0A and dbL0B are both 2
//   CO1 EnQue/DeQue (M -> FIX), Fixpipe NZ2ND to GM (FIX), FreeTensor (FIX -> M)
//   A's cache resets when the block's N step ends, B's when the M loop ends (iterateOrder 0; the
//   other way round for 1: scheduler_norm_base.h MoveOnIterateOrderM/N), both at SetTensorA/B
// Every call is the basic API's (twin_cube_basic.h) with CubeExec::kTrace: checked and recorded with
// its spans, bytes untouched; the block's arithmetic is one GEMM (`compute`, Matmul's RunGemm), run
// right after the last Mmad is recorded so the host profile times it as Mmad's.
// Simplifications: the first Mmad takes the table through Mmad's bias overload (the library sets
// cmatrixSource on it, one instruction either way); a cached block's hand-off is a bare MTE2 -> MTE1
// flag pair (the library EnQues/DeQues the cache queue per block); the L1 -> L0 moves (LoadA/LoadB,
// stage/split/load_to_l0{a,b}/load_to_l0{a,b}_loadInstr.h) take the L1 shape in the LoadData 3Dv2
// parameters, where the library writes it once per K step into the FMATRIX register
// (Load3DSetFMatrixCal / Load3DSetFMatrixBCal) and issues the V2Pro form: the same instruction.
#pragma once
#include <algorithm>
#include <string>

#include "cube_tiling.h"
#include "twin_cube_basic.h"
#include "twin_cube_load3d.h"
#include "twin_sync.h"
#include "twin_tensor.h"

namespace AscendC {
namespace twin {

// One operand's ND matrix in GM as IterateAll reads it: `rows` x `cols` with row pitch `ld`.
template <typename T>
struct CubeNd {
  GlobalTensor<T> gm;
  int64_t ld = 0;
  bool trans = false;  // stored transposed: rows run along K for A, along N for B
};

template <typename SrcA, typename SrcB, typename Dst, typename BiasT = float>
class CubeIterate {
  // A2's bias dtypes (half, float); another BIAS_TYPE (the default C_TYPE) can never run SetBias.
  static constexpr bool kBiasType = std::is_same_v<BiasT, half> || std::is_same_v<BiasT, float>;
  static constexpr uint32_t kC0 = kBlockBytes / sizeof(SrcA);  // elements per 32 B (K0 of a fractal)
  static constexpr bool kB32 = sizeof(SrcA) == 4;

 public:
  // The buffers CANN's matmul carves from the kernel's TPipe, and TPipe's M_MTE1 events 0/1.
  void Init(const TCubeTiling& t, TPipe* pipe) {
    if (pipe == nullptr) Violation("cube order", "Matmul Init without a TPipe (REGIST_MATMUL_OBJ passes the kernel's)");
    t_ = t;
    kIter_ = std::max(1, int32_t(CeilDiv(t.singleCoreK, t.baseK)));
    a1_.Init(pipe, uint32_t(t.baseM * t.baseK) * sizeof(SrcA), t.depthA1, kIter_ * t.stepM);
    b1_.Init(pipe, uint32_t(t.baseK * t.baseN) * sizeof(SrcB), t.depthB1, kIter_ * t.stepN);
    pipe->InitBuffer(l0a_, kL0aBytes);
    pipe->InitBuffer(l0b_, kL0bBytes);
    pipe->InitBuffer(co1_, uint8_t(t.dbL0C == 2 ? 2 : 1), uint32_t(t.baseM * t.baseN) * sizeof(float));
    l0Db_ = t.dbL0A == 2 && t.dbL0B == 2;
    // TPipe on 2201 also sets M_MTE1 event 2 "for load Bias"; the twin takes it with isBias only.
    events_ = t.isBias ? 3 : 2;
    for (int i = 0; i < events_; ++i) mte1Evt_[i] = pipe->AllocEventID<HardEvent::M_MTE1>();
    if (t.isBias) {
      pipe->InitBuffer(c1_, 1, uint32_t(t.baseN) * sizeof(BiasT));
      pipe->InitBuffer(bt_, kBtBytes);
    }
    pipe_ = pipe;
    Arm();
  }
  // The M_MTE1 events TPipe sets at its start and waits at Destroy (here: End or destruction).
  void Arm() {
    if (armed_ || pipe_ == nullptr) return;
    for (int i = 0; i < events_; ++i) SetFlag<HardEvent::M_MTE1>(mte1Evt_[i]);
    armed_ = true;
  }
  void Disarm() {
    if (!armed_) return;
    for (int i = 0; i < events_; ++i) WaitFlag<HardEvent::M_MTE1>(mte1Evt_[i]);
    armed_ = false;
  }
  ~CubeIterate() {
    DeferErrors hold;  // a destructor must not throw
    Disarm();
  }

  // C[m, n] (row pitch ldc) = [bias[0, n) +] A[m, k] x B[k, n]: the block's instruction stream, and
  // `compute` for the bytes (also when there is nothing to issue: k 0 writes zeros, or the bias).
  template <class Compute>
  void Run(const CubeNd<SrcA>& a, const CubeNd<SrcB>& b, const GlobalTensor<Dst>& c, int64_t ldc, int32_t m, int32_t n,
           int32_t k, const GlobalTensor<BiasT>* bias, Compute compute) {
    if (m <= 0 || n <= 0 || k <= 0) return compute();
    Arm();
    const int32_t mBlocks = CeilDiv(m, t_.baseM), nBlocks = CeilDiv(n, t_.baseN), kSteps = CeilDiv(k, t_.baseK);
    const bool mFirst = t_.iterateOrder == 0;
    const int32_t outer = mFirst ? nBlocks : mBlocks, inner = mFirst ? mBlocks : nBlocks;
    for (int32_t o = 0; o < outer; ++o) {
      for (int32_t i = 0; i < inner; ++i) {
        const int32_t mb = mFirst ? i : o, nb = mFirst ? o : i;
        const int32_t curM = std::min(t_.baseM, m - mb * t_.baseM), curN = std::min(t_.baseN, n - nb * t_.baseN);
        LocalTensor<float> acc = co1_.template AllocTensor<float>();
        LocalTensor<float> table;
        if constexpr (kBiasType)
          if (bias != nullptr) table = LoadBias(*bias, nb * t_.baseN, curN);
        for (int32_t kb = 0; kb < kSteps; ++kb) {
          const int32_t curK = std::min(t_.baseK, k - kb * t_.baseK);
          // copy_cube_in_norm.h GetIterIndex: K step within the operand's step of M (A) / N (B) blocks
          const int32_t aIdx = mFirst ? kb : ((mb % t_.stepM) * kIter_ + kb) % (t_.stepM * kIter_);
          const int32_t bIdx = mFirst ? (kb + (nb % t_.stepN) * kIter_) % (t_.stepN * kIter_) : kb;
          const LocalTensor<SrcA> a1 = Tile(a1_, aIdx, a, {t_.baseM, mb, m}, {t_.baseK, kb, k}, aRows_);
          const LocalTensor<SrcB> b1 = Tile(b1_, bIdx, b, {t_.baseK, kb, k}, {t_.baseN, nb, n}, bRows_);
          WaitFlag<HardEvent::M_MTE1>(mte1Evt_[ping_]);
          LocalTensor<SrcA> a2 = l0a_.template Get<SrcA>();
          LocalTensor<SrcB> b2 = l0b_.template Get<SrcB>();
          if (ping_) a2 = a2[kL0aBytes / 2 / sizeof(SrcA)], b2 = b2[kL0bBytes / 2 / sizeof(SrcB)];
          const bool align16 = kB32 && a.trans;  // mmad_compute.h: kDirectionAlign for a transposed fp32 A
          LoadA(a2, a1, a.trans, curM, curK);
          LoadB(b2, b1, b.trans, curK, curN);
          SetFlag<HardEvent::MTE1_M>(ping_);
          WaitFlag<HardEvent::MTE1_M>(ping_);
          MmadParams mp;
          mp.m = uint16_t(curM), mp.n = uint16_t(curN), mp.k = uint16_t(curK);
          mp.cmatrixInitVal = kb == 0;
          mp.kDirectionAlign = align16;
          if (bias != nullptr && kb == 0) Mmad(acc, a2, b2, table, mp, CubeExec::kTrace);
          else Mmad(acc, a2, b2, mp, CubeExec::kTrace);
          if (bias != nullptr && kb == 0) SetFlag<HardEvent::M_MTE1>(mte1Evt_[2]);  // the table is free again
          if (o == outer - 1 && i == inner - 1 && kb == kSteps - 1) compute();  // the stream checked up to here
          if ((curM / kCube) * (curN / kCube) < 10) PipeBarrier<PIPE_M>();  // mmad_compute.h
          SetFlag<HardEvent::M_MTE1>(mte1Evt_[ping_]);
          if (l0Db_) ping_ ^= 1;
          a1_.Clear(aIdx, a1);  // ClearLoadData
          b1_.Clear(bIdx, b1);
        }
        co1_.EnQue(acc);
        acc = co1_.template DeQue<float>();
        FixpipeParamsV220 fp;
        fp.nSize = uint16_t(curN), fp.mSize = uint16_t(curM);
        fp.srcStride = uint16_t(CeilDiv(curM, kCube) * kCube), fp.dstStride = uint32_t(ldc);
        fp.quantPre = std::is_same_v<Dst, half>         ? QuantMode_t::F322F16
                      : std::is_same_v<Dst, bfloat16_t> ? QuantMode_t::F322BF16
                                                        : QuantMode_t::NoQuant;
        Fixpipe<Dst, float, CFG_ROW_MAJOR>(c[uint64_t(mb) * t_.baseM * ldc + uint64_t(nb) * t_.baseN], acc, fp,
                                           CubeExec::kTrace);
        co1_.FreeTensor(acc);
        if (mFirst) a1_.Reset();  // the block's N step is over: its A goes
        else b1_.Reset();
      }
      if (mFirst) b1_.Reset();  // the M loop is over: its B goes
      else a1_.Reset();
    }
    a1_.Reset();  // SetTensorA/B's CubeInBuffer Reset; no-ops when the loops already reset
    b1_.Reset();
  }

 private:
  // The bias of columns [col, col + n) into the bias table by way of a C1 buffer.
  LocalTensor<float> LoadBias(const GlobalTensor<BiasT>& bias, int64_t col, int32_t n) {
    LocalTensor<BiasT> c1 = c1_.template AllocTensor<BiasT>();
    DataCopy(c1, bias[uint64_t(col)], Nd2NzParams(1, 1, uint16_t(n), 0, uint16_t(n), 1, 1, 0), CubeExec::kTrace);
    c1_.EnQue(c1);
    c1 = c1_.template DeQue<BiasT>();
    WaitFlag<HardEvent::M_MTE1>(mte1Evt_[2]);
    LocalTensor<float> table = bt_.template Get<float>();
    DataCopyParams p(1, uint16_t(CeilDiv(uint32_t(n) * sizeof(BiasT), 64u)), 0, 0);  // 64-byte units
    DataCopy(table, c1, p, CubeExec::kTrace);
    SetFlag<HardEvent::MTE1_M>(2);
    WaitFlag<HardEvent::MTE1_M>(2);
    c1_.FreeTensor(c1);
    return table;
  }

  // One operand's L1 as the Norm CubeInBuffer keeps it (cube_in_buffer_normal.h): `depth` base
  // blocks; iteration indices below cacheSize load once into one cache buffer (kept to Reset), the
  // others go through `rotating` buffers freed after their K step.
  template <typename T, TPosition kPos>
  struct NormL1 {
    TQue<kPos, 1> rot, cache;
    LocalTensor<T> head;
    uint32_t blockElems = 0;
    int32_t cacheSize = 0, cacheProc = 0;
    TEventID evt = 0;
    void Init(TPipe* pipe, uint32_t blockBytes, int32_t depth, int32_t fullLoad) {
      blockElems = blockBytes / sizeof(T);
      int32_t rotating = 0;
      if (depth > 2) cacheSize = depth < fullLoad ? depth - 2 : depth, rotating = depth < fullLoad ? 2 : 0;
      else if (depth < fullLoad || (fullLoad == 1 && depth == 2)) cacheSize = 0, rotating = depth;
      else cacheSize = depth;
      if (rotating > 0) pipe->InitBuffer(rot, uint8_t(rotating), blockBytes);
      if (cacheSize > 0) pipe->InitBuffer(cache, 1, uint32_t(cacheSize) * blockBytes);
      evt = pipe->AllocEventID<HardEvent::MTE2_MTE1>();
    }
    template <class Load>
    LocalTensor<T> Get(int32_t idx, Load load) {
      if (idx < cacheSize && idx < cacheProc) return head[uint64_t(idx) * blockElems];  // Hit
      if (idx >= cacheSize) {
        LocalTensor<T> t = rot.template AllocTensor<T>();
        load(t);  // MTE2
        rot.EnQue(t);
        return rot.template DeQue<T>();
      }
      if (cacheProc == 0) head = cache.template AllocTensor<T>();
      ++cacheProc;
      LocalTensor<T> t = head[uint64_t(idx) * blockElems];
      load(t);
      SetFlag<HardEvent::MTE2_MTE1>(evt);
      WaitFlag<HardEvent::MTE2_MTE1>(evt);
      return t;
    }
    void Clear(int32_t idx, LocalTensor<T> t) {
      if (idx >= cacheSize) rot.FreeTensor(t);
    }
    void Reset() {
      if (cacheProc > 0) cache.FreeTensor(head), cacheProc = 0;
    }
  };

  // GM rows [r0, r0 + rows) x cols [c0, c0 + cols) of an ND matrix into an L1 tile in Nz (C0 columns
  // per fractal column, ceil16(rows) rows per fractal column).
  template <typename T>
  static void CopyTile(const LocalTensor<T>& dst, const CubeNd<T>& src, int64_t r0, int64_t c0, int32_t rows,
                       int32_t cols) {
    const Nd2NzParams p(1, uint16_t(rows), uint16_t(cols), 0, uint16_t(src.ld),
                        uint16_t(CeilDiv(uint32_t(rows), kCube) * kCube), 1, 0);
    DataCopy(dst, src.gm[uint64_t(r0 * src.ld + c0)], p, CubeExec::kTrace);
  }
  // One axis of an operand's ND matrix in base blocks: the block's size, its index, the extent.
  struct TileAxis {
    int32_t base, block, extent;
    int32_t Start() const { return block * base; }
    int32_t Len() const { return std::min(base, extent - Start()); }
  };
  // The L1 base block of rows x cols (M x K for A, K x N for B), loaded unless cached; `rows16` gets
  // its stored row count, 16-aligned.
  template <typename T, class L1>
  static LocalTensor<T> Tile(L1& l1, int32_t idx, const CubeNd<T>& x, TileAxis rows, TileAxis cols, uint32_t& rows16) {
    rows16 = CeilDiv(x.trans ? cols.Len() : rows.Len(), kCube) * kCube;
    return l1.Get(idx, [&](LocalTensor<T>& t) {
      if (x.trans) CopyTile(t, x, cols.Start(), rows.Start(), cols.Len(), rows.Len());
      else CopyTile(t, x, rows.Start(), cols.Start(), rows.Len(), cols.Len());
    });
  }
  // A's base block into L0A as load_to_l0a_loadInstr.h does on A2: one LoadData 3Dv2 over the L1
  // tile (Nz, rows16 rows): M x K into Zz, or, stored transposed (K x M), with enTranspose; the K
  // extent is 16-aligned when transposing (K1 = 2 * ceil(K/16) groups for b32: kDirectionAlign).
  void LoadA(const LocalTensor<SrcA>& a2, const LocalTensor<SrcA>& a1, bool trans, uint32_t curM, uint32_t curK) {
    const uint32_t m16 = CeilDiv(curM, kCube) * kCube, k16 = CeilDiv(curK, kCube) * kCube;
    LoadData3DParamsV2<SrcA> p;
    p.l1H = 1, p.l1W = uint16_t(aRows_);
    if (trans) p.channelSize = uint16_t(m16), p.mExtension = uint16_t(k16), p.kExtension = uint16_t(m16);
    else p.channelSize = p.kExtension = uint16_t(CeilDiv(curK, kC0) * kC0), p.mExtension = uint16_t(m16);
    p.enTranspose = trans;
    LoadData(a2, a1, p, CubeExec::kTrace);
  }
  // B's base block into L0B (Zn) as load_to_l0b_loadInstr.h does on A2: stored K x N, one LoadData
  // 3Dv2 (L0B transposes each fractal); stored transposed (N x K, its fractals already Zn's), one
  // LoadData 2D over the tile's ceil(K/C0) x N/16 fractals, contiguous since the tile has N/16 row
  // blocks (the library loops over K or N only when its L1 N exceeds the block's).
  void LoadB(const LocalTensor<SrcB>& b2, const LocalTensor<SrcB>& b1, bool trans, uint32_t curK, uint32_t curN) {
    const uint32_t n1 = CeilDiv(curN, kCube);
    if (trans) {
      const uint32_t repeat = CeilDiv(curK, kBlockBytes / uint32_t(sizeof(SrcB))) * n1;
      if (repeat > 255) Violation("cube params", "LoadData 2D of B: " + std::to_string(repeat) + " fractals over 255");
      LoadData(b2, b1, LoadData2DParams(0, uint8_t(repeat), 1, 0, 0, false, 0), CubeExec::kTrace);
      return;
    }
    LoadData3DParamsV2<SrcB> p;
    p.l1H = 1, p.l1W = uint16_t(bRows_);
    p.channelSize = p.kExtension = uint16_t(n1 * kCube);
    p.mExtension = uint16_t(CeilDiv(curK, kCube) * kCube);
    p.fMatrixCtrl = true;  // A2 keeps B's feature-map shape in its own register (ifSupportFmatrixB)
    LoadData(b2, b1, p, CubeExec::kTrace);
  }

  TCubeTiling t_{};
  TPipe* pipe_ = nullptr;
  NormL1<SrcA, TPosition::A1> a1_;
  NormL1<SrcB, TPosition::B1> b1_;
  TBuf<TPosition::A2> l0a_;
  TBuf<TPosition::B2> l0b_;
  TQue<TPosition::CO1, 1> co1_;
  TQue<TPosition::C1, 1> c1_;  // the bias's base block in L1
  TBuf<TPosition::C2> bt_;  // the bias table
  uint32_t aRows_ = 0, bRows_ = 0;
  int32_t kIter_ = 1;
  int32_t mte1Evt_[3] = {0, 1, 2};
  int events_ = 2;  // M_MTE1 events set at the start: 3 with a bias
  uint32_t ping_ = 0;
  bool l0Db_ = false, armed_ = false;
};

}  // namespace twin
}  // namespace AscendC
