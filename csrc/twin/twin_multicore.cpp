// CPU twin, the sanitizer's multi-core check: after every block of a launch ran, GM bytes two
// blocks write (unless both atomic-add) or one block reads and another writes.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "twin_core.h"
#include "twin_sanitizer.h"
#include "twin_span.h"

namespace AscendC {
namespace twin {

// ---- multi-core GM overlap ----
namespace {
struct Interval {
  uint64_t begin, end;
  uint32_t block;
  const GmAccess* access;
};
struct Top2 {  // the two largest ends seen, from different blocks
  const Interval* first = nullptr;
  const Interval* second = nullptr;
  void Add(const Interval& v) {
    if (!first || v.end > first->end) {
      if (first && first->block != v.block) second = first;
      first = &v;
    } else if (v.block != first->block && (!second || v.end > second->end)) {
      second = &v;
    }
  }
  const Interval* Meets(const Interval& v) const {  // an interval of another block reaching past v.begin
    const Interval* c = first && first->block != v.block ? first : second;
    return c && c->end > v.begin ? c : nullptr;
  }
};
// By address; equal starts by block, then by the access's serial: a report names the same pair in the same order
// on every run, whatever addresses the buffers got (an unstable sort on begin alone does not).
bool ByAddress(const Interval& x, const Interval& y) {
  if (x.begin != y.begin) return x.begin < y.begin;
  if (x.block != y.block) return x.block < y.block;
  return x.access->serial < y.access->serial;
}
}  // namespace

namespace {
// Cores that synchronise: every pair of overlapping accesses of two cores, one a write (two
// atomic-add writes aside), must be ordered by a cross-core flag or SyncAll.
void CheckCrossCore(const char* kernel, std::vector<Interval>& all, const CrossOrder& order) {
  std::sort(all.begin(), all.end(), ByAddress);
  std::vector<const Interval*> open;
  for (const Interval& v : all) {
    size_t keep = 0;
    for (const Interval* w : open)
      if (w->end > v.begin) open[keep++] = w;
    open.resize(keep);
    for (const Interval* w : open) {
      if (w->block == v.block || !(w->access->write || v.access->write)) continue;
      if (w->access->atomic && v.access->atomic) continue;
      const GmAccess &a = *w->access, &b = *v.access;
      if (order.Before(w->block, a.epoch, v.block, b.epoch) || order.Before(v.block, b.epoch, w->block, a.epoch))
        continue;
      const std::string range = Bytes(Space::GM, v.begin, std::min(v.end, w->end));
      throw RuleError("Ascend C twin: kernel '" + std::string(kernel) + "': [cross-core race] " +
                      order.names[w->block] + " " + a.op + " #" + std::to_string(a.serial) +
                      (a.write ? " writes " : " reads ") + range + " and " + order.names[v.block] + " " + b.op + " #" +
                      std::to_string(b.serial) + (b.write ? " writes" : " reads") +
                      " it, with no cross-core flag or SyncAll ordering the two (CrossCoreSetFlag after the "
                      "write, CrossCoreWaitFlag before the read)");
    }
    open.push_back(&v);
  }
}
}  // namespace

void CheckMultiCore(const char* kernel, uint32_t blockDim, std::vector<std::vector<GmAccess>>& perBlock,
                    const CrossOrder* order) {
  std::vector<Interval> all;
  for (uint32_t b = 0; b < perBlock.size(); ++b) {
    for (const GmAccess& a : perBlock[b]) {
      if (a.write && a.atomic && !order) continue;  // atomic-add writes may overlap each other
      ForEachRun(a.span, [&](uint64_t lo, uint64_t hi) {
        if (!all.empty() && all.back().access == &a && all.back().end == lo) all.back().end = hi;
        else if (hi > lo) all.push_back(Interval{lo, hi, b, &a});
      });
    }
  }
  if (order) return CheckCrossCore(kernel, all, *order);
  std::sort(all.begin(), all.end(), ByAddress);
  Top2 writes, reads;
  for (const Interval& v : all) {
    const Interval* other = writes.Meets(v);
    if (!other && v.access->write) other = reads.Meets(v);
    if (other) {
      const Interval& w = other->access->write ? *other : v;
      const Interval& r = other->access->write ? v : *other;
      const bool both = v.access->write && other->access->write;
      char head[200];
      std::snprintf(head, sizeof(head), "Ascend C twin: kernel '%s' blocks %u and %u of %u: [multi-core overlap] ",
                    kernel, other->block, v.block, blockDim);
      const std::string range = Bytes(Space::GM, v.begin, std::min(v.end, other->end));
      std::string what =
          both ? "block " + std::to_string(other->block) + " " + other->access->op + " #" +
                     std::to_string(other->access->serial) + " and block " + std::to_string(v.block) + " " +
                     v.access->op + " #" + std::to_string(v.access->serial) + " both write " + range +
                     " (blocks run in any order and concurrently; only atomic-add writes may overlap)"
               : "block " + std::to_string(r.block) + " " + r.access->op + " #" + std::to_string(r.access->serial) +
                     " reads " + range + " that block " + std::to_string(w.block) + " " + w.access->op + " #" +
                     std::to_string(w.access->serial) +
                     " writes in the same launch (no order between blocks without a cross-core sync)";
      throw RuleError(head + what);
    }
    (v.access->write ? writes : reads).Add(v);
  }
}

}  // namespace twin
}  // namespace AscendC
