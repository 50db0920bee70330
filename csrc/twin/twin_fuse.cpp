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
  uint8_t elem;
};
inline Bytes Of(const uint8_t* p, uint8_t elem, uint32_t count) { return {p, p + uint64_t(elem) * count, elem}; }
// Two operands that share bytes must be the same view (same start, same element size).
inline bool Compatible(const Bytes& a, const Bytes& b) {
  if (a.end <= b.begin || b.end <= a.begin || a.begin == a.end || b.begin == b.end) return true;
  return a.begin == b.begin && a.elem == b.elem;
}
// May `x` be reordered strip-wise against `y`? Only pairs with a write matter.
bool Independent(const FusedOp& x, const FusedOp& y) {
  const Bytes xd = Of(x.dst, x.dstElem, x.count), yd = Of(y.dst, y.dstElem, y.count);
  if (!Compatible(xd, yd)) return false;
  for (int i = 0; i < y.nSrc; ++i)
    if (!Compatible(xd, Of(y.src[i], y.srcElem[i], y.count))) return false;
  for (int i = 0; i < x.nSrc; ++i)
    if (!Compatible(yd, Of(x.src[i], x.srcElem[i], x.count))) return false;
  return true;
}
bool SelfCompatible(const FusedOp& x) {
  const Bytes xd = Of(x.dst, x.dstElem, x.count);
  for (int i = 0; i < x.nSrc; ++i)
    if (!Compatible(xd, Of(x.src[i], x.srcElem[i], x.count))) return false;
  return true;
}
}  // namespace

thread_local uint32_t tFusedPending = 0;

bool FuseEnabled() {
  const char* v = std::getenv("ASCENDC_TWIN_FUSE");
  return !(v && v[0] == '0');
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

void RunOrDefer(const FusedOp& op) {
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
