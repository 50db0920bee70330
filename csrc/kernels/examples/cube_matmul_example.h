// The cube stage of the hand-written examples: C[M, N] = A[M, K] x B[K, N] through the basic
// API (cube_matmul_example.cpp says how; mix_matmul_epilogue_example.cpp hands C to the vector cores).
#pragma once
#include "kernel_operator.h"

using namespace AscendC;

namespace cube_example {
constexpr uint32_t M = 48, N = 32, K = 64;  // multiples of 16: whole half fractals
constexpr uint32_t K_CHUNK = 32;            // the K of one Mmad
constexpr uint32_t FRAC = 16;               // half fractals are 16 x 16
constexpr uint32_t M1 = M / FRAC, N1 = N / FRAC, K1 = K / FRAC, KC1 = K_CHUNK / FRAC;
}  // namespace cube_example

template <typename OutT>
class KernelCubeMatmulExample {
 public:
  __aicore__ inline KernelCubeMatmulExample() {}
  __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    using namespace cube_example;
    aGm_.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), M * K);
    bGm_.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), K * N);
    cGm_.SetGlobalBuffer(reinterpret_cast<__gm__ OutT*>(c), M * N);
    pipe_.InitBuffer(a1_, 1, M * K * sizeof(half));
    pipe_.InitBuffer(b1_, 1, K * N * sizeof(half));
    pipe_.InitBuffer(a2_, 2, M * K_CHUNK * sizeof(half));
    pipe_.InitBuffer(b2_, 2, K_CHUNK * N * sizeof(half));
    pipe_.InitBuffer(co1_, 1, M * N * sizeof(float));
  }
  __aicore__ inline void Process() {
    using namespace cube_example;
    CopyIn();
    LocalTensor<half> a1 = a1_.DeQue<half>();
    LocalTensor<half> b1 = b1_.DeQue<half>();
    LocalTensor<float> c = co1_.AllocTensor<float>();
    for (uint32_t kc = 0; kc < K / K_CHUNK; ++kc) {
      SplitChunk(a1, b1, kc);
      Compute(c, kc);
    }
    co1_.EnQue(c);
    a1_.FreeTensor(a1);
    b1_.FreeTensor(b1);
    CopyOut();
  }

 private:
  // GM -> L1: A [M, K] and B [K, N] to Nz (C0 = 16 half columns per fractal column).
  __aicore__ inline void CopyIn() {
    using namespace cube_example;
    LocalTensor<half> a1 = a1_.AllocTensor<half>();
    LocalTensor<half> b1 = b1_.AllocTensor<half>();
    DataCopy(a1, aGm_, Nd2NzParams(1, M, K, 0, K, M, 1, 0));  // A: M rows per fractal column
    DataCopy(b1, bGm_, Nd2NzParams(1, K, N, 0, N, K, 1, 0));  // B: K rows per fractal column
    a1_.EnQue(a1);
    b1_.EnQue(b1);
  }
  // L1 -> L0 for K chunk kc. A's Nz fractal (mb, kb) is number kb*M1 + mb; Zz wants mb*KC1 + kb.
  // B's Nz fractal (kb, nb) is nb*K1 + kb; Zn wants kb*N1 + nb with each fractal transposed.
  __aicore__ inline void SplitChunk(const LocalTensor<half>& a1, const LocalTensor<half>& b1, uint32_t kc) {
    using namespace cube_example;
    LocalTensor<half> a2 = a2_.AllocTensor<half>();
    LocalTensor<half> b2 = b2_.AllocTensor<half>();
    for (uint32_t mb = 0; mb < M1; ++mb)
      LoadData(a2[mb * KC1 * FRAC * FRAC], a1, LoadData2DParams(kc * KC1 * M1 + mb, KC1, M1, 0, 0, false, 0));
    for (uint32_t kb = 0; kb < KC1; ++kb)
      LoadData(b2[kb * N1 * FRAC * FRAC], b1, LoadData2DParams(kc * KC1 + kb, N1, K1, 0, 0, true, 0));
    a2_.EnQue(a2);
    b2_.EnQue(b2);
  }
  __aicore__ inline void Compute(const LocalTensor<float>& c, uint32_t kc) {
    using namespace cube_example;
    LocalTensor<half> a2 = a2_.DeQue<half>();
    LocalTensor<half> b2 = b2_.DeQue<half>();
    MmadParams p;
    p.m = M, p.n = N, p.k = K_CHUNK;
    p.cmatrixInitVal = kc == 0;  // the first chunk starts C at zero, the next accumulate
    Mmad(c, a2, b2, p);
    // Mmad.md: accumulating Mmads on small tiles ((m/16)*(n/16) < 10) need PipeBarrier<PIPE_M>
    if ((M / 16) * (N / 16) < 10) PipeBarrier<PIPE_M>();
    a2_.FreeTensor(a2);
    b2_.FreeTensor(b2);
  }
  __aicore__ inline void CopyOut() {
    using namespace cube_example;
    LocalTensor<float> c = co1_.DeQue<float>();
    FixpipeParamsV220 p;
    p.nSize = N, p.mSize = M, p.srcStride = M, p.dstStride = N;
    p.quantPre = sizeof(OutT) == 2 ? QuantMode_t::F322F16 : QuantMode_t::NoQuant;
    Fixpipe<OutT, float, CFG_ROW_MAJOR>(cGm_, c, p);
    co1_.FreeTensor(c);
  }

  TPipe pipe_;
  TQue<TPosition::A1, 1> a1_;
  TQue<TPosition::B1, 1> b1_;
  TQue<TPosition::A2, 2> a2_;
  TQue<TPosition::B2, 2> b2_;
  TQue<TPosition::CO1, 1> co1_;
  GlobalTensor<half> aGm_;
  GlobalTensor<half> bGm_;
  GlobalTensor<OutT> cGm_;
};
