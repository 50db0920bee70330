// Deliberately wrong Ascend C kernels, one per twin rule, exposed as torch.ops.twin_faults.run(rule)
// so the Python tests can watch each rule fire and arrive as an exception. "correct" is the
// control: the same moves done right.
#include <torch/library.h>

#include <map>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "kernel_utils.h"
#include "twin_core.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {
constexpr uint32_t kElems = 256;

struct Fixture {  // one small kernel: a pipe, queues and a GM tensor
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> inQ;
  TQue<QuePosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> calc;
  GlobalTensor<float> gm;
  explicit Fixture(GM_ADDR x) {
    gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x), kElems);
    pipe.InitBuffer(inQ, 1, kElems * sizeof(float));
    pipe.InitBuffer(outQ, 1, kElems * sizeof(float));
    pipe.InitBuffer(calc, kElems * sizeof(float));
  }
};

extern "C" __global__ __aicore__ void correct(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.inQ.AllocTensor<float>();
  DataCopy(a, f.gm, kElems);
  f.inQ.EnQue(a);
  LocalTensor<float> b = f.inQ.DeQue<float>();
  LocalTensor<float> c = f.outQ.AllocTensor<float>();
  LocalTensor<bfloat16_t> narrow = f.calc.Get<bfloat16_t>(kElems);
  Exp(c, b, kElems);
  Cast(narrow, c, RoundMode::CAST_RINT, kElems);
  Cast(c, narrow, RoundMode::CAST_NONE, kElems);
  f.outQ.EnQue(c);
  f.inQ.FreeTensor(b);
  LocalTensor<float> out = f.outQ.DeQue<float>();
  f.outQ.FreeTensor(out);
}

extern "C" __global__ __aicore__ void ub_capacity(GM_ADDR x) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> big;
  pipe.InitBuffer(big, 2, 100 * 1024);  // 200 KiB of double buffers: over the 196,352-byte UB
}

extern "C" __global__ __aicore__ void copy_length_alignment(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.inQ.AllocTensor<float>();
  DataCopy(a, f.gm, 20);  // 80 bytes: not a whole number of 32-byte blocks
}

extern "C" __global__ __aicore__ void operand_alignment(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  Add(a[3], a[3], a[3], 64);  // starts 12 bytes into a block
}

extern "C" __global__ __aicore__ void bf16_arithmetic(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<bfloat16_t> a = f.calc.Get<bfloat16_t>();
  Add(a, a, a, 128);  // the A2 vector unit has no bf16 arithmetic
}

extern "C" __global__ __aicore__ void exp_int32(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<int32_t> a = f.calc.Get<int32_t>();
  Exp(a, a, 64);  // Exp is half/float only
}

extern "C" __global__ __aicore__ void bf16_cast_without_rounding(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> wide = f.calc.Get<float>(128);
  LocalTensor<bfloat16_t> narrow = f.calc.GetWithOffset<bfloat16_t>(128, 512);
  Cast(narrow, wide, RoundMode::CAST_NONE, 128);
}

extern "C" __global__ __aicore__ void half_to_bf16_cast(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<half> h = f.calc.Get<half>(128);
  LocalTensor<bfloat16_t> b = f.calc.GetWithOffset<bfloat16_t>(128, 256);
  Cast(b, h, RoundMode::CAST_RINT, 128);
}

extern "C" __global__ __aicore__ void half_to_int32_cast(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<half> h = f.calc.Get<half>(128);
  LocalTensor<int32_t> i = f.calc.GetWithOffset<int32_t>(128, 512);
  Cast(i, h, RoundMode::CAST_RINT, 128);  // A2 has it; the twin does not implement it
}

extern "C" __global__ __aicore__ void dequeue_empty(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.inQ.DeQue<float>();
}

extern "C" __global__ __aicore__ void double_free(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.inQ.AllocTensor<float>();
  f.inQ.EnQue(a);
  LocalTensor<float> b = f.inQ.DeQue<float>();
  f.inQ.FreeTensor(b);
  f.inQ.FreeTensor(b);
}

extern "C" __global__ __aicore__ void queue_depth(GM_ADDR x) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;  // depth 1 ...
  pipe.InitBuffer(q, 2, 1024);    // ... with two buffers
  LocalTensor<float> a = q.AllocTensor<float>();
  LocalTensor<float> b = q.AllocTensor<float>();
  q.EnQue(a);
  q.EnQue(b);
}

extern "C" __global__ __aicore__ void ub_overrun(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  Muls(a, a, 2.0f, static_cast<int32_t>(kElems * 2));  // twice the buffer
}

extern "C" __global__ __aicore__ void gm_overrun(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.inQ.AllocTensor<float>();
  DataCopy(a, f.gm[128], kElems);  // reads 128 elements past the end of x
}

extern "C" __global__ __aicore__ void ub_copy_overlap(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  DataCopy(a, a[32], DataCopyParams(4, 2, 2, 2));  // UB->UB, strided: half rows swapped in place
}

// Gather's count form on A2 issues count / 64 full float repeats through a uint8_t repeatTime: 16383
// floats are 255 repeats and a 63-element tail (the most it holds), 16384 would be 256 repeats.
void GatherCount(GM_ADDR x, uint32_t count) {
  Fixture f(x);
  TBuf<TPosition::VECCALC> dstBuf, offBuf;
  f.pipe.InitBuffer(dstBuf, 16384 * sizeof(float));
  f.pipe.InitBuffer(offBuf, 16384 * sizeof(uint32_t));
  LocalTensor<float> src = f.calc.Get<float>();
  LocalTensor<uint32_t> offsets = offBuf.Get<uint32_t>();
  DataCopy(src, f.gm, kElems);
  Duplicate(offsets, uint32_t(4), 16384);  // every element gathers src[1]
  SyncPipes<HardEvent::MTE2_V>();
  Gather(dstBuf.Get<float>(), src, offsets, 0, count);
}

extern "C" __global__ __aicore__ void gather_at_limit(GM_ADDR x) { GatherCount(x, 255 * 64 + 63); }

extern "C" __global__ __aicore__ void gather_repeat_limit(GM_ADDR x) { GatherCount(x, 256 * 64); }

// Gather into the buffer it reads: A2's Gather does not support src and dst sharing memory.
extern "C" __global__ __aicore__ void gather_overlap(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  LocalTensor<uint32_t> offsets = f.outQ.AllocTensor<uint32_t>();
  DataCopy(a, f.gm, kElems);
  Duplicate(offsets, uint32_t(64 * sizeof(float)), 128);  // every element reads a[64] ...
  SyncPipes<HardEvent::MTE2_V>();
  Gather(a, a, offsets, 0, 128);  // ... which element 64 of the write overwrites
}

// The 16-bit pair swap rope uses: (w << 16) | (w >> 16) on uint32 words, Or on their uint16 halves.
// `shiftBy` and `orWords` vary one rule at a time; the defaults are the valid kernel.
void PairSwap(GM_ADDR x, uint32_t shiftBy = 16, bool orWords = false) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  LocalTensor<uint32_t> words = a.ReinterpretCast<uint32_t>(), hi = f.outQ.AllocTensor<uint32_t>();
  DataCopy(a, f.gm, kElems);
  SyncPipes<HardEvent::MTE2_V>();
  ShiftLeft(hi, words, shiftBy, 128);
  ShiftRight(words[128], words, uint32_t(16), 128);
  PipeBarrier<PIPE_V>();
  if (orWords) {
    Or(words, words[128], hi, 128);
  } else {
    LocalTensor<uint16_t> halves = words.ReinterpretCast<uint16_t>();
    Or(halves, halves[256], hi.ReinterpretCast<uint16_t>(), 256);
  }
}

extern "C" __global__ __aicore__ void pair_swap(GM_ADDR x) { PairSwap(x); }
extern "C" __global__ __aicore__ void shift_full_width(GM_ADDR x) { PairSwap(x, 32); }
extern "C" __global__ __aicore__ void shift_past_width(GM_ADDR x) { PairSwap(x, 33); }
extern "C" __global__ __aicore__ void or_uint32(GM_ADDR x) { PairSwap(x, 16, true); }

// A float shift: A2 shifts int16/uint16/int32/uint32 only.
extern "C" __global__ __aicore__ void shift_float(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  ShiftLeft(a, a, 1.0f, 64);
}

// A shift whose source starts 8 words (32 bytes) past its destination: partial overlap inside a repeat.
extern "C" __global__ __aicore__ void shift_partial_overlap(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<uint32_t> w = f.calc.Get<uint32_t>();
  ShiftRight(w, w[8], uint32_t(1), 128);
}

// ... and a whole repeat (64 words) past it: allowed.
extern "C" __global__ __aicore__ void shift_repeat_ahead(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<uint32_t> w = f.calc.Get<uint32_t>();
  Duplicate(w, uint32_t(6), 192);
  PipeBarrier<PIPE_V>();
  ShiftRight(w, w[64], uint32_t(1), 128);
}

// DataCopyPad GM->UB with 9 floats (36 bytes) of right padding: at most 32 bytes on A2.
extern "C" __global__ __aicore__ void pad_too_wide(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.inQ.AllocTensor<float>();
  DataCopyPad(a, f.gm, DataCopyExtParams(1, 20 * sizeof(float), 0, 0, 0),
              DataCopyPadExtParams<float>(true, 0, 9, 0.0f));
}

// MrgSort's list lengths are uint16_t fields of one register: [0, 4095] on A2.
void MergeTwo(GM_ADDR x, uint16_t firstLen, uint32_t src2Byte, bool intoSrc1) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> srcBuf, dstBuf;
  pipe.InitBuffer(srcBuf, 4096 * 8 + 64);
  pipe.InitBuffer(dstBuf, 4096 * 8 + 64);
  LocalTensor<float> src = srcBuf.Get<float>(), dst = dstBuf.Get<float>();
  Duplicate(src, 1.0f, static_cast<int32_t>(src.GetSize()));
  LocalTensor<float> first = src, second = src[src2Byte / sizeof(float)];
  const uint16_t counts[4] = {firstLen, 1, 0, 0};
  if (firstLen > 4095) first = second = srcBuf.Get<float>(2);  // the length alone must be refused
  uint32_t taken[4];
  MrgSort<float, false>(intoSrc1 ? first : dst, MrgSortSrcList<float>(first, second, first, first), counts, taken,
                        0b0011, 1);
}

extern "C" __global__ __aicore__ void mrgsort_list_too_long(GM_ADDR x) { MergeTwo(x, 4096, 0, false); }

// 4095 pairs, and a second list starting 8 bytes into a block (MrgSort's sources need 8-byte alignment).
extern "C" __global__ __aicore__ void mrgsort_at_limit(GM_ADDR x) { MergeTwo(x, 4095, 4095 * 8, false); }

extern "C" __global__ __aicore__ void mrgsort_overlap(GM_ADDR x) { MergeTwo(x, 16, 16 * 8, true); }

extern "C" __global__ __aicore__ void pipe_barrier_scalar(GM_ADDR x) {
  Fixture f(x);
  PipeBarrier<PIPE_S>();  // A2 has no barrier for the scalar pipe
}

// A TPipe holds 64 buffers (a TBuf is one); 64 TBufs run, a 65th is refused.
void ManyBuffers(uint32_t n) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> bufs[65];
  for (uint32_t i = 0; i < n; ++i) pipe.InitBuffer(bufs[i], 32);
}
extern "C" __global__ __aicore__ void buffers_at_limit(GM_ADDR x) { ManyBuffers(64); }
extern "C" __global__ __aicore__ void too_many_buffers(GM_ADDR x) { ManyBuffers(65); }

// TQue buffers at one TPosition: 8 (A2's event ids for their hand-offs); 4 double-buffered VECIN
// queues run, a fifth is refused.
void ManyQueues(uint32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> ques[5];
  TQue<QuePosition::VECOUT, 2> out;
  for (uint32_t i = 0; i < n; ++i) pipe.InitBuffer(ques[i], 2, 1024);
  pipe.InitBuffer(out, 2, 1024);  // another TPosition: its own 8
}
extern "C" __global__ __aicore__ void que_buffers_at_limit(GM_ADDR x) { ManyQueues(4); }
extern "C" __global__ __aicore__ void too_many_que_buffers(GM_ADDR x) { ManyQueues(5); }

extern "C" __global__ __aicore__ void bf16_cast_odd(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> wide = f.calc.Get<float>(128);
  LocalTensor<bfloat16_t> narrow = f.calc.GetWithOffset<bfloat16_t>(128, 512);
  Cast(narrow, wide, RoundMode::CAST_ODD, 128);  // A2 rounds to odd on float -> half only
}

extern "C" __global__ __aicore__ void duplicate_int8(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<int8_t> a = f.calc.Get<int8_t>();
  Duplicate(a, int8_t(1), 64);  // A2's Duplicate: 2- and 4-byte types only
}

// blockCount 0 or blockLen 0 is a NOP for the strided DataCopy forms on A2.
extern "C" __global__ __aicore__ void strided_copy_empty(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> a = f.calc.Get<float>();
  DataCopy(a, f.gm, DataCopyParams(0, 2, 0, 0));
  DataCopy(a, f.gm, DataCopyParams(3, 0, 0, 0));
  DataCopy(a, a[64], DataCopyParams(0, 2, 0, 0));
  DataCopy(f.gm, a, DataCopyParams(2, 0, 0, 0));
}

// The address-overlap rule (通用地址重叠约束) on the shared vector check, one kernel per form.
// Within a repeat: Add's first source starts 8 floats (32 bytes) past its destination.
extern "C" __global__ __aicore__ void add_partial_overlap(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> w = f.calc.Get<float>();
  Add(w, w[8], w[128], 64);
}

// Across repeats: Muls writes a whole repeat (64 floats) ahead of what it reads, so repeat 1 reads
// what repeat 0 wrote.
extern "C" __global__ __aicore__ void muls_reads_earlier_repeat(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> w = f.calc.Get<float>();
  Muls(w[64], w, 2.0f, 128);
}

// A widening Cast in place: repeat 0 writes the halves repeat 1 reads.
extern "C" __global__ __aicore__ void cast_widening_in_place(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> w = f.calc.Get<float>();
  Cast(w, w.ReinterpretCast<half>(), RoundMode::CAST_NONE, 128);
}

// A narrowing Cast whose halves start 32 bytes into its floats: not the same start.
extern "C" __global__ __aicore__ void cast_narrowing_shifted(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> w = f.calc.Get<float>();
  Cast(w[8].ReinterpretCast<half>(), w, RoundMode::CAST_RINT, 128);
}

// What the rule allows, each at its limit: in place (Exp, Add and MulAddDst over their destination,
// a narrowing Cast from the same start) and a source exactly one repeat ahead.
extern "C" __global__ __aicore__ void overlap_at_limit(GM_ADDR x) {
  Fixture f(x);
  LocalTensor<float> w = f.calc.Get<float>();
  Duplicate(w, 0.5f, 256);
  PipeBarrier<PIPE_V>();
  Exp(w, w, 128);
  Add(w, w, w[128], 128);
  MulAddDst(w, w, w[128], 128);
  Muls(w, w[64], 2.0f, 192);
  Cast(w.ReinterpretCast<half>(), w, RoundMode::CAST_RINT, 256);
}

using Kernel = void (*)(GM_ADDR);
const KernelTable<Kernel>& Kernels() {
  static const KernelTable<Kernel> kernels{{"correct", correct},
                                           {"ub_capacity", ub_capacity},
                                           {"copy_length_alignment", copy_length_alignment},
                                           {"operand_alignment", operand_alignment},
                                           {"bf16_arithmetic", bf16_arithmetic},
                                           {"exp_int32", exp_int32},
                                           {"bf16_cast_without_rounding", bf16_cast_without_rounding},
                                           {"half_to_bf16_cast", half_to_bf16_cast},
                                           {"half_to_int32_cast", half_to_int32_cast},
                                           {"dequeue_empty", dequeue_empty},
                                           {"double_free", double_free},
                                           {"queue_depth", queue_depth},
                                           {"ub_overrun", ub_overrun},
                                           {"gm_overrun", gm_overrun},
                                           {"ub_copy_overlap", ub_copy_overlap},
                                           {"gather_at_limit", gather_at_limit},
                                           {"gather_repeat_limit", gather_repeat_limit},
                                           {"gather_overlap", gather_overlap},
                                           {"pad_too_wide", pad_too_wide},
                                           {"mrgsort_list_too_long", mrgsort_list_too_long},
                                           {"mrgsort_at_limit", mrgsort_at_limit},
                                           {"mrgsort_overlap", mrgsort_overlap},
                                           {"pipe_barrier_scalar", pipe_barrier_scalar},
                                           {"buffers_at_limit", buffers_at_limit},
                                           {"too_many_buffers", too_many_buffers},
                                           {"que_buffers_at_limit", que_buffers_at_limit},
                                           {"too_many_que_buffers", too_many_que_buffers},
                                           {"bf16_cast_odd", bf16_cast_odd},
                                           {"duplicate_int8", duplicate_int8},
                                           {"strided_copy_empty", strided_copy_empty},
                                           {"pair_swap", pair_swap},
                                           {"shift_full_width", shift_full_width},
                                           {"shift_past_width", shift_past_width},
                                           {"or_uint32", or_uint32},
                                           {"shift_float", shift_float},
                                           {"shift_partial_overlap", shift_partial_overlap},
                                           {"shift_repeat_ahead", shift_repeat_ahead},
                                           {"add_partial_overlap", add_partial_overlap},
                                           {"muls_reads_earlier_repeat", muls_reads_earlier_repeat},
                                           {"cast_widening_in_place", cast_widening_in_place},
                                           {"cast_narrowing_shifted", cast_narrowing_shifted},
                                           {"overlap_at_limit", overlap_at_limit}};
  return kernels;
}

void Run(c10::string_view rule, int64_t blockDim) {
  auto it = FindKernel(Kernels(), rule, "fault kernel");
  std::vector<float> gm(kElems, 1.0f);
  RaiseRuleErrors([&] {
    AscendC::twin::Launch(it->first.c_str(), uint32_t(blockDim), it->second, reinterpret_cast<GM_ADDR>(gm.data()));
  });
}

std::vector<std::string> Names() { return KernelNames(Kernels()); }
}  // namespace

TORCH_LIBRARY(twin_faults, m) {
  m.def("run(str rule, int block_dim=4) -> ()", &Run);
  m.def("names() -> str[]", &Names);
}
