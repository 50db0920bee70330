// CPU twin, sorting (A2 / 910B, "layout one"): Concat, Sort<T, isFullSort> (Sort32 per 32-element
// repeat, then a full merge when isFullSort), MrgSort of up to four sorted lists, Extract,
// GetSortLen / GetSortOffset. A sorted element is an 8-byte (score, index) pair: float score in
// bytes 0..3, or half score in bytes 0..1 with 2 reserved bytes; uint32 index in bytes 4..7.
// Order is descending by score; equal scores keep input order (the lower index, or the lower
// list of MrgSort, first), as the API documents.
#pragma once
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "twin_core.h"
#include "twin_record.h"
#include "twin_tensor.h"
#include "twin_types.h"

namespace AscendC {

template <typename T>
inline uint32_t GetSortLen(const uint32_t elemCount) {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "GetSortLen: half or float");
  return elemCount * (8 / sizeof(T));
}
template <typename T>
inline uint32_t GetSortOffset(const uint32_t elemOffset) {
  return GetSortLen<T>(elemOffset);
}

template <typename T>
struct MrgSortSrcList {
  MrgSortSrcList() = default;
  MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                 const LocalTensor<T>& src4In)
      : src1(src1In), src2(src2In), src3(src3In), src4(src4In) {}
  LocalTensor<T> src1, src2, src3, src4;
};

struct MrgSort4Info {
  MrgSort4Info() = default;
  MrgSort4Info(const uint16_t elementLengthsIn[4], const bool ifExhaustedSuspensionIn, const uint16_t validBitIn,
               const uint16_t repeatTimesIn)
      : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn) {
    for (int i = 0; i < 4; ++i) elementLengths[i] = elementLengthsIn[i];
  }
  uint16_t elementLengths[4] = {0, 0, 0, 0};
  bool ifExhaustedSuspension = false;
  uint16_t validBit = 0;
  uint16_t repeatTimes = 1;
};

namespace twin {
struct SortPair {
  float score;
  uint32_t index;
};
template <typename T>
inline SortPair ReadPair(const T* base, uint32_t i) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(base) + 8ull * i;
  T s;
  uint32_t idx;
  std::memcpy(&s, p, sizeof(T));
  std::memcpy(&idx, p + 4, 4);
  return {static_cast<float>(s), idx};
}
template <typename T>
inline void WritePair(T* base, uint32_t i, SortPair v) {
  uint8_t* p = reinterpret_cast<uint8_t*>(base) + 8ull * i;
  const T s = static_cast<T>(v.score);
  std::memset(p, 0, 8);
  std::memcpy(p, &s, sizeof(T));
  std::memcpy(p + 4, &v.index, 4);
}
template <typename T>
inline void CheckSortType(const char* api) {
  if constexpr (!(std::is_same_v<T, half> || std::is_same_v<T, float>))
    Violation("dtype support", std::string(api) + " supports half and float scores only, got " + DtypeName<T>());
}
// A sort instruction for the record: a vector-pipe op reading `reads` and writing `writes` (each
// output defined iff everything read is: the sanitizer's reduction rule).
template <typename T>
inline void RecordSort(const char* api, uint64_t count, std::initializer_list<Access> reads,
                       std::initializer_list<Access> writes) {
  Instr in = OpInstr(Pipe::V, api, DtypeName<T>(), count, 8);
  for (const Access& r : reads) in.Add(r);
  for (Access w : writes) {
    w.init = Init::kReduce;
    in.Add(w);
  }
  Emit(in);
}
// The stable descending sort of the full Sort, as a byte-wise LSD radix sort: the same order as a
// stable comparison sort by score (equal scores, -0 and +0 included, keep input order), in a few
// linear passes instead of n log n comparisons. NaN scores have no such order: false, and the
// caller's comparison sort decides, as before.
inline bool RadixSortDescending(std::vector<SortPair>& pairs) {
  const size_t n = pairs.size();
  if (n == 0) return true;
  std::vector<uint32_t> keys(n);
  uint32_t counts[4][256] = {};
  for (size_t i = 0; i < n; ++i) {
    const float f = pairs[i].score;
    if (f != f) return false;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (f == 0.0f) u = 0;                       // -0 ties with +0
    u = (u & 0x80000000u) ? ~u : u | 0x80000000u;  // ascending as unsigned ...
    keys[i] = ~u;                                  // ... then descending
    for (int b = 0; b < 4; ++b) ++counts[b][(keys[i] >> (8 * b)) & 0xFF];
  }
  std::vector<SortPair> other(n);
  std::vector<uint32_t> otherKeys(n);
  for (int b = 0; b < 4; ++b) {
    const int shift = 8 * b;
    if (counts[b][(keys[0] >> shift) & 0xFF] == n) continue;  // every key has this byte: nothing moves
    uint32_t at[256], sum = 0;
    for (int d = 0; d < 256; ++d) at[d] = sum, sum += counts[b][d];
    for (size_t i = 0; i < n; ++i) {
      const uint32_t to = at[(keys[i] >> shift) & 0xFF]++;
      other[to] = pairs[i], otherKeys[to] = keys[i];
    }
    pairs.swap(other), keys.swap(otherKeys);
  }
  return true;
}
// A UB operand's start address a multiple of `bytes` (MrgSort's source lists need 8, the rest 32).
template <typename T>
inline void CheckStart(const LocalTensor<T>& t, uint32_t bytes, const char* api) {
  if (t.TwinUbOffset() % bytes != 0)
    Violation(bytes == kBlockBytes ? "32-byte alignment" : "sort params",
              std::string(api) + " starts at UB byte " + std::to_string(t.TwinUbOffset()) + ", not a multiple of " +
                  std::to_string(bytes));
}
inline void CheckRepeat(int32_t repeatTime, const char* api) {
  if (repeatTime < 0 || repeatTime > 255)
    Violation("repeat range", std::string(api) + " repeatTime " + std::to_string(repeatTime) + " outside [0, 255]");
}
}  // namespace twin

// On A2 the scores are used in place: concat becomes src.
template <typename T>
inline void Concat(LocalTensor<T>& concat, const LocalTensor<T>& src, const LocalTensor<T>& tmp,
                   const int32_t repeatTime) {
  twin::CheckSortType<T>("Concat");
  twin::CheckRepeat(repeatTime, "Concat");
  src.TwinCheckAligned("Concat src");  // Concat.md: src, tmp (and so concat) 32-byte aligned
  tmp.TwinCheckAligned("Concat tmp");
  concat = src;
}

template <typename T, bool isFullSort>
inline void Sort(const LocalTensor<T>& dst, const LocalTensor<T>& concat, const LocalTensor<uint32_t>& index,
                 LocalTensor<T>& tmp, const int32_t repeatTime) {
  twin::CheckSortType<T>("Sort");
  twin::CheckRepeat(repeatTime, "Sort");
  const uint32_t n = uint32_t(repeatTime) * 32;
  concat.TwinCheckCount(n, "Sort concat");
  index.TwinCheckCount(n, "Sort index");
  dst.TwinCheckCount(GetSortLen<T>(n), "Sort dst");
  dst.TwinCheckAligned("Sort dst");
  concat.TwinCheckAligned("Sort concat");
  index.TwinCheckAligned("Sort index");
  tmp.TwinCheckAligned("Sort tmp");
  if (isFullSort) tmp.TwinCheckCount(GetSortLen<T>(n), "Sort tmp");  // DoFullSort copies dst into tmp
  if (twin::Recording())
    twin::RecordSort<T>("Sort", n, {concat.TwinRead(n), index.TwinRead(n)},
                        {dst.TwinWrite(GetSortLen<T>(n), twin::Init::kReduce)});
  std::vector<twin::SortPair> pairs(n);
  const T* scores = concat.TwinData();
  const uint32_t* indices = index.TwinData();
  for (uint32_t i = 0; i < n; ++i) pairs[i] = {static_cast<float>(scores[i]), indices[i]};
  if (!isFullSort || !twin::RadixSortDescending(pairs)) {  // Sort32 sorts each repeat; the full sort all
    const auto descending = [](const twin::SortPair& a, const twin::SortPair& b) { return a.score > b.score; };
    const uint32_t run = isFullSort ? n : 32;
    for (uint32_t s = 0; s < n; s += run) std::stable_sort(pairs.begin() + s, pairs.begin() + s + run, descending);
  }
  T* out = dst.TwinData();
  for (uint32_t i = 0; i < n; ++i) twin::WritePair(out, i, pairs[i]);
}

template <typename T>
inline void Extract(const LocalTensor<T>& dstValue, const LocalTensor<uint32_t>& dstIndex, const LocalTensor<T>& sorted,
                    const int32_t repeatTime) {
  twin::CheckSortType<T>("Extract");
  twin::CheckRepeat(repeatTime, "Extract");
  const uint32_t n = uint32_t(repeatTime) * 32;
  sorted.TwinCheckCount(GetSortLen<T>(n), "Extract sorted");
  dstValue.TwinCheckCount(n, "Extract dstValue");
  dstIndex.TwinCheckCount(n, "Extract dstIndex");
  if (twin::Recording())
    twin::RecordSort<T>("Extract", n, {sorted.TwinRead(GetSortLen<T>(n))},
                        {dstValue.TwinWrite(n, twin::Init::kReduce), dstIndex.TwinWrite(n, twin::Init::kReduce)});
  for (uint32_t i = 0; i < n; ++i) {
    const twin::SortPair p = twin::ReadPair(sorted.TwinData(), i);
    dstValue.TwinData()[i] = static_cast<T>(p.score);
    dstIndex.TwinData()[i] = p.index;
  }
}

// Merges the lists flagged in validBit (0b0011, 0b0111 or 0b1111), each sorted descending, into dst.
// With isExhaustedSuspension the merge stops as soon as one list runs out; sortedNum then says how
// many elements of each list went to dst. A2 rules (基础API MrgSort.md, 高阶API MrgSort-93.md;
// impl/basic_api/kernel_operator_proposal_intf_impl.h MrgSort): list lengths in [0, 4095] (uint16_t
// fields of one register), source lists 8-byte aligned, dst 32-byte aligned, no source overlapping dst.
template <typename T, bool isExhaustedSuspension = false>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& sortList, const uint16_t elementCountList[4],
                    uint32_t sortedNum[4], uint16_t validBit, const int32_t repeatTime) {
  twin::CheckSortType<T>("MrgSort");
  if (validBit != 0b0011 && validBit != 0b0111 && validBit != 0b1111)
    twin::Violation("sort params",
                    "MrgSort validBit must be 0b0011, 0b0111 or 0b1111, got " + std::to_string(validBit));
  if (repeatTime != 1)
    twin::Violation("sort params",
                    "MrgSort repeatTime " + std::to_string(repeatTime) +
                        ": A2 takes 1..255 (repeats need four equal, adjacent lists); the twin models 1");
  const LocalTensor<T>* lists[4] = {&sortList.src1, &sortList.src2, &sortList.src3, &sortList.src4};
  uint32_t pos[4] = {0, 0, 0, 0}, total = 0;
  int nLists = validBit == 0b0011 ? 2 : validBit == 0b0111 ? 3 : 4;
  constexpr uint16_t kMaxListLen = 4095;
  for (int l = 0; l < nLists; ++l) {
    if (elementCountList[l] > kMaxListLen)
      twin::Violation("sort params", "MrgSort list " + std::to_string(l + 1) + " of " +
                                         std::to_string(elementCountList[l]) + " elements: at most 4095 on A2");
    lists[l]->TwinCheckCount(GetSortLen<T>(elementCountList[l]), "MrgSort source list");
    twin::CheckStart(*lists[l], 8, "MrgSort source list");
    total += elementCountList[l];
  }
  dst.TwinCheckCount(GetSortLen<T>(total), "MrgSort dst");
  twin::CheckStart(dst, twin::kBlockBytes, "MrgSort dst");
  const uint64_t dstAt = dst.TwinUbOffset(), dstEnd = dstAt + 8ull * total;
  for (int l = 0; l < nLists; ++l) {
    const uint64_t at = lists[l]->TwinUbOffset(), end = at + 8ull * elementCountList[l];
    if (end > at && dstEnd > dstAt && at < dstEnd && dstAt < end)
      twin::Violation("operand overlap", "MrgSort source list " + std::to_string(l + 1) + " UB bytes [" +
                                             std::to_string(at) + ", " + std::to_string(end) + ") overlaps dst [" +
                                             std::to_string(dstAt) + ", " + std::to_string(dstEnd) + ")");
  }
  std::vector<twin::SortPair> out;
  out.reserve(total);
  const T* data[4] = {nullptr, nullptr, nullptr, nullptr};
  twin::SortPair head[4];  // each list's next pair, read once
  int live = 0;
  for (int l = 0; l < nLists; ++l) {
    data[l] = lists[l]->TwinData();
    if (elementCountList[l] > 0) head[l] = twin::ReadPair(data[l], 0), ++live;
  }
  while (out.size() < total) {
    if (isExhaustedSuspension && live < nLists) break;  // a list ran out: stop here
    int best = -1;
    for (int l = 0; l < nLists; ++l)
      if (pos[l] < elementCountList[l] && (best < 0 || head[l].score > head[best].score)) best = l;  // ties: lower list
    out.push_back(head[best]);
    if (++pos[best] < elementCountList[best]) head[best] = twin::ReadPair(data[best], pos[best]);
    else --live;
  }
  if (twin::Recording()) {
    twin::Instr in = twin::OpInstr(twin::Pipe::V, "MrgSort", twin::DtypeName<T>(), out.size(), 8);
    for (int l = 0; l < nLists; ++l) in.Add(lists[l]->TwinRead(GetSortLen<T>(elementCountList[l])));
    in.Add(dst.TwinWrite(GetSortLen<T>(uint32_t(out.size())), twin::Init::kReduce));
    twin::Emit(in);
  }
  for (uint32_t i = 0; i < out.size(); ++i) twin::WritePair(dst.TwinData(), i, out[i]);
  for (int l = 0; l < 4; ++l) sortedNum[l] = l < nLists ? pos[l] : 0;
}

template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& sortList, const MrgSort4Info& params) {
  uint32_t sortedNum[4];
  if (params.ifExhaustedSuspension)
    MrgSort<T, true>(dst, sortList, params.elementLengths, sortedNum, params.validBit, params.repeatTimes);
  else MrgSort<T, false>(dst, sortList, params.elementLengths, sortedNum, params.validBit, params.repeatTimes);
}

}  // namespace AscendC
