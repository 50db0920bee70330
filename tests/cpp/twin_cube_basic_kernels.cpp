// The cube basic API on the twin (csrc/twin/twin_cube_basic.h), for tests/twin/test_twin_cube_basic.py:
//   torch.ops.twin_cube_basic.example(a, b, half_out)  runs csrc/kernels/examples/cube_matmul_example.cpp
//   torch.ops.twin_cube_basic.run(name)                one 16 x 16 x 16 half block written with TBufs and
//                                                      manual flags; "correct" is clean, every other
//                                                      kernel breaks one rule or drops one hand-off.
//   torch.ops.twin_cube_basic.record(on) / record_take()  this library's twin record export
//                                                      (tests/harness/test_cube_model.py models it).
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "twin_launch.h"
#include "twin_record.h"

extern "C" void cube_matmul_example(GM_ADDR a, GM_ADDR b, GM_ADDR c);
extern "C" void cube_matmul_example_half(GM_ADDR a, GM_ADDR b, GM_ADDR c);

using namespace AscendC;

namespace {
enum Fault : int {
  kNone,
  kNoMte2ToMte1,      // LoadData reads L1 before the MTE2 copy is waited for
  kNoMte1ToM,         // Mmad reads L0A/L0B before LoadData is waited for
  kNoMToFix,          // Fixpipe reads L0C before Mmad is waited for
  kL0aMisaligned,     // LoadData into L0A at byte 32
  kTransposeFloat,    // LoadData ifTranspose on b32 data
  kFmInL1,            // Mmad's fm from A1
  kMmadKRange,        // Mmad k = 4096
  kFixpipeNoQuant,    // half output without quantPre F322F16
  kFixpipeNSize,      // nSize 24 into an NZ output
  kNd2NzToUb,         // DataCopy ND2NZ into a VECIN buffer
  kNd2NzStride,       // dstNzC0Stride 0
};
constexpr uint32_t kF = 16;  // one half fractal: M = N = K = 16

template <Fault kFault, typename OutT = float>
void Block(GM_ADDR x) {
  GlobalTensor<half> a, b;
  GlobalTensor<OutT> c;
  a.SetGlobalBuffer(reinterpret_cast<half*>(x), kF * kF);
  b.SetGlobalBuffer(reinterpret_cast<half*>(x) + kF * kF, kF * kF);
  c.SetGlobalBuffer(reinterpret_cast<OutT*>(reinterpret_cast<half*>(x) + 2 * kF * kF), kF * kF);
  TPipe pipe;
  TBuf<TPosition::A1> a1Buf;
  TBuf<TPosition::B1> b1Buf;
  TBuf<TPosition::A2> a2Buf;
  TBuf<TPosition::B2> b2Buf;
  TBuf<TPosition::CO1> coBuf;
  TBuf<TPosition::VECIN> ubBuf;
  pipe.InitBuffer(a1Buf, 1024);
  pipe.InitBuffer(b1Buf, 1024);
  pipe.InitBuffer(a2Buf, 1024);
  pipe.InitBuffer(b2Buf, 1024);
  pipe.InitBuffer(coBuf, 1024);
  pipe.InitBuffer(ubBuf, 1024);
  LocalTensor<half> a1 = kFault == kNd2NzToUb ? ubBuf.Get<half>() : a1Buf.Get<half>();
  LocalTensor<half> b1 = b1Buf.Get<half>();
  LocalTensor<half> a2 = a2Buf.Get<half>();
  LocalTensor<half> b2 = b2Buf.Get<half>();
  LocalTensor<float> co = coBuf.Get<float>();
  DataCopy(a1, a, Nd2NzParams(1, kF, kF, 0, kF, kFault == kNd2NzStride ? 0 : kF, 1, 0));
  DataCopy(b1, b, Nd2NzParams(1, kF, kF, 0, kF, kF, 1, 0));
  if constexpr (kFault != kNoMte2ToMte1) {
    SetFlag<HardEvent::MTE2_MTE1>(0);
    WaitFlag<HardEvent::MTE2_MTE1>(0);
  }
  if constexpr (kFault == kTransposeFloat) {
    LoadData(a2.ReinterpretCast<float>(), a1.ReinterpretCast<float>(), LoadData2DParams(0, 1, 0, 0, 0, true, 0));
  }
  LoadData(kFault == kL0aMisaligned ? a2[16] : a2, a1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
  LoadData(b2, b1, LoadData2DParams(0, 1, 0, 0, 0, true, 0));
  if constexpr (kFault != kNoMte1ToM) {
    SetFlag<HardEvent::MTE1_M>(0);
    WaitFlag<HardEvent::MTE1_M>(0);
  }
  MmadParams mp(kF, kF, kFault == kMmadKRange ? 4096 : kF, 0, false, true);
  if constexpr (kFault == kFmInL1) Mmad(co, a1, b2, mp);
  else Mmad(co, a2, b2, mp);
  if constexpr (kFault != kNoMToFix) {
    SetFlag<HardEvent::M_FIX>(0);
    WaitFlag<HardEvent::M_FIX>(0);
  }
  FixpipeParamsV220 fp(kFault == kFixpipeNSize ? 24 : kF, kF, kF, kF, false);
  if constexpr (sizeof(OutT) == 2 && kFault != kFixpipeNoQuant) fp.quantPre = QuantMode_t::F322F16;
  if constexpr (kFault == kFixpipeNSize) Fixpipe<OutT, float, CFG_NZ>(c, co, fp);  // ND takes any nSize
  else Fixpipe<OutT, float, CFG_ROW_MAJOR>(c, co, fp);
}

// The queue form with one hand-off dropped: Mmad uses the L0A tensor it enqueued without DeQue
// (B2's DeQue happens to order the LoadData; the A2 EnQue's flag is left unwaited).
void QueueNoDeQue(GM_ADDR x) {
  GlobalTensor<half> a;
  a.SetGlobalBuffer(reinterpret_cast<half*>(x), kF * kF);
  TPipe pipe;
  TQue<TPosition::A1, 1> a1Q;
  TQue<TPosition::A2, 1> a2Q;
  TQue<TPosition::B2, 1> b2Q;
  TQue<TPosition::CO1, 1> coQ;
  pipe.InitBuffer(a1Q, 1, 512);
  pipe.InitBuffer(a2Q, 1, 512);
  pipe.InitBuffer(b2Q, 1, 512);
  pipe.InitBuffer(coQ, 1, 1024);
  LocalTensor<half> a1 = a1Q.AllocTensor<half>();
  DataCopy(a1, a, Nd2NzParams(1, kF, kF, 0, kF, kF, 1, 0));
  a1Q.EnQue(a1);
  a1 = a1Q.DeQue<half>();
  LocalTensor<half> a2 = a2Q.AllocTensor<half>();
  LocalTensor<half> b2 = b2Q.AllocTensor<half>();
  LoadData(a2, a1, LoadData2DParams(0, 1, 0, 0, 0, false, 0));
  LoadData(b2, a1, LoadData2DParams(0, 1, 0, 0, 0, true, 0));
  a2Q.EnQue(a2);
  b2Q.EnQue(b2);
  b2 = b2Q.DeQue<half>();  // a2's DeQue is missing
  LocalTensor<float> co = coQ.AllocTensor<float>();
  Mmad(co, a2, b2, MmadParams(kF, kF, kF, 0, false, true));
}

#define CUBE_KERNEL(name, ...) \
  extern "C" __global__ __aicore__ void name(GM_ADDR x) { Block<__VA_ARGS__>(x); }
CUBE_KERNEL(cube_basic_correct, kNone)
CUBE_KERNEL(cube_basic_correct_half, kNone, half)
CUBE_KERNEL(loaddata_before_copy_waited, kNoMte2ToMte1)
CUBE_KERNEL(mmad_before_loaddata_waited, kNoMte1ToM)
CUBE_KERNEL(fixpipe_before_mmad_waited, kNoMToFix)
CUBE_KERNEL(l0a_misaligned, kL0aMisaligned)
CUBE_KERNEL(loaddata_transpose_float, kTransposeFloat)
CUBE_KERNEL(mmad_fm_in_l1, kFmInL1)
CUBE_KERNEL(mmad_k_range, kMmadKRange)
CUBE_KERNEL(fixpipe_half_without_quant, kFixpipeNoQuant, half)
CUBE_KERNEL(fixpipe_nsize_not_16, kFixpipeNSize)
CUBE_KERNEL(nd2nz_into_ub, kNd2NzToUb)
CUBE_KERNEL(nd2nz_c0_stride_zero, kNd2NzStride)
extern "C" __global__ __aicore__ void queue_mmad_without_deque(GM_ADDR x) { QueueNoDeQue(x); }

extern "C" __global__ __aicore__ void l0a_capacity(GM_ADDR x) {
  TPipe pipe;
  TQue<TPosition::A2, 2> a2Q;
  pipe.InitBuffer(a2Q, 2, 32 * 1024 + 32);
}

extern "C" __global__ __aicore__ void mmad_half_out(GM_ADDR x) {
  TPipe pipe;
  TBuf<TPosition::A2> a2Buf;
  TBuf<TPosition::B2> b2Buf;
  TBuf<TPosition::CO1> coBuf;
  pipe.InitBuffer(a2Buf, 512);
  pipe.InitBuffer(b2Buf, 512);
  pipe.InitBuffer(coBuf, 1024);
  Mmad(coBuf.Get<half>(), a2Buf.Get<half>(), b2Buf.Get<half>(), MmadParams(kF, kF, kF, 0, false, true));
}

// Two Mmads of one m x n block, the second accumulating onto the first's L0C, with or without
// PipeBarrier<PIPE_M> between them (Mmad.md 同步优化说明: needed when (m/16)*(n/16) < 10). The
// operands are never loaded: only the ordering is under test, and nothing leaves L0C.
template <uint16_t M, uint16_t N, bool kBarrier>
void Accumulate() {
  TPipe pipe;
  TBuf<TPosition::A2> a2Buf;
  TBuf<TPosition::B2> b2Buf;
  TBuf<TPosition::CO1> coBuf;
  pipe.InitBuffer(a2Buf, M * kF * sizeof(half));
  pipe.InitBuffer(b2Buf, N * kF * sizeof(half));
  pipe.InitBuffer(coBuf, M * N * sizeof(float));
  LocalTensor<float> co = coBuf.Get<float>();
  Mmad(co, a2Buf.Get<half>(), b2Buf.Get<half>(), MmadParams(M, N, kF, 0, false, true));
  if constexpr (kBarrier) PipeBarrier<PIPE_M>();
  Mmad(co, a2Buf.Get<half>(), b2Buf.Get<half>(), MmadParams(M, N, kF, 0, false, false));
}
#define ACCUMULATE_KERNEL(name, m, n, barrier) \
  extern "C" __global__ __aicore__ void name(GM_ADDR) { Accumulate<m, n, barrier>(); }
ACCUMULATE_KERNEL(mmad_accumulate_16x16_with_barrier, 16, 16, true)
ACCUMULATE_KERNEL(mmad_accumulate_16x16_without_barrier, 16, 16, false)
ACCUMULATE_KERNEL(mmad_accumulate_48x48_without_barrier, 48, 48, false)  // 3 x 3 = 9 < 10
ACCUMULATE_KERNEL(mmad_accumulate_32x80_without_barrier, 32, 80, false)  // 2 x 5 = 10: ordered by the hardware

using Kernel = void (*)(GM_ADDR);
const KernelTable<Kernel>& Kernels() {
  static const KernelTable<Kernel> kernels{
      {"correct", cube_basic_correct},
      {"correct_half", cube_basic_correct_half},
      {"loaddata_before_copy_waited", loaddata_before_copy_waited},
      {"mmad_before_loaddata_waited", mmad_before_loaddata_waited},
      {"fixpipe_before_mmad_waited", fixpipe_before_mmad_waited},
      {"queue_mmad_without_deque", queue_mmad_without_deque},
      {"l0a_misaligned", l0a_misaligned},
      {"loaddata_transpose_float", loaddata_transpose_float},
      {"mmad_fm_in_l1", mmad_fm_in_l1},
      {"mmad_k_range", mmad_k_range},
      {"mmad_half_out", mmad_half_out},
      {"fixpipe_half_without_quant", fixpipe_half_without_quant},
      {"fixpipe_nsize_not_16", fixpipe_nsize_not_16},
      {"nd2nz_into_ub", nd2nz_into_ub},
      {"nd2nz_c0_stride_zero", nd2nz_c0_stride_zero},
      {"l0a_capacity", l0a_capacity},
      {"mmad_accumulate_16x16_with_barrier", mmad_accumulate_16x16_with_barrier},
      {"mmad_accumulate_16x16_without_barrier", mmad_accumulate_16x16_without_barrier},
      {"mmad_accumulate_48x48_without_barrier", mmad_accumulate_48x48_without_barrier},
      {"mmad_accumulate_32x80_without_barrier", mmad_accumulate_32x80_without_barrier}};
  return kernels;
}

// Runs one block on x = [A (16 x 16 half) | B (16 x 16 half) | C (16 x 16 out)]; returns C as fp32.
torch::Tensor Run(c10::string_view name, torch::Tensor x) {
  auto it = FindKernel(Kernels(), name, "cube basic kernel");
  TORCH_CHECK(x.scalar_type() == torch::kHalf && x.is_contiguous() && x.numel() >= 4 * kF * kF,
              "x: contiguous half, A | B | C");
  RaiseRuleErrors(
      [&] { AscendC::twin::Launch(it->first.c_str(), 1, it->second, reinterpret_cast<GM_ADDR>(x.data_ptr())); });
  return x;
}

torch::Tensor Example(torch::Tensor a, torch::Tensor b, bool halfOut) {
  TORCH_CHECK(a.scalar_type() == torch::kHalf && b.scalar_type() == torch::kHalf, "a, b: half");
  a = a.contiguous(), b = b.contiguous();
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(0) == 48 && a.size(1) == 64 && b.size(0) == 64 && b.size(1) == 32,
              "the example's shapes: a [48, 64], b [64, 32]");
  torch::Tensor c = torch::empty({a.size(0), b.size(1)}, a.options().dtype(halfOut ? torch::kHalf : torch::kFloat));
  auto* kernel = halfOut ? cube_matmul_example_half : cube_matmul_example;
  RaiseRuleErrors([&] {
    AscendC::twin::Launch(halfOut ? "cube_matmul_example_half" : "cube_matmul_example", 1, kernel,
                          reinterpret_cast<GM_ADDR>(a.data_ptr()), reinterpret_cast<GM_ADDR>(b.data_ptr()),
                          reinterpret_cast<GM_ADDR>(c.data_ptr()));
  });
  return c;
}

std::vector<std::string> Names() { return KernelNames(Kernels()); }
// This library links its own copy of the twin: its record export, for the pipeline model's tests.
void Record(bool on) { AscendC::twin::SetRecordExport(on); }
std::vector<std::string> RecordTake() { return AscendC::twin::TakeRecordedLaunches(); }
}  // namespace

TORCH_LIBRARY(twin_cube_basic, m) {
  m.def("run(str name, Tensor x) -> Tensor", &Run);
  m.def("example(Tensor a, Tensor b, bool half_out) -> Tensor", &Example);
  m.def("names() -> str[]", &Names);
  m.def("record(bool on) -> ()", &Record);
  m.def("record_take() -> str[]", &RecordTake);
}
