// The matrix products of the mix kernels (fused attention, fused linear cross-entropy) on the AIC, through the
// cube's basic API (as examples/cube_matmul_example.h), on operands already in L1 as Nz tiles of 16-aligned rows
// (Load):
//   ABt: C [m, n] = A [m, k] B [n, k]^T -- B's Nz fractals are already L0B's (one LoadData 2D per chunk);
//   AB:  C [m, n] = A [m, k] B [k, n]  -- B into L0B by LoadData 3Dv2, as the Matmul library loads it;
//   AtB: C [m, n] = A [k, m]^T B [k, n] -- as AB, A's fractals transposed on their way to L0A (16-bit only).
// k is taken in chunks that fit half of L0A / L0B (the queues hold two); C stays in L0C (fp32) until
// FixOut writes it to GM, so the caller can wait for its destination to be free in between. ABtInto / ABInto
// accumulate into a C of the caller's (NewC) when its k arrives in several L1 tiles.
#pragma once
#include "kernel_operator.h"

using namespace AscendC;

template <typename T>
class CubeMatmul {
  static constexpr uint32_t kC0 = 32 / sizeof(T);        // elements of a fractal row
  static constexpr uint32_t kFractal = 512 / sizeof(T);  // elements of a 16 x C0 fractal
  static constexpr uint32_t kSmallTile = 10;             // Mmad.md: (m/16)*(n/16) below it needs a barrier

 public:
  __aicore__ static inline uint32_t Align16(uint32_t x) { return (x + 15) / 16 * 16; }

  // l0cBuffers 2: the next product's Mmad runs while Fixpipe still reads the previous one out of L0C.
  __aicore__ inline void Init(TPipe& pipe, uint32_t l0aBytes, uint32_t l0bBytes, uint32_t l0cBytes,
                              uint32_t l0cBuffers = 1) {
    pipe.InitBuffer(l0a_, 2, l0aBytes);
    pipe.InitBuffer(l0b_, 2, l0bBytes);
    pipe.InitBuffer(co1_, uint8_t(l0cBuffers), l0cBytes);
  }

  // rows x cols of `src` (row pitch `pitch` elements) -> an Nz tile of Align16(rows) rows in `que`'s L1.
  template <class Que>
  __aicore__ inline LocalTensor<T> Load(Que& que, const GlobalTensor<T>& src, uint32_t rows, uint32_t cols,
                                        uint32_t pitch) {
    return Load(que, src, rows, cols, pitch, 1, 0);
  }

  // `runs` runs of rows x cols each, run k from src + k * runStride, stacked into one Nz tile of
  // Align16(runs * rows) rows (ND2NZ's ndNum: one copy).
  template <class Que>
  __aicore__ inline LocalTensor<T> Load(Que& que, const GlobalTensor<T>& src, uint32_t rows, uint32_t cols,
                                        uint32_t pitch, uint32_t runs, uint32_t runStride) {
    LocalTensor<T> x = que.template AllocTensor<T>();
    DataCopy(x, src,
             Nd2NzParams(uint16_t(runs), uint16_t(rows), uint16_t(cols), uint16_t(runStride), uint16_t(pitch),
                         uint16_t(Align16(runs * rows)), 1, uint16_t(rows * kC0)));
    que.EnQue(x);
    return que.template DeQue<T>();
  }

  __aicore__ inline LocalTensor<float> NewC() { return co1_.AllocTensor<float>(); }

  __aicore__ inline LocalTensor<float> ABt(const LocalTensor<T>& a1, uint32_t m, const LocalTensor<T>& b1, uint32_t n,
                                           uint32_t k, uint32_t chunk) {
    LocalTensor<float> c = NewC();
    ABtInto(c, a1, m, b1, n, k, chunk, true);
    return c;
  }

  // C (+)= A B^T; `first`: C starts at this product (else it adds to what C holds).
  __aicore__ inline void ABtInto(const LocalTensor<float>& c, const LocalTensor<T>& a1, uint32_t m,
                                 const LocalTensor<T>& b1, uint32_t n, uint32_t k, uint32_t chunk, bool first) {
    const uint32_t m16 = Align16(m), n1 = Align16(n) / 16;
    for (uint32_t k0 = 0; k0 < k; k0 += chunk) {
      const uint32_t kc = k - k0 < chunk ? k - k0 : chunk, kc1 = (kc + kC0 - 1) / kC0;
      LocalTensor<T> a2 = LoadA(a1, m16, k0, kc);
      // B's Nz fractal (row block nb, column block kb) is kb * N1 + nb: a chunk's are contiguous, already Zn
      LocalTensor<T> b2 = l0b_.AllocTensor<T>();
      LoadData(b2, b1, LoadData2DParams(uint16_t((k0 / kC0) * n1), uint8_t(kc1 * n1), 1, 0, 0, false, 0));
      l0b_.EnQue(b2);
      b2 = l0b_.DeQue<T>();
      Mmad(c, a2, b2, m16, n, kc, first && k0 == 0);
    }
  }

  // B: an Nz tile of Align16(k) rows and nPitch (16-aligned, >= n) columns.
  __aicore__ inline LocalTensor<float> AB(const LocalTensor<T>& a1, uint32_t m, const LocalTensor<T>& b1, uint32_t k,
                                          uint32_t n, uint32_t nPitch, uint32_t chunk) {
    LocalTensor<float> c = NewC();
    ABInto(c, a1, m, b1, k, n, nPitch, chunk, true);
    return c;
  }

  __aicore__ inline void ABInto(const LocalTensor<float>& c, const LocalTensor<T>& a1, uint32_t m,
                                const LocalTensor<T>& b1, uint32_t k, uint32_t n, uint32_t nPitch, uint32_t chunk,
                                bool first) {
    KBInto(c, a1, m, false, b1, k, n, nPitch, chunk, first);
  }

  // C (+)= A^T B: A an Nz tile of Align16(k) rows and m columns, B as ABInto's.
  __aicore__ inline void AtBInto(const LocalTensor<float>& c, const LocalTensor<T>& a1, uint32_t m,
                                 const LocalTensor<T>& b1, uint32_t k, uint32_t n, uint32_t nPitch, uint32_t chunk,
                                 bool first) {
    static_assert(sizeof(T) == 2, "LoadData 2D transposes 16-bit fractals only");
    KBInto(c, a1, m, true, b1, k, n, nPitch, chunk, first);
  }

  // C [rows, n] (fp32 in L0C) -> GM at row pitch `pitch`; frees C.
  __aicore__ inline void FixOut(const GlobalTensor<float>& dst, LocalTensor<float>& c, uint32_t rows, uint32_t n,
                                uint32_t pitch) {
    co1_.EnQue(c);
    c = co1_.DeQue<float>();
    FixpipeParamsV220 p;
    p.nSize = uint16_t(n), p.mSize = uint16_t(rows), p.srcStride = uint16_t(Align16(rows)), p.dstStride = pitch;
    p.quantPre = QuantMode_t::NoQuant;
    Fixpipe<float, float, CFG_ROW_MAJOR>(dst, c, p);
    co1_.FreeTensor(c);
  }

 private:
  // C (+)= A B or A^T B (`at`), B [k, n] into L0B by LoadData 3Dv2.
  __aicore__ inline void KBInto(const LocalTensor<float>& c, const LocalTensor<T>& a1, uint32_t m, bool at,
                                const LocalTensor<T>& b1, uint32_t k, uint32_t n, uint32_t nPitch, uint32_t chunk,
                                bool first) {
    const uint32_t m16 = Align16(m);
    for (uint32_t k0 = 0; k0 < k; k0 += chunk) {
      const uint32_t kc = k - k0 < chunk ? k - k0 : chunk;
      LocalTensor<T> a2 = at ? LoadAt(a1, m16, Align16(k), k0, kc) : LoadA(a1, m16, k0, kc);
      LocalTensor<T> b2 = l0b_.AllocTensor<T>();
      LoadData3DParamsV2<T> lp;  // B [k, n] as a feature map of Align16(k) pixels x nPitch channels
      lp.l1H = 1, lp.l1W = uint16_t(Align16(k)), lp.channelSize = uint16_t(nPitch);
      lp.kExtension = uint16_t(nPitch), lp.mExtension = uint16_t(Align16(kc)), lp.mStartPt = uint16_t(k0);
      lp.kStartPt = 0, lp.fMatrixCtrl = true;
      LoadData(b2, b1, lp);
      l0b_.EnQue(b2);
      b2 = l0b_.DeQue<T>();
      Mmad(c, a2, b2, m16, n, kc, first && k0 == 0);
    }
  }

  // A [m, kc] chunk (columns [k0, k0 + kc)) of an Nz L1 tile of m16 rows into L0A (Zz): per row block,
  // its kc / C0 fractals, M1 apart in the Nz tile.
  __aicore__ inline LocalTensor<T> LoadA(const LocalTensor<T>& a1, uint32_t m16, uint32_t k0, uint32_t kc) {
    LocalTensor<T> a2 = l0a_.AllocTensor<T>();
    const uint32_t m1 = m16 / 16, kc1 = (kc + kC0 - 1) / kC0;
    for (uint32_t mb = 0; mb < m1; ++mb)
      LoadData(a2[mb * kc1 * kFractal], a1,
               LoadData2DParams(uint16_t((k0 / kC0) * m1 + mb), uint8_t(kc1), uint16_t(m1), 0, 0, false, 0));
    l0a_.EnQue(a2);
    return l0a_.DeQue<T>();
  }

  // A^T [m, kc] chunk of an Nz L1 tile A of k16 rows and m16 columns into L0A (Zz): A^T's fractal (mb, kb) is A's
  // (kb, mb), at mb * K1 + kb in the Nz tile, so a row block's kc / 16 fractals are contiguous; each is transposed.
  __aicore__ inline LocalTensor<T> LoadAt(const LocalTensor<T>& a1, uint32_t m16, uint32_t k16, uint32_t k0,
                                          uint32_t kc) {
    LocalTensor<T> a2 = l0a_.AllocTensor<T>();
    const uint32_t m1 = m16 / 16, k1 = k16 / 16, kc1 = (kc + 15) / 16;
    for (uint32_t mb = 0; mb < m1; ++mb)
      LoadData(a2[mb * kc1 * kFractal], a1,
               LoadData2DParams(uint16_t(mb * k1 + k0 / 16), uint8_t(kc1), 1, 0, 0, true, 0));
    l0a_.EnQue(a2);
    return l0a_.DeQue<T>();
  }

  // m is the rows' 16-aligned count: with m = 1 the cube reads L0A as a vector (GEMV), not as the Zz
  // fractals loaded here; the padding rows' results are never copied out.
  __aicore__ inline void Mmad(const LocalTensor<float>& c, LocalTensor<T>& a2, LocalTensor<T>& b2, uint32_t m,
                              uint32_t n, uint32_t k, bool first) {
    MmadParams p;
    p.m = uint16_t(m), p.n = uint16_t(n), p.k = uint16_t(k);
    p.cmatrixInitVal = first;
    AscendC::Mmad(c, a2, b2, p);
    if ((m / 16) * (n / 16) < kSmallTile) PipeBarrier<PIPE_M>();  // the next chunk accumulates onto it
    l0a_.FreeTensor(a2);
    l0b_.FreeTensor(b2);
  }

  TQue<TPosition::A2, 2> l0a_;
  TQue<TPosition::B2, 2> l0b_;
  TQue<TPosition::CO1, 1> co1_;
};
