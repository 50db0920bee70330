// CPU twin, fused execution: the pending run of one block and its strip-by-strip execution.
#include "twin_fuse.h"

#include <algorithm>
#include <cstdlib>

namespace AscendC {
namespace twin {

namespace {
constexpr uint32_t kMaxRun = 32;
// Element indices per strip: a strip of a run's distinct fp32 operands stays in the 32 KiB L1D.
constexpr uint32_t kStripElems = 1024;

struct Run {
  FusedOp ops[kMaxRun];
  bool on = false;
};
thread_local Run tRun;

struct Bytes {
  const uint8_t* begin;
  const uint8_t* end;
  uint8_t elem;  // 0: strided, not indexed like the run's elements
};
inline Bytes Dst(const FusedOp& x) {
  if (x.strided & 8) return {x.dst, x.dst + x.stridedBytes[3], 0};
  return {x.dst, x.dst + uint64_t(x.dstElem) * x.count, x.dstElem};
}
inline Bytes Src(const FusedOp& x, int i) {
  if (x.strided & (1 << i)) return {x.src[i], x.src[i] + x.stridedBytes[i], 0};
  return {x.src[i], x.src[i] + uint64_t(x.srcElem[i]) * x.count, x.srcElem[i]};
}
// Two operands that share bytes must be the same view (same start, same element size).
inline bool Compatible(const Bytes& a, const Bytes& b) {
  if (a.end <= b.begin || b.end <= a.begin || a.begin == a.end || b.begin == b.end) return true;
  return a.begin == b.begin && a.elem == b.elem && a.elem != 0;
}
// May `x` be reordered strip-wise against `y`? Only pairs with a write matter.
bool Independent(const FusedOp& x, const FusedOp& y) {
  const Bytes xd = Dst(x), yd = Dst(y);
  if (!Compatible(xd, yd)) return false;
  for (int i = 0; i < y.nSrc; ++i)
    if (!Compatible(xd, Src(y, i))) return false;
  for (int i = 0; i < x.nSrc; ++i)
    if (!Compatible(yd, Src(x, i))) return false;
  return true;
}
bool SelfCompatible(const FusedOp& x) {
  const Bytes xd = Dst(x);
  for (int i = 0; i < x.nSrc; ++i)
    if (!Compatible(xd, Src(x, i))) return false;
  return true;
}
}  // namespace

// Off unless ASCENDC_TWIN_FUSE=1: measured on AMD EPYC Zen 3 (AVX2), fused runs take 0.93-1.01x the
// CPU time of issue-order execution (README "Benchmarks"): UB tiles already sit in L2, so strips in
// L1 gain little, while deferring costs tens of ns per instruction and the kernels issue many short ones.
bool FuseEnabled() {
  const char* v = std::getenv("ASCENDC_TWIN_FUSE");
  return v && v[0] == '1';
}

void BeginFusedBlock(bool on) {
  tFusedPending = 0;
  tRun.on = on;
}

void DropFused() { tFusedPending = 0; }

void FlushFused() {
  const uint32_t n = tFusedPending;
  if (n == 0) return;
  tFusedPending = 0;  // first: a strip function never re-enters, but an exception must not replay
  FusedOp* ops = tRun.ops;
  if (n == 1) {
    ops[0].run(ops[0], 0, ops[0].count);
    return;
  }
  uint32_t longest = 0;
  for (uint32_t i = 0; i < n; ++i) longest = std::max(longest, ops[i].count);
  for (uint32_t b = 0; b < longest; b += kStripElems) {
    const uint32_t e = std::min(longest, b + kStripElems);
    for (uint32_t i = 0; i < n; ++i)
      if (b < ops[i].count) ops[i].run(ops[i], b, std::min(e, ops[i].count));
  }
}

void ObserveRangeSlow(const void* p, uint64_t bytes, bool write) {
  const Bytes at{static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + bytes, 0};
  auto meets = [&](const Bytes& o) { return o.begin < at.end && at.begin < o.end; };
  for (uint32_t i = 0; i < tFusedPending; ++i) {
    const FusedOp& op = tRun.ops[i];
    bool hit = meets(Dst(op));
    for (int k = 0; write && !hit && k < op.nSrc; ++k) hit = meets(Src(op, k));
    if (hit) return FlushFused();
  }
}

// Runs op now, after the pending run only if the run touches op's bytes. GM -> UB loads go this way:
// one bulk copy streams from memory faster than the same bytes in 4 KiB pieces between arithmetic.
void RunNow(const FusedOp& op) {
  if (op.count == 0) return;
  if (tFusedPending) {
    const Bytes d = Dst(op);
    ObserveRangeSlow(d.begin, uint64_t(d.end - d.begin), true);
    for (int i = 0; tFusedPending && i < op.nSrc; ++i) {
      const Bytes si = Src(op, i);
      ObserveRangeSlow(si.begin, uint64_t(si.end - si.begin), false);
    }
  }
  op.run(op, 0, op.count);
}

void RunOrDefer(const FusedOp& op) {
  if (op.eagerOk) return RunNow(op);
  if (op.count == 0) return;
  if (!tRun.on || !SelfCompatible(op)) {
    FlushFused();
    op.run(op, 0, op.count);
    return;
  }
  bool fits = tFusedPending < kMaxRun;
  for (uint32_t i = 0; fits && i < tFusedPending; ++i) fits = Independent(tRun.ops[i], op);
  if (!fits) FlushFused();
  tRun.ops[tFusedPending++] = op;
}

}  // namespace twin
}  // namespace AscendC
