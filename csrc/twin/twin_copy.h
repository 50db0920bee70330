// CPU twin, data movement between GM and UB: DataCopy (count and strided forms) and DataCopyPad.
// Count-form lengths must be whole 32-byte blocks (the NPU silently drops the remainder);
// DataCopyPad lands each block padded to 32 bytes, and the twin fills padding it was not asked
// to fill with NaN bytes so a kernel that reads it shows wrong results at once.
#pragma once
#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <string>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "twin_fuse.h"
#include "twin_span.h"
#include "twin_tensor.h"

namespace AscendC {

struct DataCopyParams {
  DataCopyParams() {}
  DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;   // in 32-byte blocks
  uint16_t srcStride = 0;  // gap between blocks, in 32-byte blocks
  uint16_t dstStride = 0;
};

struct DataCopyExtParams {
  DataCopyExtParams() {}
  DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                    const uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes
  uint32_t srcStride = 0;  // gap: bytes on the GM side, 32-byte blocks on the UB side
  uint32_t dstStride = 0;
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() {}
  DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  T paddingValue = T(0);
};

namespace twin {
constexpr uint8_t kPoisonByte = 0xFF;  // all-ones: NaN in float, half and bfloat16

template <typename T>
inline void CheckCountBytes(uint32_t count, const char* api) {
  if ((uint64_t(count) * sizeof(T)) % kBlockBytes != 0) {
    Violation("32-byte alignment", std::string(api) + " of " + std::to_string(count) + " " + DtypeName<T>() + " = " +
                                       std::to_string(uint64_t(count) * sizeof(T)) +
                                       " bytes; count-form lengths must be multiples of 32 bytes (use DataCopyPad)");
  }
}
inline void CheckBlockCount(uint32_t n, const char* api) {
  if (n > kMaxBlockCount)
    Violation("data copy params",
              std::string(api) + " blockCount " + std::to_string(n) + " outside 0.." + std::to_string(kMaxBlockCount));
}
// DataCopyPad GM->UB and UB->GM on A2: blockCount in [0, 4095], and blockCount or blockLen 0 makes
// the call a NOP (DataCopyPad（GMToUB非对齐数据搬运）.md, DataCopyPad（UBToGM非对齐数据搬运）.md, 约束说明).
// True when there is nothing to do.
inline bool PadCopyIsNop(uint32_t blockCount, uint32_t blockLen, const char* api) {
  CheckBlockCount(blockCount, api);
  return blockCount == 0 || blockLen == 0;
}
// Copies blocks between two strided byte layouts; the one loop behind every form.
// GM tensors this large are written with streaming stores: like the MTE3 engine writing HBM,
// they bypass the cache instead of first reading every destination line (read-for-ownership).
constexpr uint64_t kStreamingGmBytes = 8u << 20;

inline void CopyRun(uint8_t* dst, const uint8_t* src, uint64_t bytes, bool streaming) {
#if defined(__AVX__)
  if (streaming && bytes >= 256) {
    const uint64_t head = std::min<uint64_t>((32 - (reinterpret_cast<uintptr_t>(dst) & 31)) & 31, bytes);
    std::memcpy(dst, src, head);
    dst += head, src += head, bytes -= head;
    for (; bytes >= 32; bytes -= 32, dst += 32, src += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
  }
#endif
  std::memcpy(dst, src, bytes);
}

inline void CopyBlocks(uint8_t* dst, uint64_t dstPitch, const uint8_t* src, uint64_t srcPitch, uint32_t blocks,
                       uint32_t blockBytes, bool streaming = false) {
  if (dstPitch == blockBytes && srcPitch == blockBytes) {  // no gaps: one run
    CopyRun(dst, src, uint64_t(blocks) * blockBytes, streaming);
    return;
  }
  for (uint32_t b = 0; b < blocks; ++b) CopyRun(dst + b * dstPitch, src + b * srcPitch, blockBytes, streaming);
}

// A contiguous copy as a fused instruction: GM -> UB copies join the run that reads them, UB -> GM
// copies the run that computed them (twin_fuse.h), so the tile crosses the cache once.
template <typename T, bool kStream>
void StripCopy(const FusedOp& op, uint32_t b, uint32_t e) {
  CopyRun(op.dst + uint64_t(b) * sizeof(T), op.src[0] + uint64_t(b) * sizeof(T), uint64_t(e - b) * sizeof(T), kStream);
}
template <typename T>
inline void FuseCopy(T* dst, const T* src, uint32_t count, bool streaming, bool load = false) {
  struct None {};
  FusedOp op = MakeFused(streaming ? &StripCopy<T, true> : &StripCopy<T, false>, dst, None{}, src);
  op.count = count;
  op.eagerOk = load;
  RunOrDefer(op);
}

// DataCopyPad's rows as a fused instruction, strip by strip over the UB side's element range:
// row r is UB bytes [r ubPitch, r ubPitch + rowBytes): `lead` bytes of left padding, blockLen
// bytes of data (GM r gmPitch on), padding up to rowBytes; the bytes between rows are untouched.
// The GM side is a strided operand (twin_fuse.h): it shares no byte with a write of the run.
template <typename T>
struct PadRows {
  uint64_t gmPitch;
  uint32_t ubPitch, lead, blockLen, rowBytes;
  uint8_t leftPad, rightPad, isPad;
  T padValue;
};
// Calls f(row, lo, hi) for each row's UB byte range [lo, hi) (row-relative) inside [b, e) bytes.
template <typename F>
inline void ForRowPieces(uint64_t b, uint64_t e, uint32_t ubPitch, uint32_t rowEnd, F f) {
  for (uint64_t r = b / ubPitch; r * ubPitch < e; ++r) {
    const uint64_t at = r * ubPitch;
    const uint64_t lo = b > at ? b - at : 0, hi = std::min<uint64_t>(e - at, rowEnd);
    if (lo < hi) f(r, uint32_t(lo), uint32_t(hi));
  }
}
template <typename T>
void StripPadIn(const FusedOp& op, uint32_t b, uint32_t e) {
  const PadRows<T>& g = op.Fn<PadRows<T>>();
  const uint32_t tail = g.lead + g.blockLen;
  ForRowPieces(uint64_t(b) * sizeof(T), uint64_t(e) * sizeof(T), g.ubPitch, g.rowBytes,
               [&](uint64_t r, uint32_t lo, uint32_t hi) {
                 uint8_t* row = op.dst + r * g.ubPitch;
                 const uint32_t dlo = std::max(lo, g.lead), dhi = std::min(hi, tail);
                 if (dlo < dhi) std::memcpy(row + dlo, op.src[0] + r * g.gmPitch + (dlo - g.lead), dhi - dlo);
                 if (lo < g.lead) std::memset(row + lo, kPoisonByte, std::min(hi, g.lead) - lo);
                 if (hi > tail) std::memset(row + std::max(lo, tail), kPoisonByte, hi - std::max(lo, tail));
                 if (!g.isPad) return;
                 T* elems = reinterpret_cast<T*>(row);
                 for (uint32_t i = lo / sizeof(T); i < std::min<uint32_t>(g.leftPad, hi / sizeof(T)); ++i)
                   elems[i] = g.padValue;
                 const uint32_t r0 = tail / sizeof(T), r1 = r0 + g.rightPad;
                 for (uint32_t i = std::max<uint32_t>(r0, lo / sizeof(T)); i < std::min<uint32_t>(r1, hi / sizeof(T));
                      ++i)
                   elems[i] = g.padValue;
               });
}
template <typename T, bool kStream>
void StripPadOut(const FusedOp& op, uint32_t b, uint32_t e) {
  const PadRows<T>& g = op.Fn<PadRows<T>>();
  ForRowPieces(uint64_t(b) * sizeof(T), uint64_t(e) * sizeof(T), g.ubPitch, g.blockLen,
               [&](uint64_t r, uint32_t lo, uint32_t hi) {
                 CopyRun(op.dst + r * g.gmPitch + lo, op.src[0] + r * g.ubPitch + lo, hi - lo, kStream);
               });
}

template <typename T>
inline bool Streaming(const GlobalTensor<T>& gm) {
  return gm.TwinBufferBytes() >= kStreamingGmBytes;
}

// One copy for the record: `ub` and `gm` spans, GM->UB on MTE2 or UB->GM on MTE3.
template <typename T>
inline void RecordCopy(const char* api, bool toUb, uint64_t elems, Span ub, Span gm, Init init = Init::kDefined,
                       uint32_t definedLead = 0, uint32_t definedBytes = 0) {
  Instr in = OpInstr(toUb ? Pipe::MTE2 : Pipe::MTE3, api, DtypeName<T>(), elems);
  Access u, g;
  u.span = ub, u.space = Space::UB, u.elemBytes = sizeof(T);
  g.span = gm, g.space = Space::GM, g.elemBytes = sizeof(T);
  if (toUb) {
    u.write = true, u.init = init, u.definedLead = definedLead, u.definedBytes = definedBytes;
  } else {
    g.write = true, u.leaves = true;
    in.atomicAdd = Core().atomicDtype != nullptr;
  }
  in.Add(toUb ? g : u);
  in.Add(toUb ? u : g);
  Emit(in);
}
// SetAtomicAdd<T> (SetAtomicAdd.md): a UB->GM copy adds its rows into GM, each sum rounded to T.
// True when it did (the copy is then done); a copy of another dtype than the atomic's is refused.
inline std::mutex& AtomicGmMutex() {
  static std::mutex m;
  return m;
}
template <typename T>
inline bool AtomicAddRows(T* gm, uint64_t gmPitch, const T* ub, uint64_t ubPitch, uint32_t rows, uint32_t rowBytes,
                          const char* api) {
  const char* atomic = Core().atomicDtype;
  if (!atomic) return false;
  if (std::strcmp(atomic, DtypeName<T>()) != 0)
    Violation("atomic add", std::string(api) + " of " + DtypeName<T>() + " while SetAtomicAdd<" + atomic +
                                "> is on: the atomic's dtype must be the copy's");
  FlushFused();
  // Atomic on the device: blocks on the pool's threads add into the same GM at once.
  std::lock_guard<std::mutex> lock(AtomicGmMutex());
  const uint32_t n = rowBytes / sizeof(T);
  for (uint32_t r = 0; r < rows; ++r) {
    T* d = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(gm) + r * gmPitch);
    const T* a = reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(ub) + r * ubPitch);
    for (uint32_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bfloat16_t>) d[i] = bfloat16_t(float(d[i]) + float(a[i]));
      else if constexpr (std::is_same_v<T, half>) d[i] = half(float(d[i]) + float(a[i]));
      else d[i] = T(d[i] + a[i]);
    }
  }
  return true;
}
inline Span Strided(uint64_t begin, uint64_t pitch, uint64_t blockBytes, uint32_t blocks) {
  return Span{begin, pitch, uint32_t(blockBytes), blocks};
}
template <typename T>
inline uint64_t GmAddr(const GlobalTensor<T>& g) {
  return reinterpret_cast<uint64_t>(g.GetPhyAddr());
}
}  // namespace twin

// ---- count form ----
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count) {
  twin::CheckCountBytes<T>(count, "DataCopy GM->UB");
  dst.TwinCheckAligned("DataCopy GM->UB");
  dst.TwinCheckCount(count, "DataCopy GM->UB");
  src.TwinCheckRange(count, "DataCopy GM->UB");
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  if (twin::Recording())
    twin::RecordCopy<T>("DataCopy", true, count, twin::Span::Run(dst.TwinUbOffset(), bytes),
                        twin::Span::Run(twin::GmAddr(src), bytes));
  twin::FuseCopy(dst.TwinPtr(), src.GetPhyAddr(), count, false, true);
}
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
  twin::CheckCountBytes<T>(count, "DataCopy UB->GM");
  src.TwinCheckAligned("DataCopy UB->GM");
  src.TwinCheckCount(count, "DataCopy UB->GM");
  dst.TwinCheckRange(count, "DataCopy UB->GM");
  if (twin::Recording()) {
    const uint64_t bytes = uint64_t(count) * sizeof(T);
    twin::RecordCopy<T>("DataCopy", false, count, twin::Span::Run(src.TwinUbOffset(), bytes),
                        twin::Span::Run(twin::GmAddr(dst), bytes));
  }
  const uint32_t bytes = uint32_t(uint64_t(count) * sizeof(T));
  if (twin::AtomicAddRows(dst.GetPhyAddr(), bytes, src.TwinData(), bytes, 1, bytes, "DataCopy UB->GM")) return;
  twin::FuseCopy(dst.GetPhyAddr(), src.TwinPtr(), count, twin::Streaming(dst));
}
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
  twin::CheckCountBytes<T>(count, "DataCopy UB->UB");
  dst.TwinCheckAligned("DataCopy UB->UB");
  src.TwinCheckAligned("DataCopy UB->UB");
  dst.TwinCheckCount(count, "DataCopy UB->UB");
  src.TwinCheckCount(count, "DataCopy UB->UB");
  if (twin::Recording()) {  // a UB -> UB copy runs on the vector pipe
    twin::Instr in = twin::OpInstr(twin::Pipe::V, "DataCopy", twin::DtypeName<T>(), count, sizeof(T));
    in.Add(src.TwinRead(count));
    in.Add(dst.TwinWrite(count, twin::Init::kElementwise));
    twin::Emit(in);
  }
  const T* from = src.TwinPtr();
  T* to = dst.TwinPtr();
  if (to != from && to < from + count && from < to + count) {  // overlapping, shifted: memmove semantics
    std::memmove(dst.TwinData(), src.TwinData(), uint64_t(count) * sizeof(T));
    return;
  }
  twin::FuseCopy(to, from, count, false);
}

// ---- strided form: every length and gap in 32-byte blocks ----
namespace twin {
template <typename T>
inline uint64_t StridedSpan(const DataCopyParams& p, uint16_t gap) {
  return (uint64_t(p.blockCount - 1) * (p.blockLen + gap) + p.blockLen) * kBlockBytes / sizeof(T);
}
// GM <-> UB strided form (DataCopy（GM与UB高维切分数据搬运）.md): blockCount in [0, 4095], blockLen and
// the gaps uint16_t blocks; blockCount or blockLen 0 is a NOP on A2. True when there is nothing to do.
inline bool StridedNop(const DataCopyParams& p, const char* api) {
  if (p.blockCount > kMaxBlockCount) CheckBlockCount(p.blockCount, api);
  return p.blockCount == 0 || p.blockLen == 0;
}
}  // namespace twin
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
  if (twin::StridedNop(p, "DataCopy GM->UB")) return;
  dst.TwinCheckAligned("DataCopy GM->UB");
  dst.TwinCheckCount(twin::StridedSpan<T>(p, p.dstStride), "DataCopy GM->UB");
  src.TwinCheckRange(twin::StridedSpan<T>(p, p.srcStride), "DataCopy GM->UB");
  if (twin::Recording()) {
    twin::RecordCopy<T>(
        "DataCopy", true, uint64_t(p.blockCount) * p.blockLen * 32 / sizeof(T),
        twin::Strided(dst.TwinUbOffset(), uint64_t(p.blockLen + p.dstStride) * 32, p.blockLen * 32u, p.blockCount),
        twin::Strided(twin::GmAddr(src), uint64_t(p.blockLen + p.srcStride) * 32, p.blockLen * 32u, p.blockCount));
  }
  twin::CopyBlocks(reinterpret_cast<uint8_t*>(dst.TwinData()), uint64_t(p.blockLen + p.dstStride) * 32,
                   reinterpret_cast<const uint8_t*>(src.GetPhyAddr()), uint64_t(p.blockLen + p.srcStride) * 32,
                   p.blockCount, p.blockLen * 32u);
}
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  if (twin::StridedNop(p, "DataCopy UB->GM")) return;
  src.TwinCheckAligned("DataCopy UB->GM");
  src.TwinCheckCount(twin::StridedSpan<T>(p, p.srcStride), "DataCopy UB->GM");
  dst.TwinCheckRange(twin::StridedSpan<T>(p, p.dstStride), "DataCopy UB->GM");
  if (twin::Recording()) {
    twin::RecordCopy<T>(
        "DataCopy", false, uint64_t(p.blockCount) * p.blockLen * 32 / sizeof(T),
        twin::Strided(src.TwinUbOffset(), uint64_t(p.blockLen + p.srcStride) * 32, p.blockLen * 32u, p.blockCount),
        twin::Strided(twin::GmAddr(dst), uint64_t(p.blockLen + p.dstStride) * 32, p.blockLen * 32u, p.blockCount));
  }
  if (twin::AtomicAddRows(dst.GetPhyAddr(), uint64_t(p.blockLen + p.dstStride) * 32, src.TwinData(),
                          uint64_t(p.blockLen + p.srcStride) * 32, p.blockCount, p.blockLen * 32u, "DataCopy UB->GM"))
    return;
  twin::CopyBlocks(reinterpret_cast<uint8_t*>(dst.GetPhyAddr()), uint64_t(p.blockLen + p.dstStride) * 32,
                   reinterpret_cast<const uint8_t*>(src.TwinData()), uint64_t(p.blockLen + p.srcStride) * 32,
                   p.blockCount, p.blockLen * 32u, twin::Streaming(dst));
}
// UB -> UB (copy_ubuf_to_ubuf, on the vector pipe like the count form): both sides 32-byte
// aligned, blockLen 0..65535 blocks; overlapping source and destination spans are refused.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  const char* api = "DataCopy UB->UB";
  if (twin::StridedNop(p, api)) return;  // the same ranges and NOP (DataCopy（UBToUB高维切分数据搬运）.md)
  dst.TwinCheckAligned(api);
  src.TwinCheckAligned(api);
  dst.TwinCheckCount(twin::StridedSpan<T>(p, p.dstStride), api);
  src.TwinCheckCount(twin::StridedSpan<T>(p, p.srcStride), api);
  const uint32_t blockBytes = p.blockLen * 32u;
  const twin::Span from =
      twin::Strided(src.TwinUbOffset(), uint64_t(p.blockLen + p.srcStride) * 32, blockBytes, p.blockCount);
  const twin::Span to =
      twin::Strided(dst.TwinUbOffset(), uint64_t(p.blockLen + p.dstStride) * 32, blockBytes, p.blockCount);
  uint64_t lo, hi;
  if (twin::SpansMeet(from, to, &lo, &hi))
    twin::Violation("data copy params", std::string(api) + " source and destination share UB bytes [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + ")");
  if (twin::Recording()) {
    const uint64_t elems = uint64_t(p.blockCount) * blockBytes / sizeof(T);
    twin::Instr in = twin::OpInstr(twin::Pipe::V, "DataCopy", twin::DtypeName<T>(), elems, sizeof(T));
    twin::Access r, w;
    r.span = from, r.elemBytes = sizeof(T);
    w.span = to, w.elemBytes = sizeof(T), w.write = true, w.init = twin::Init::kElementwise;
    in.Add(r);
    in.Add(w);
    twin::Emit(in);
  }
  twin::CopyBlocks(reinterpret_cast<uint8_t*>(dst.TwinData()), to.pitch,
                   reinterpret_cast<const uint8_t*>(src.TwinData()), from.pitch, p.blockCount, blockBytes);
}

// ---- DataCopyPad: byte-exact rows, each landing 32-byte padded in UB ----
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad) {
  const char* api = "DataCopyPad GM->UB";
  if (twin::PadCopyIsNop(p.blockCount, p.blockLen, api)) return;
  dst.TwinCheckAligned(api);
  if (p.blockLen % sizeof(T) != 0)
    twin::Violation("data copy params", std::string(api) + " blockLen " + std::to_string(p.blockLen) +
                                            " bytes is not a whole number of " + twin::DtypeName<T>());
  // leftPadding and rightPadding are at most 32 bytes each (DataCopyPad（GMToUB非对齐数据搬运）.md, 参数说明)
  if (pad.leftPadding * sizeof(T) > 32 || pad.rightPadding * sizeof(T) > 32)
    twin::Violation("data copy params", std::string(api) + " leftPadding " + std::to_string(pad.leftPadding) +
                                            " / rightPadding " + std::to_string(pad.rightPadding) + " " +
                                            twin::DtypeName<T>() + ": each at most 32 bytes");
  const uint32_t lead = pad.leftPadding * sizeof(T);
  const uint32_t rowBytes = twin::AlignUp32(lead + p.blockLen + pad.rightPadding * sizeof(T));
  const uint64_t ubPitch = rowBytes + uint64_t(p.dstStride) * 32;
  const uint64_t gmPitch = uint64_t(p.blockLen) + p.srcStride;
  dst.TwinCheckCount(((p.blockCount - 1) * ubPitch + rowBytes) / sizeof(T), api);
  src.TwinCheckRange(((p.blockCount - 1) * gmPitch + p.blockLen) / sizeof(T), api);
  const uint32_t tail = lead + p.blockLen;
  if (twin::Recording()) {  // whole padded rows land; only the data (and pad values asked for) are defined
    const uint32_t definedLead = pad.isPad ? 0 : lead;
    const uint32_t definedEnd = pad.isPad ? tail + pad.rightPadding * uint32_t(sizeof(T)) : tail;
    twin::RecordCopy<T>("DataCopyPad", true, uint64_t(p.blockCount) * p.blockLen / sizeof(T),
                        twin::Strided(dst.TwinUbOffset(), ubPitch, rowBytes, p.blockCount),
                        twin::Strided(twin::GmAddr(src), gmPitch, p.blockLen, p.blockCount), twin::Init::kPadded,
                        definedLead, definedEnd - definedLead);
  }
  if (lead == 0 && tail == rowBytes && (p.blockCount == 1 || (ubPitch == rowBytes && gmPitch == rowBytes))) {
    // one contiguous run, no padding
    twin::FuseCopy(dst.TwinPtr(), src.GetPhyAddr(), uint32_t(uint64_t(p.blockCount) * rowBytes / sizeof(T)), false,
                   true);
    return;
  }
  twin::FusedOp op =
      twin::MakeFused(&twin::StripPadIn<T>, dst.TwinPtr(),
                      twin::PadRows<T>{gmPitch, uint32_t(ubPitch), lead, p.blockLen, rowBytes, pad.leftPadding,
                                       pad.rightPadding, uint8_t(pad.isPad), pad.paddingValue},
                      src.GetPhyAddr());
  op.count = uint32_t(((p.blockCount - 1) * ubPitch + rowBytes) / sizeof(T));
  op.strided = 1, op.stridedBytes[0] = (p.blockCount - 1) * gmPitch + p.blockLen;
  op.eagerOk = true;
  twin::RunOrDefer(op);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
  const char* api = "DataCopyPad UB->GM";
  if (twin::PadCopyIsNop(p.blockCount, p.blockLen, api)) return;
  src.TwinCheckAligned(api);
  const uint32_t rowBytes = twin::AlignUp32(p.blockLen);
  const uint64_t ubPitch = rowBytes + uint64_t(p.srcStride) * 32;
  const uint64_t gmPitch = uint64_t(p.blockLen) + p.dstStride;
  src.TwinCheckCount(((p.blockCount - 1) * ubPitch + p.blockLen + sizeof(T) - 1) / sizeof(T), api);
  dst.TwinCheckRange(((p.blockCount - 1) * gmPitch + p.blockLen) / sizeof(T), api);
  if (twin::Recording()) {
    twin::RecordCopy<T>("DataCopyPad", false, uint64_t(p.blockCount) * p.blockLen / sizeof(T),
                        twin::Strided(src.TwinUbOffset(), ubPitch, p.blockLen, p.blockCount),
                        twin::Strided(twin::GmAddr(dst), gmPitch, p.blockLen, p.blockCount));
  }
  if (twin::AtomicAddRows(dst.GetPhyAddr(), gmPitch, src.TwinData(), ubPitch, p.blockCount, p.blockLen,
                          "DataCopyPad UB->GM"))
    return;
  const bool stream = twin::Streaming(dst);
  if (p.blockLen % sizeof(T) == 0 && (p.blockCount == 1 || (ubPitch == p.blockLen && gmPitch == p.blockLen))) {
    // one contiguous run
    twin::FuseCopy(dst.GetPhyAddr(), src.TwinPtr(), uint32_t(uint64_t(p.blockCount) * p.blockLen / sizeof(T)), stream);
    return;
  }
  if (p.blockLen % sizeof(T) != 0) {  // rows not whole elements: not element-indexed, copied now
    twin::CopyBlocks(reinterpret_cast<uint8_t*>(dst.GetPhyAddr()), gmPitch,
                     reinterpret_cast<const uint8_t*>(src.TwinData()), ubPitch, p.blockCount, p.blockLen, stream);
    return;
  }
  twin::FusedOp op =
      twin::MakeFused(stream ? &twin::StripPadOut<T, true> : &twin::StripPadOut<T, false>, dst.GetPhyAddr(),
                      twin::PadRows<T>{gmPitch, uint32_t(ubPitch), 0, p.blockLen, 0, 0, 0, 0, T(0)}, src.TwinPtr());
  op.count = uint32_t(((p.blockCount - 1) * ubPitch + p.blockLen) / sizeof(T));
  op.strided = 8, op.stridedBytes[3] = (p.blockCount - 1) * gmPitch + p.blockLen;
  twin::RunOrDefer(op);
}

}  // namespace AscendC
