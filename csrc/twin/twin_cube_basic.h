// CPU twin, the cube unit's basic API (Atlas A2, v220): what a kernel author writes a cube kernel
// with by hand, each call checked against the documented rules and recorded on its pipe.
//   DataCopy(L1, GM, Nd2NzParams)       MTE2  GM (ND) -> L1 (A1/B1/C1) in Nz fractals
//   LoadData(L0A|L0B, L1, LoadData2DParams)  MTE1  512-byte fractals L1 -> L0A (A2) / L0B (B2)
//   LoadData(L0A|L0B, L1, LoadData3DParamsV2<T>)  MTE1  a window of an Nz tile -> Zz / Zn (twin_cube_load3d.h)
//   Mmad(L0C, L0A, L0B, MmadParams)     M     C (Nz, fp32) = [C +] A (Zz) x B (Zn)
//   Fixpipe(GM, L0C, FixpipeParamsV220)  FIX   L0C (CO1) -> GM, ND or Nz, fp32 -> half/bf16 (CAST_RINT)
//   DataCopy(BT, L1, DataCopyParams)    MTE1  a bias L1 -> the bias table (C2), half -> float on the way
//   Mmad(L0C, L0A, L0B, BT, MmadParams) M     C (Nz, fp32) = bias (one row, from BT) + A x B
// Sources (asc-devkit docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/): 矩阵计算的搬入/DataCopy
// （GMToL1随路转换-ND2NZ搬运）.md, LoadData_2D.md, 矩阵计算输入搬运约束.md, Mmad计算/Mmad.md,
// 矩阵计算分形介绍/关键分形格式详解.md (Zz x Zn = Nz on A2), 矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md;
// the parameter structs as include/basic_api/kernel_struct_{mm,data_copy,fixpipe}.h declare them.
// (bias: DataCopy（L1ToBiasTable-Buffer数据搬运）.md, Mmad.md "传入bias的原型").
// Not modelled (rejected by name): int8/int4 Mmad, an int32 bias, Mmad's cmatrixSource flag (use the bias
// overload), Fixpipe quantisation other than
// the fp32 -> half/bf16 casts, channel split, ndNum > 1, unitFlag, GM -> L0 LoadData.
// Each call takes a trailing twin::CubeExec: kRun (the default) moves and computes the bytes;
// kTrace checks and records the call without touching them, for the high-level Matmul (twin_cube.h),
// whose arithmetic one fast GEMM does: one set of rules and one record for both APIs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "twin_copy.h"
#include "twin_cube_mmad.h"
#include "twin_tensor.h"

enum class QuantMode_t : uint8_t {
  NoQuant = 0,
  F322F16,
  F322BF16,
  DEQF16,
  VDEQF16,
  QF322B8_PRE,
  VQF322B8_PRE,
  REQ8,
  VREQ8
};

namespace AscendC {

struct Nd2NzParams {  // A2 (__NPU_ARCH__ 2201) field widths
  Nd2NzParams() {}
  Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
              uint16_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint16_t dstNzMatrixStrideIn)
      : ndNum(ndNumIn),
        nValue(nValueIn),
        dValue(dValueIn),
        srcNdMatrixStride(srcNdMatrixStrideIn),
        srcDValue(srcDValueIn),
        dstNzC0Stride(dstNzC0StrideIn),
        dstNzNStride(dstNzNStrideIn),
        dstNzMatrixStride(dstNzMatrixStrideIn) {}
  uint16_t ndNum = 0;
  uint16_t nValue = 0;
  uint16_t dValue = 0;
  uint16_t srcNdMatrixStride = 0;
  uint16_t srcDValue = 0;
  uint16_t dstNzC0Stride = 0;
  uint16_t dstNzNStride = 0;
  uint16_t dstNzMatrixStride = 0;
};

struct LoadData2DParams {
  LoadData2DParams() {}
  LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn, uint16_t dstGapIn,
                   bool ifTransposeIn, uint8_t addrModeIn)
      : startIndex(startIndexIn),
        dstGap(dstGapIn),
        srcStride(srcStrideIn),
        ifTranspose(ifTransposeIn),
        repeatTimes(repeatTimesIn),
        sid(sidIn),
        addrMode(addrModeIn) {}
  uint16_t startIndex = 0;
  uint16_t dstGap = 0;
  uint16_t srcStride = 0;
  bool ifTranspose = false;
  uint8_t repeatTimes = 0;
  uint8_t sid = 0;
  uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

struct MmadParams {
  MmadParams() {}
  MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn,
             bool enWinogradAIn, bool enWinogradBIn)
      : m(mIn),
        n(nIn),
        k(kIn),
        isBias(isBiasIn),
        fmOffset(fmOffsetIn),
        enSsparse(enSsparseIn),
        enWinogradA(enWinogradAIn),
        enWinogradB(enWinogradBIn) {}
  MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn, bool cmatrixInitValIn)
      : m(mIn),
        n(nIn),
        k(kIn),
        unitFlag(unitFlagIn),
        cmatrixSource(cmatrixSourceIn),
        cmatrixInitVal(cmatrixInitValIn) {}
  uint16_t m = 0;
  uint16_t n = 0;
  uint16_t k = 0;
  bool isBias = false;  // deprecated: C += A x B
  int32_t fmOffset = 0;
  bool enSsparse = false;
  bool enWinogradA = false;
  bool enWinogradB = false;
  uint8_t unitFlag = 0;
  bool kDirectionAlign = false;
  bool cmatrixSource = false;
  bool cmatrixInitVal = true;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
  CO2Layout format;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};

struct FixpipeParamsV220 {
  FixpipeParamsV220() {}
  FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
      : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
  FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                    QuantMode_t quantPreIn, int64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                    uint16_t dstNdStrideIn, uint8_t unitFlagIn)
      : nSize(nSizeIn),
        mSize(mSizeIn),
        srcStride(srcStrideIn),
        dstStride(dstStrideIn),
        quantPre(quantPreIn),
        deqScalar(uint64_t(deqScalarIn)),
        ndNum(ndNumIn),
        srcNdStride(srcNdStrideIn),
        dstNdStride(dstNdStrideIn),
        reluEn(reluEnIn),
        unitFlag(unitFlagIn) {}
  uint16_t nSize = 0;
  uint16_t mSize = 0;
  uint16_t srcStride = 0;
  uint32_t dstStride = 0;
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  uint64_t deqScalar = 0;
  uint16_t ndNum = 1;
  uint16_t srcNdStride = 0;
  uint16_t dstNdStride = 0;
  bool reluEn = false;
  uint8_t unitFlag = 0;
  bool isChannelSplit = false;
};

namespace twin {
constexpr uint32_t kFractalBytes = 512;  // LoadData's unit: one 16 x (32 B / sizeof(T)) fractal
constexpr uint32_t kCube = 16;           // M0 = N0 = 16

inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
enum class CubeExec : uint8_t { kRun, kTrace };

// The tensor lives in `want` (its TQue/TBuf's TPosition), or the rule "cube position" fires.
template <typename T>
inline void CheckSpace(const LocalTensor<T>& t, Space want, const char* api, const char* operand, const char* pos) {
  if (t.TwinPtr() == nullptr) Violation("cube position", std::string(api) + " " + operand + " holds no buffer");
  if (t.TwinSpace() != want)
    Violation("cube position", std::string(api) + " " + operand + " must be in " + SpaceName(want) + " (TPosition " +
                                   pos + "), not " + SpaceName(t.TwinSpace()));
}
template <typename T>
inline void CheckAlign(const LocalTensor<T>& t, uint32_t align, const char* api, const char* operand) {
  if (t.TwinOffset() % align != 0)
    Violation("cube alignment", std::string(api) + " " + operand + " starts at " + SpaceName(t.TwinSpace()) + " byte " +
                                    std::to_string(t.TwinOffset()) + ", not a multiple of " + std::to_string(align));
}
template <typename T>
inline void CheckBytes(const LocalTensor<T>& t, uint64_t bytes, const char* api, const char* operand) {
  if (bytes > uint64_t(t.GetSize()) * sizeof(T))
    Violation("cube bounds", std::string(api) + " " + operand + " spans " + std::to_string(bytes) +
                                 " bytes but the LocalTensor holds " +
                                 std::to_string(uint64_t(t.GetSize()) * sizeof(T)));
}
inline void CheckRange(const char* api, const char* field, uint64_t v, uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi)
    Violation("cube params", std::string(api) + " " + field + " " + std::to_string(v) + " outside [" +
                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
}
inline Access Local(Space s, uint64_t begin, uint64_t bytes, bool write, uint8_t elem) {
  return write ? Access::Write(s, begin, bytes, Init::kDefined, elem) : Access::Read(s, begin, bytes, elem);
}
template <typename T>
constexpr bool kCubeFloat = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t> || std::is_same_v<T, float>;
}  // namespace twin

// ---- GM -> L1 with ND -> Nz (MTE2) ----
// ND matrix nd, row r, column c lands at element nd*dstNzMatrixStride + (c / C0)*dstNzC0Stride*C0 +
// r*dstNzNStride*C0 + c % C0 (C0 = 32 B / sizeof(T)); a last C0 group that dValue does not fill is
// padded with zeros to 32 bytes. ndNum, nValue or dValue 0: a NOP.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                     twin::CubeExec exec = twin::CubeExec::kRun) {
  constexpr const char* kApi = "DataCopy ND2NZ";
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "DataCopy ND2NZ: b8/b16/b32 data on A2");
  twin::CheckSpace(dst, twin::Space::L1, kApi, "dst", "A1/B1");
  twin::CheckAlign(dst, twin::kBlockBytes, kApi, "dst");
  twin::CheckRange(kApi, "ndNum", p.ndNum, 0, 4095);
  twin::CheckRange(kApi, "nValue", p.nValue, 0, 16384);
  twin::CheckRange(kApi, "srcDValue", p.srcDValue, 1, 65535);
  twin::CheckRange(kApi, "dstNzC0Stride", p.dstNzC0Stride, 1, 16384);
  twin::CheckRange(kApi, "dstNzNStride", p.dstNzNStride, 1, 16384);
  twin::CheckRange(kApi, "dstNzMatrixStride", p.dstNzMatrixStride, 0, 16384);
  if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;
  constexpr uint32_t c0 = twin::kBlockBytes / sizeof(T);
  const uint32_t groups = twin::CeilDiv(p.dValue, c0);
  const uint64_t lastNd = p.ndNum - 1;
  // the furthest element written and read
  const uint64_t dstEnd = lastNd * p.dstNzMatrixStride + uint64_t(groups - 1) * p.dstNzC0Stride * c0 +
                          uint64_t(p.nValue - 1) * p.dstNzNStride * c0 + c0;
  const uint64_t srcEnd = lastNd * p.srcNdMatrixStride + uint64_t(p.nValue - 1) * p.srcDValue + p.dValue;
  twin::CheckBytes(dst, dstEnd * sizeof(T), kApi, "dst");
  src.TwinCheckRange(srcEnd, kApi);
  twin::Observe();
  T* out = dst.TwinPtr();
  const T* in = src.GetPhyAddr();
  if (exec == twin::CubeExec::kRun)
    for (uint32_t nd = 0; nd < p.ndNum; ++nd)
      for (uint32_t r = 0; r < p.nValue; ++r)
        for (uint32_t g = 0; g < groups; ++g) {
          T* row =
              out + nd * p.dstNzMatrixStride + uint64_t(g) * p.dstNzC0Stride * c0 + uint64_t(r) * p.dstNzNStride * c0;
          const T* from = in + nd * p.srcNdMatrixStride + uint64_t(r) * p.srcDValue + uint64_t(g) * c0;
          const uint32_t valid = std::min<uint32_t>(c0, p.dValue - g * c0);
          if (valid == c0) {  // a whole 32-byte group: one fixed-size move the compiler inlines
            std::memcpy(row, from, twin::kBlockBytes);
            continue;
          }
          std::memcpy(row, from, valid * sizeof(T));
          std::memset(static_cast<void*>(row + valid), 0, (c0 - valid) * sizeof(T));
        }
  if (twin::Recording()) {
    twin::Instr in2 =
        twin::OpInstr(twin::Pipe::MTE2, "DataCopy", twin::DtypeName<T>(), uint64_t(p.ndNum) * p.nValue * p.dValue);
    const uint64_t gm = twin::GmAddr(src);
    if (p.ndNum == 1)
      in2.Add(
          twin::Access{twin::Strided(gm, uint64_t(p.srcDValue) * sizeof(T), uint64_t(p.dValue) * sizeof(T), p.nValue),
                       twin::Space::GM, false, false, sizeof(T)});
    else in2.Add(twin::Access::Read(twin::Space::GM, gm, srcEnd * sizeof(T), sizeof(T)));
    // the span from the first to the last byte written (the Nz layout interleaves the rows)
    in2.Add(twin::Local(twin::Space::L1, dst.TwinOffset(), dstEnd * sizeof(T), true, sizeof(T)));
    twin::Emit(in2);
  }
}

// ---- L1 -> L0A / L0B, 2D (MTE1) ----
// Repeat i copies the 512-byte fractal startIndex + i*srcStride of src to dst + i*(1 + dstGap)*512;
// ifTranspose transposes each 16 x 16 b16 fractal. repeatTimes 0: a NOP.
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                     twin::CubeExec exec = twin::CubeExec::kRun) {
  constexpr const char* kApi = "LoadData 2D";
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadData 2D: b8/b16/b32 data on A2");
  twin::CheckSpace(src, twin::Space::L1, kApi, "src", "A1/B1");
  const twin::Space ds = dst.TwinSpace();
  if (ds != twin::Space::L0A && ds != twin::Space::L0B)
    twin::Violation("cube position",
                    std::string(kApi) + " dst must be in L0A (TPosition A2) or L0B (B2), not " + twin::SpaceName(ds));
  twin::CheckAlign(src, twin::kBlockBytes, kApi, "src");
  twin::CheckAlign(dst, twin::kFractalBytes, kApi, "dst");
  if (p.ifTranspose && sizeof(T) != 2)
    twin::Violation("cube params", std::string(kApi) + " ifTranspose needs b16 data, not " + twin::DtypeName<T>());
  if (p.addrMode != 0)
    twin::Violation("cube params", std::string(kApi) + " addrMode " + std::to_string(p.addrMode) +
                                       ": only GM -> L1 may decrement; keep 0 on L1 -> L0");
  if (p.repeatTimes == 0) return;
  const uint64_t lastSrc = uint64_t(p.startIndex) + uint64_t(p.repeatTimes - 1) * p.srcStride;
  const uint64_t dstPitch = uint64_t(1 + p.dstGap) * twin::kFractalBytes;
  twin::CheckBytes(src, (lastSrc + 1) * twin::kFractalBytes, kApi, "src");
  twin::CheckBytes(dst, uint64_t(p.repeatTimes - 1) * dstPitch + twin::kFractalBytes, kApi, "dst");
  twin::Observe();
  const uint8_t* in = reinterpret_cast<const uint8_t*>(src.TwinPtr());
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.TwinPtr());
  if (exec == twin::CubeExec::kRun)
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
      const uint8_t* f = in + (uint64_t(p.startIndex) + uint64_t(i) * p.srcStride) * twin::kFractalBytes;
      uint8_t* o = out + i * dstPitch;
      if (!p.ifTranspose) {
        std::memmove(o, f, twin::kFractalBytes);
        continue;
      }
      uint16_t tmp[256];
      std::memcpy(tmp, f, sizeof(tmp));
      uint16_t* t = reinterpret_cast<uint16_t*>(o);
      for (uint32_t r = 0; r < 16; ++r)
        for (uint32_t c = 0; c < 16; ++c) t[c * 16 + r] = tmp[r * 16 + c];
    }
  if (twin::Recording()) {
    twin::Instr in2 = twin::OpInstr(twin::Pipe::MTE1, "LoadData", twin::DtypeName<T>(),
                                    uint64_t(p.repeatTimes) * twin::kFractalBytes / sizeof(T));
    twin::Access r;
    r.space = twin::Space::L1, r.elemBytes = sizeof(T);
    r.span = p.srcStride == 0
                 ? twin::Span::Run(src.TwinOffset() + uint64_t(p.startIndex) * twin::kFractalBytes, twin::kFractalBytes)
                 : twin::Strided(src.TwinOffset() + uint64_t(p.startIndex) * twin::kFractalBytes,
                                 uint64_t(p.srcStride) * twin::kFractalBytes, twin::kFractalBytes, p.repeatTimes);
    twin::Access w;
    w.space = ds, w.write = true, w.init = twin::Init::kReduce, w.elemBytes = sizeof(T);
    w.span = twin::Strided(dst.TwinOffset(), dstPitch, twin::kFractalBytes, p.repeatTimes);
    in2.Add(r);
    in2.Add(w);
    twin::Emit(in2);
  }
}

// ---- Mmad (M) ----
// A2's formats (关键分形格式详解.md): A in L0A as Zz (fractal (i/16, p/K0) at index (i/16)*K1 + p/K0,
// row-major 16 x K0 inside), B in L0B as Zn (fractal (p/K0, j/16) at (p/K0)*N1 + j/16, column-major
// inside: element (j%16)*K0 + p%K0), C in L0C as Nz fp32 16 x 16 fractals ((j/16)*M1 + i/16, row-major
// inside). K0 = 32 B / sizeof(input). m == 1 is GEMV: A is read as an ND row (Mmad.md). C = A x B
// in fp32 when cmatrixInitVal, else C += A x B (C from L0C); the bias overload starts C from the bias table.
namespace twin {
template <typename D, typename S, typename U>
inline void MmadOn(const LocalTensor<D>& dst, const LocalTensor<S>& fm, const LocalTensor<U>& filter,
                   const LocalTensor<float>* bias, const MmadParams& p, CubeExec exec);
}  // namespace twin

template <typename D, typename S, typename U>
inline void Mmad(const LocalTensor<D>& dst, const LocalTensor<S>& fm, const LocalTensor<U>& filter, const MmadParams& p,
                 twin::CubeExec exec = twin::CubeExec::kRun) {
  twin::MmadOn(dst, fm, filter, static_cast<const LocalTensor<float>*>(nullptr), p, exec);
}
// With a bias in the bias table (C2, float, 64-byte aligned): C starts from it, every row bias[0, n)
// (Mmad.md: the bias overload ignores cmatrixInitVal / cmatrixSource).
template <typename D, typename S, typename U>
inline void Mmad(const LocalTensor<D>& dst, const LocalTensor<S>& fm, const LocalTensor<U>& filter,
                 const LocalTensor<float>& bias, const MmadParams& p, twin::CubeExec exec = twin::CubeExec::kRun) {
  twin::MmadOn(dst, fm, filter, &bias, p, exec);
}

template <typename D, typename S, typename U>
inline void twin::MmadOn(const LocalTensor<D>& dst, const LocalTensor<S>& fm, const LocalTensor<U>& filter,
                         const LocalTensor<float>* bias, const MmadParams& p, CubeExec exec) {
  constexpr const char* kApi = "Mmad";
  twin::CheckSpace(dst, twin::Space::L0C, kApi, "dst", "CO1");
  twin::CheckSpace(fm, twin::Space::L0A, kApi, "fm", "A2");
  twin::CheckSpace(filter, twin::Space::L0B, kApi, "filter", "B2");
  // Mmad.md table 7 (A2): int8 x int8 -> int32, half x half -> float, float x float -> float,
  // bfloat16 x bfloat16 -> float, int4 x int4 -> int32. The twin computes the floating ones.
  constexpr bool kFloatCombo = std::is_same_v<S, U> && twin::kCubeFloat<S> && std::is_same_v<D, float>;
  constexpr bool kIntCombo = std::is_same_v<S, int8_t> && std::is_same_v<U, int8_t> && std::is_same_v<D, int32_t>;
  if constexpr (!kFloatCombo) {
    if constexpr (kIntCombo) {
      twin::Violation("cube dtype", "Mmad int8 x int8 -> int32 is valid on A2 but not modelled by the twin");
    } else {
      twin::Violation("cube dtype", std::string("Mmad ") + twin::DtypeName<S>() + " x " + twin::DtypeName<U>() +
                                        " -> " + twin::DtypeName<D>() +
                                        " is not an A2 combination (half/bfloat16/float -> float, int8 -> int32)");
    }
  } else {
    twin::CheckAlign(fm, twin::kFractalBytes, kApi, "fm");
    twin::CheckAlign(filter, twin::kFractalBytes, kApi, "filter");
    twin::CheckAlign(dst, 1024, kApi, "dst");
    twin::CheckRange(kApi, "m", p.m, 0, 4095);
    twin::CheckRange(kApi, "n", p.n, 0, 4095);
    twin::CheckRange(kApi, "k", p.k, 0, 4095);
    if (bias == nullptr && (p.cmatrixSource || p.isBias))
      twin::Violation("cube params", "Mmad cmatrixSource/isBias is not modelled: pass the bias (C2) to Mmad instead");
    if (bias != nullptr) {
      twin::CheckSpace(*bias, twin::Space::BT, kApi, "bias", "C2");
      twin::CheckAlign(*bias, 64, kApi, "bias");
      twin::CheckBytes(*bias, uint64_t(p.n) * sizeof(float), kApi, "bias");
    }
    if (p.unitFlag != 0) twin::Violation("cube params", "Mmad unitFlag is not modelled by the twin");
    if (p.m == 0 || p.n == 0 || p.k == 0) return;
    constexpr uint32_t k0 = twin::kBlockBytes / sizeof(S);
    const uint32_t kAlign = sizeof(S) == 4 && p.kDirectionAlign ? 16 : k0;
    const uint32_t k1 = twin::CeilDiv(p.k, kAlign) * (kAlign / k0);
    const uint32_t m1 = twin::CeilDiv(p.m, twin::kCube), n1 = twin::CeilDiv(p.n, twin::kCube);
    const bool gemv = p.m == 1;
    const uint64_t aBytes = gemv ? uint64_t(p.k) * sizeof(S) : uint64_t(m1) * k1 * twin::kFractalBytes;
    const uint64_t bBytes = uint64_t(k1) * n1 * twin::kFractalBytes;
    const uint64_t cBytes = uint64_t(m1) * n1 * twin::kCube * twin::kCube * sizeof(float);
    twin::CheckBytes(fm, aBytes, kApi, "fm");
    twin::CheckBytes(filter, bBytes, kApi, "filter");
    twin::CheckBytes(dst, cBytes, kApi, "dst");
    twin::Observe();
    const S* a = fm.TwinPtr();
    const U* b = filter.TwinPtr();
    float* c = dst.TwinPtr();
    const bool init = p.cmatrixInitVal || bias != nullptr;
    const float* b0 = bias != nullptr ? bias->TwinPtr() : nullptr;
    // L0C starts from the bias table, or from 0 (twin_cube_mmad.h: the sum's order)
    if (exec == twin::CubeExec::kRun) twin::MmadFractal(a, b, c, b0, p.m, p.n, p.k, k0, k1, m1, n1, gemv, init);
    if (twin::Recording()) {
      twin::Instr in = twin::OpInstr(twin::Pipe::M, "Mmad", twin::DtypeName<S>(), uint64_t(p.m) * p.n * p.k);
      in.smallMmad = (p.m / twin::kCube) * (p.n / twin::kCube) < 10;  // Mmad.md 同步优化说明 (twin_sanitizer.cpp)
      in.Add(twin::Access::Read(twin::Space::L0A, fm.TwinOffset(), aBytes, sizeof(S)));
      in.Add(twin::Access::Read(twin::Space::L0B, filter.TwinOffset(), bBytes, sizeof(U)));
      if (!init) in.Add(twin::Access::Read(twin::Space::L0C, dst.TwinOffset(), cBytes, sizeof(float)));
      if (bias != nullptr) in.Add(twin::Access::Read(twin::Space::BT, bias->TwinOffset(), uint64_t(p.n) * 4, 4));
      // padding rows/columns of the fractals hold whatever was there; the cube ignores them, so the
      // result is defined (the L0A/L0B reads above order it, they do not taint it)
      in.Add(twin::Access::Write(twin::Space::L0C, dst.TwinOffset(), cBytes, twin::Init::kDefined, sizeof(float)));
      twin::Emit(in);
    }
  }
}

// ---- a bias: L1 -> the bias table (MTE1); it reaches L1 by DataCopy ND2NZ (copy_bias_in_v220.h) ----
// L1 (C1, 32-byte aligned) -> the bias table (C2, 64-byte aligned; A2: float from half or float, int32 not
// modelled): blockLen in 64-byte units of the source, one block here (blockCount 1).
template <typename S>
inline void DataCopy(const LocalTensor<float>& dst, const LocalTensor<S>& src, const DataCopyParams& p,
                     twin::CubeExec exec) {
  constexpr const char* kApi = "DataCopy L1->BT";
  static_assert(std::is_same_v<S, half> || std::is_same_v<S, float>,
                "DataCopy L1->BT: a half or float source on A2 (int32 is not modelled)");
  twin::CheckSpace(dst, twin::Space::BT, kApi, "dst", "C2");
  twin::CheckSpace(src, twin::Space::L1, kApi, "src", "C1");
  twin::CheckAlign(dst, 64, kApi, "dst");
  twin::CheckAlign(src, twin::kBlockBytes, kApi, "src");
  twin::CheckRange(kApi, "blockCount", p.blockCount, 0, 1);
  if (p.blockCount == 0 || p.blockLen == 0) return;
  const uint64_t srcBytes = uint64_t(p.blockLen) * 64, elems = srcBytes / sizeof(S);
  twin::CheckBytes(src, srcBytes, kApi, "src");
  twin::CheckBytes(dst, elems * sizeof(float), kApi, "dst");
  twin::Observe();
  if (exec == twin::CubeExec::kRun)
    for (uint64_t i = 0; i < elems; ++i) dst.TwinPtr()[i] = float(src.TwinPtr()[i]);
  if (twin::Recording()) {
    twin::Instr in = twin::OpInstr(twin::Pipe::MTE1, "DataCopy", twin::DtypeName<S>(), elems);
    in.Add(twin::Local(twin::Space::L1, src.TwinOffset(), srcBytes, false, sizeof(S)));
    in.Add(twin::Local(twin::Space::BT, dst.TwinOffset(), elems * sizeof(float), true, sizeof(float)));
    twin::Emit(in);
  }
}

// ---- L0C -> GM (FIX) ----
// Element (i, j) of the Nz source is at ((j/16)*srcStride + i)*16 + j%16 (srcStride in 16-element
// C0 units, ceil16(mSize)). CFG_ROW_MAJOR (NZ2ND): dst[i*dstStride + j]; CFG_NZ: column block j/16
// at dst + (j/16)*dstStride*32 B, row i at i*16 elements inside. half/bf16 outputs round with
// CAST_RINT (quantPre F322F16/F322BF16), float keeps NoQuant; reluEn clamps at 0.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
                    twin::CubeExec exec = twin::CubeExec::kRun) {
  constexpr const char* kApi = "Fixpipe";
  twin::CheckSpace(src, twin::Space::L0C, kApi, "src", "CO1");
  twin::CheckAlign(src, 64, kApi, "src");
  if constexpr (!std::is_same_v<U, float>) {
    twin::Violation("cube dtype", std::string("Fixpipe from a ") + twin::DtypeName<U>() +
                                      " L0C is not modelled by the twin (float L0C only)");
  } else {
    constexpr bool kOut = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
    if constexpr (!kOut) {
      twin::Violation("cube dtype", std::string("Fixpipe float -> ") + twin::DtypeName<T>() +
                                        " (quantised outputs) is not modelled by the twin");
    } else {
      const QuantMode_t want = std::is_same_v<T, half>         ? QuantMode_t::F322F16
                               : std::is_same_v<T, bfloat16_t> ? QuantMode_t::F322BF16
                                                               : QuantMode_t::NoQuant;
      static const char* const kNames[] = {"NoQuant", "F322F16", "F322BF16"};
      if (p.quantPre != want)
        twin::Violation("cube params", std::string("Fixpipe float -> ") + twin::DtypeName<T>() + " needs quantPre " +
                                           kNames[int(want)] +
                                           " (set by hand, Fixpipe（L0C到GM数据搬运）.md table 4), got " +
                                           std::to_string(int(p.quantPre)));
      constexpr bool kNd = config.format == CO2Layout::ROW_MAJOR;
      static_assert(config.format != CO2Layout::COLUMN_MAJOR, "Fixpipe NZ2DN is Ascend 950 only");
      twin::CheckRange(kApi, "nSize", p.nSize, 0, 4095);
      twin::CheckRange(kApi, "mSize", p.mSize, 0, kNd ? 8192 : 65535);
      // NZ output: whole 16-column blocks (Fixpipe.md). NZ2ND: CANN's matmul hands its N tail as is
      // (impl/adv_api/detail/matmul/stage/copy_cube_out/copy_cube_out_utils.h, FixpipeParamsUtil).
      if (!kNd && p.nSize % 16 != 0)
        twin::Violation("cube params",
                        "Fixpipe nSize " + std::to_string(p.nSize) + " must be a multiple of 16 for an NZ output");
      if (p.isChannelSplit || p.unitFlag != 0 || p.ndNum > 1)
        twin::Violation("cube params", "Fixpipe channel split, unitFlag and ndNum > 1 are not modelled by the twin");
      if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) return;
      if (p.dstStride == 0) twin::Violation("cube params", "Fixpipe dstStride must not be 0");
      if (p.srcStride < p.mSize)
        twin::Violation("cube params", "Fixpipe srcStride " + std::to_string(p.srcStride) +
                                           " (16-element units) is below mSize " + std::to_string(p.mSize) +
                                           ": the Nz column blocks would overlap");
      const uint32_t blocks = twin::CeilDiv(p.nSize, 16);
      const uint64_t srcBytes = (uint64_t(blocks - 1) * p.srcStride + p.mSize) * 16 * sizeof(float);
      twin::CheckBytes(src, srcBytes, kApi, "src");
      constexpr uint32_t c0 = twin::kBlockBytes / sizeof(T);
      const uint64_t dstElems = kNd ? uint64_t(p.mSize - 1) * p.dstStride + p.nSize
                                    : uint64_t(blocks - 1) * p.dstStride * c0 + uint64_t(p.mSize) * 16;
      if (kNd && p.dstStride < p.nSize)
        twin::Violation("cube params", "Fixpipe NZ2ND dstStride " + std::to_string(p.dstStride) +
                                           " (elements per ND row) is below nSize " + std::to_string(p.nSize));
      dst.TwinCheckRange(dstElems, kApi);
      twin::Observe();
      const float* c = src.TwinPtr();
      T* out = dst.GetPhyAddr();
      // SetAtomicAdd<T> (SetAtomicAdd.md): Fixpipe adds into GM, the sum rounded to T
      const char* atomic = twin::Core().atomicDtype;
      if (atomic && std::strcmp(atomic, twin::DtypeName<T>()) != 0)
        twin::Violation("atomic add", std::string("Fixpipe to ") + twin::DtypeName<T>() + " while SetAtomicAdd<" +
                                          atomic + "> is on: the atomic's dtype must be the output's");
      // an atomic Fixpipe adds as one device operation (the pool runs blocks side by side)
      std::unique_lock<std::mutex> atomicLock;
      if (atomic) atomicLock = std::unique_lock<std::mutex>(twin::AtomicGmMutex());
      if (exec == twin::CubeExec::kRun)
        for (uint32_t i = 0; i < p.mSize; ++i)
          for (uint32_t jb = 0; jb < blocks; ++jb) {  // row i of column block jb: 16 contiguous floats
            const float* from = c + (uint64_t(jb) * p.srcStride + i) * 16;
            T* to = out + (kNd ? uint64_t(i) * p.dstStride + jb * 16 : uint64_t(jb) * p.dstStride * c0 + i * 16);
            const uint32_t width = std::min<uint32_t>(16, p.nSize - jb * 16);
            for (uint32_t j = 0; j < width; ++j) {
              float v = from[j];
              if (p.reluEn && v < 0.0f) v = 0.0f;
              if (atomic) v = float(to[j]) + static_cast<float>(static_cast<T>(v));
              if constexpr (std::is_same_v<T, bfloat16_t>) to[j] = bfloat16_t(v);
              else to[j] = static_cast<T>(v);
            }
          }
      if (twin::Recording()) {
        twin::Instr in = twin::OpInstr(twin::Pipe::FIX, "Fixpipe", twin::DtypeName<T>(), uint64_t(p.mSize) * p.nSize);
        twin::Access r;
        r.space = twin::Space::L0C, r.elemBytes = sizeof(float), r.leaves = true;
        r.span = twin::Strided(src.TwinOffset(), uint64_t(p.srcStride) * 16 * sizeof(float),
                               uint64_t(p.mSize) * 16 * sizeof(float), blocks);
        twin::Access w;
        w.space = twin::Space::GM, w.write = true, w.elemBytes = sizeof(T);
        in.atomicAdd = atomic != nullptr;
        w.span = kNd ? twin::Strided(twin::GmAddr(dst), uint64_t(p.dstStride) * sizeof(T),
                                     uint64_t(p.nSize) * sizeof(T), p.mSize)
                     : twin::Strided(twin::GmAddr(dst), uint64_t(p.dstStride) * twin::kBlockBytes,
                                     uint64_t(p.mSize) * 16 * sizeof(T), blocks);
        in.Add(r);
        in.Add(w);
        twin::Emit(in);
      }
    }
  }
}

}  // namespace AscendC
