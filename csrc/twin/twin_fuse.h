// CPU twin, fused execution: a block's element-wise instructions (arithmetic, scalar forms, Cast,
// Duplicate, SwiGLU, DataCopy / DataCopyPad UB->GM and UB->UB) are checked and recorded when
// issued, as always, but their data movement is deferred into a run (GM->UB loads run at issue,
// after the run only if it touches their bytes: one bulk copy streams faster than strips). The run executes when
// something observes data another way (a reduction, Gather, Sort, Matmul, a strided DataCopy:
// everything that reaches UB through LocalTensor::TwinData(); a GetValue/SetValue that touches
// bytes the run writes, or reads for SetValue), at a nested launch, or at block end, strip by
// strip over L1-sized pieces of element indices: each strip goes through every instruction of the
// run before the next strip, so a tile crosses the cache hierarchy once instead of once per
// instruction, and the GM store of a tile joins the arithmetic on it.
//
// Why the result is bit-identical: element j of an element-wise instruction depends only on
// element j of its operands, so reordering (instruction, strip) pairs is safe as long as any two
// operands of the run that share bytes (one of them written) start at the same byte and have the
// same element size: then only element j meets element j, in the same strip, in program order.
// The GM side of a row copy is strided (not indexed like the run): it may share no byte with a
// write. An instruction that breaks this (a shifted or re-typed view of a buffer in the run, or
// of its own operands) first runs the pending run, and runs alone. The strip functions are the
// ones unfused execution uses over the whole range.
//
// The one instruction record (twin_record.h) is emitted at issue, unchanged: the sanitizer and the
// pipeline model see the program order; only the host's execution of the data is reordered.
// ASCENDC_TWIN_FUSE=1 turns it on (read at every launch; default off, see FuseEnabled for why):
// otherwise each instruction runs when issued.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace AscendC {
namespace twin {

struct FusedOp;
using StripFn = void (*)(const FusedOp& op, uint32_t begin, uint32_t end);

// One deferred instruction: `run` computes elements [begin, end) of dst from its sources.
struct FusedOp {
  StripFn run = nullptr;
  uint8_t* dst = nullptr;
  const uint8_t* src[3] = {nullptr, nullptr, nullptr};
  uint8_t dstElem = 0, nSrc = 0;
  uint8_t srcElem[3] = {0, 0, 0};
  uint32_t count = 0;
  // A strided operand (a GM side of a row copy) is not indexed like dst: its byte extent is given
  // here, and it may share no byte with any written operand of the run (bit i: src i, bit 3: dst).
  uint8_t strided = 0;
  bool eagerOk = false;  // runs at issue, after the run only if they share bytes (GM -> UB loads)
  uint64_t stridedBytes[4] = {0, 0, 0, 0};
  alignas(8) unsigned char fn[40];  // the element function (a lambda and its scalar, trivially copyable)

  template <typename F>
  const F& Fn() const {
    return *reinterpret_cast<const F*>(fn);
  }
};

void RunOrDefer(const FusedOp& op);  // queues op (fusion on) or runs it now
void FlushFused();                   // runs the pending run; a no-op when nothing is pending
inline thread_local uint32_t tFusedPending = 0;  // defined here for the same reason as tRecorder
inline void Observe() {  // UB data is about to be read or written outside the run
  if (tFusedPending) FlushFused();
}
// A scalar access to `bytes` bytes at p (GetValue/SetValue): the run executes first only if it
// writes those bytes (or, for a write, reads them); otherwise the access commutes with it.
void ObserveRangeSlow(const void* p, uint64_t bytes, bool write);
inline void ObserveRange(const void* p, uint64_t bytes, bool write) {
  if (tFusedPending) ObserveRangeSlow(p, bytes, write);
}
void BeginFusedBlock(bool on);  // per block: fusion on/off, nothing pending
void DropFused();               // the block failed: pending arithmetic is abandoned
bool FuseEnabled();             // ASCENDC_TWIN_FUSE=1 (default off)

template <typename F, typename D, typename... S>
inline FusedOp MakeFused(StripFn run, D* dst, F f, const S*... srcs) {
  static_assert(std::is_trivially_copyable_v<F> && sizeof(F) <= sizeof(FusedOp::fn), "element function too big");
  FusedOp op;
  op.run = run;
  op.dst = reinterpret_cast<uint8_t*>(dst);
  op.dstElem = uint8_t(sizeof(D));
  const uint8_t* ptrs[] = {reinterpret_cast<const uint8_t*>(srcs)..., nullptr};
  const uint8_t sizes[] = {uint8_t(sizeof(S))..., 0};
  op.nSrc = uint8_t(sizeof...(S));
  for (int i = 0; i < op.nSrc; ++i) op.src[i] = ptrs[i], op.srcElem[i] = sizes[i];
  std::memcpy(op.fn, &f, sizeof(F));
  return op;
}

// Strip functions: dst[i] = f(src0[i], ...) for i in [begin, end).
template <typename D, typename F>
void StripNullary(const FusedOp& op, uint32_t b, uint32_t e) {
  const F& f = op.Fn<F>();
  D* d = reinterpret_cast<D*>(op.dst);
  for (uint32_t i = b; i < e; ++i) d[i] = f();
}
template <typename D, typename S, typename F>
void StripUnary(const FusedOp& op, uint32_t b, uint32_t e) {
  const F& f = op.Fn<F>();
  D* d = reinterpret_cast<D*>(op.dst);
  const S* x = reinterpret_cast<const S*>(op.src[0]);
  for (uint32_t i = b; i < e; ++i) d[i] = static_cast<D>(f(x[i]));
}
template <typename D, typename S, typename F>
void StripBinary(const FusedOp& op, uint32_t b, uint32_t e) {
  const F& f = op.Fn<F>();
  D* d = reinterpret_cast<D*>(op.dst);
  const S* x = reinterpret_cast<const S*>(op.src[0]);
  const S* y = reinterpret_cast<const S*>(op.src[1]);
  for (uint32_t i = b; i < e; ++i) d[i] = static_cast<D>(f(x[i], y[i]));
}
// f(x, y, acc): the accumulator is dst itself (MulAddDst, FusedMulAdd)
template <typename D, typename S, typename F>
void StripTernaryAcc(const FusedOp& op, uint32_t b, uint32_t e) {
  const F& f = op.Fn<F>();
  D* d = reinterpret_cast<D*>(op.dst);
  const S* x = reinterpret_cast<const S*>(op.src[0]);
  const S* y = reinterpret_cast<const S*>(op.src[1]);
  for (uint32_t i = b; i < e; ++i) d[i] = static_cast<D>(f(x[i], y[i], d[i]));
}
// Whole-range functions (Cast's converters): f(dst + b, src + b, e - b)
template <typename D, typename S, typename F>
void StripRange(const FusedOp& op, uint32_t b, uint32_t e) {
  op.Fn<F>()(reinterpret_cast<D*>(op.dst) + b, reinterpret_cast<const S*>(op.src[0]) + b, e - b);
}

template <typename D, typename F>
inline void FuseNullary(D* dst, uint32_t count, F f) {
  FusedOp op = MakeFused(&StripNullary<D, F>, dst, f);
  op.count = count;
  RunOrDefer(op);
}
template <typename D, typename S, typename F>
inline void FuseUnary(D* dst, const S* src, uint32_t count, F f) {
  FusedOp op = MakeFused(&StripUnary<D, S, F>, dst, f, src);
  op.count = count;
  RunOrDefer(op);
}
template <typename D, typename S, typename F>
inline void FuseBinary(D* dst, const S* a, const S* b, uint32_t count, F f) {
  FusedOp op = MakeFused(&StripBinary<D, S, F>, dst, f, a, b);
  op.count = count;
  RunOrDefer(op);
}
template <typename D, typename S, typename F>
inline void FuseTernaryAcc(D* dst, const S* a, const S* b, uint32_t count, F f) {
  FusedOp op = MakeFused(&StripTernaryAcc<D, S, F>, dst, f, a, b, static_cast<const D*>(dst));
  op.count = count;
  RunOrDefer(op);
}
template <typename D, typename S, typename F>
inline void FuseRange(D* dst, const S* src, uint32_t count, F f) {
  FusedOp op = MakeFused(&StripRange<D, S, F>, dst, f, src);
  op.count = count;
  RunOrDefer(op);
}

}  // namespace twin
}  // namespace AscendC
