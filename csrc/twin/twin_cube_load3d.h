// CPU twin, LoadData 3Dv2 (MTE1, L1 -> L0A / L0B) in the matrix form CANN's matmul library issues
// on A2 (impl/adv_api/detail/matmul/stage/split/load_to_l0a/load_to_l0a_loadInstr.h and
// load_to_l0b/load_to_l0b_loadInstr.h: one instruction per operand and K step). Sources: asc-devkit
// docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/矩阵计算的搬入/LoadData_3D.md (parameters, A2 rules)
// and the pseudocode it cites, examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/
// load_data_l12l0/scripts/load3d.py; the struct as include/basic_api/kernel_struct_mm.h declares it.
// The L1 source is a feature map NC1HWC0 with N = 1: channel group g, pixel w (H*W of them), lane c
// at (g*H*W + w)*C0 + c, C0 = 32 B / sizeof(T) -- an Nz tile of H*W rows. With a 1 x 1 filter,
// stride 1, no padding, img2col is the matrix X[w][channel]; the instruction takes the window
// rows [mStartPt, +mExtension) x columns [kStartPt, +kExtension) of X and writes (m, k in the window)
//   L0A                dst[((m/16)*(kExt/C0) + k/C0)*16*C0 + (m%16)*C0 + k%C0]  (Zz)
//   L0A, enTranspose   dst[((k/16)*(mExt/C0) + m/C0)*16*C0 + (k%16)*C0 + m%C0]  (Zz of X^T)
//   L0B (always transposed; enTranspose has no effect there)
//                      dst[((m/C0)*(kExt/16) + k/16)*16*C0 + (k%16)*C0 + m%C0]  (Zn of X)
// Not modelled (refused by name): convolution (filter, stride, dilation other than 1, padding), the
// channel sizes A2 takes that are not whole C0 groups (4, 8, N*16+4, ... for b16), a window that
// leaves the feature map, enSmallK, b4.
#pragma once
#include <string>

#include "twin_cube_basic.h"

namespace AscendC {

template <typename T>
struct LoadData3DParamsV2 {
  uint8_t padList[4] = {0, 0, 0, 0};
  uint16_t l1H = 0;
  uint16_t l1W = 0;
  uint16_t channelSize = 0;
  uint16_t kExtension = 0;
  uint16_t mExtension = 0;
  uint16_t kStartPt = 0;
  uint16_t mStartPt = 0;
  uint8_t strideW = 1;
  uint8_t strideH = 1;
  uint8_t filterW = 1;
  uint8_t filterH = 1;
  uint8_t dilationFilterW = 1;
  uint8_t dilationFilterH = 1;
  bool enTranspose = false;
  bool enSmallK = false;
  T padValue = T(0);
  bool filterSizeW = false;
  bool filterSizeH = false;
  bool fMatrixCtrl = false;  // which FMATRIX register the L1 shape goes to: no effect on the bytes
};

namespace twin {
// Where window element (m, k) lands in L0, in elements (the table above).
template <typename T>
inline uint64_t Load3dDst(bool toB, bool trans, uint32_t m, uint32_t k, uint32_t mExt, uint32_t kExt) {
  constexpr uint32_t c0 = kBlockBytes / sizeof(T);
  if (toB) return (uint64_t(m / c0) * (kExt / kCube) + k / kCube) * kCube * c0 + (k % kCube) * c0 + m % c0;
  if (trans) return (uint64_t(k / kCube) * (mExt / c0) + m / c0) * kCube * c0 + (k % kCube) * c0 + m % c0;
  return (uint64_t(m / kCube) * (kExt / c0) + k / c0) * kCube * c0 + (m % kCube) * c0 + k % c0;
}
inline void Load3dRule(const std::string& what) { Violation("cube params", "LoadData 3Dv2 " + what); }
}  // namespace twin

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<T>& p,
                     twin::CubeExec exec = twin::CubeExec::kRun) {
  constexpr const char* kApi = "LoadData 3Dv2";
  // LoadData_3D.md 数据类型 (A2): A2 takes b4/b8/b16/b32, B2 b16/b32; the twin models b8/b16/b32
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadData 3Dv2: b8/b16/b32 data (b4 not modelled)");
  constexpr uint32_t c0 = twin::kBlockBytes / sizeof(T);
  twin::CheckSpace(src, twin::Space::L1, kApi, "src", "A1/B1");
  const twin::Space ds = dst.TwinSpace();
  if (ds != twin::Space::L0A && ds != twin::Space::L0B)
    twin::Violation("cube position",
                    std::string(kApi) + " dst must be in L0A (TPosition A2) or L0B (B2), not " + twin::SpaceName(ds));
  const bool toB = ds == twin::Space::L0B;
  twin::CheckAlign(src, twin::kBlockBytes, kApi, "src");
  twin::CheckAlign(dst, twin::kFractalBytes, kApi, "dst");
  const std::string bits = "b" + std::to_string(8 * sizeof(T));
  if (toB && sizeof(T) == 1) twin::Load3dRule("into L0B takes b16/b32 data, not " + bits);
  if (!toB && p.enTranspose && sizeof(T) == 1) twin::Load3dRule("enTranspose into L0A takes b16/b32 data, not b8");
  twin::CheckRange(kApi, "l1H", p.l1H, 0, 32767);
  twin::CheckRange(kApi, "l1W", p.l1W, 0, 32767);
  twin::CheckRange(kApi, "mStartPt", p.mStartPt, 0, 32767);
  for (int i = 0; i < 4; ++i)
    if (p.padList[i] != 0) twin::Load3dRule("padList (padding) is not modelled by the twin: keep it 0");
  if (p.filterW != 1 || p.filterH != 1 || p.strideW != 1 || p.strideH != 1 || p.dilationFilterW != 1 ||
      p.dilationFilterH != 1 || p.filterSizeW || p.filterSizeH)
    twin::Load3dRule("as a convolution (filter, stride or dilation other than 1) is not modelled by the twin");
  if (p.enSmallK) twin::Load3dRule("enSmallK is no longer supported (LoadData_3D.md)");
  if (p.l1H == 0 || p.l1W == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0) return;  // NOP
  if (p.channelSize % c0 != 0)
    twin::Load3dRule("channelSize " + std::to_string(p.channelSize) + " is not whole " + std::to_string(c0) +
                     "-element C0 groups: valid on A2 for some sizes but not modelled by the twin");
  if (p.kStartPt % c0 != 0)
    twin::Load3dRule("kStartPt " + std::to_string(p.kStartPt) + " must be a multiple of " + std::to_string(c0) +
                     " for " + bits);
  // whole fractals only (the library always passes them): 16 rows; k in C0 lanes, 16 when transposing
  const uint32_t kUnit = toB || p.enTranspose ? twin::kCube : c0;
  if (p.mExtension % twin::kCube != 0 || p.kExtension % kUnit != 0)
    twin::Load3dRule("mExtension " + std::to_string(p.mExtension) + " / kExtension " + std::to_string(p.kExtension) +
                     " must be multiples of 16 / " + std::to_string(kUnit) + " (partial fractals not modelled)");
  const uint64_t pixels = uint64_t(p.l1H) * p.l1W;
  if (p.mStartPt + uint64_t(p.mExtension) > pixels || p.kStartPt + uint64_t(p.kExtension) > p.channelSize)
    twin::Load3dRule("window rows [" + std::to_string(p.mStartPt) + ", " + std::to_string(p.mStartPt + p.mExtension) +
                     ") x channels [" + std::to_string(p.kStartPt) + ", " + std::to_string(p.kStartPt + p.kExtension) +
                     ") leaves the " + std::to_string(pixels) + " x " + std::to_string(p.channelSize) +
                     " feature map (padding not modelled)");
  const uint64_t elems = uint64_t(p.mExtension) * p.kExtension, groups = p.kExtension / c0;
  const uint64_t srcFirst = (uint64_t(p.kStartPt / c0) * pixels + p.mStartPt) * c0;
  twin::CheckBytes(src, uint64_t(p.channelSize) * pixels * sizeof(T), kApi, "src");
  twin::CheckBytes(dst, elems * sizeof(T), kApi, "dst");
  twin::Observe();
  if (exec == twin::CubeExec::kRun) {
    const T* in = src.TwinPtr();
    T* out = dst.TwinPtr();
    const bool trans = p.enTranspose && !toB;
    for (uint32_t k = 0; k < p.kExtension; ++k) {
      const T* column = in + (uint64_t((p.kStartPt + k) / c0) * pixels + p.mStartPt) * c0 + k % c0;
      for (uint32_t m = 0; m < p.mExtension; ++m)
        std::memcpy(out + twin::Load3dDst<T>(toB, trans, m, k, p.mExtension, p.kExtension), column + uint64_t(m) * c0,
                    sizeof(T));
    }
  }
  if (twin::Recording()) {
    twin::Instr in = twin::OpInstr(twin::Pipe::MTE1, "LoadData", twin::DtypeName<T>(), elems);
    twin::Access r;  // one run of the window's rows per C0 channel group
    r.space = twin::Space::L1, r.elemBytes = sizeof(T);
    r.span = twin::Strided(src.TwinOffset() + srcFirst * sizeof(T), pixels * twin::kBlockBytes,
                           uint64_t(p.mExtension) * twin::kBlockBytes, uint32_t(groups));
    in.Add(r);
    in.Add(twin::Access::Write(ds, dst.TwinOffset(), elems * sizeof(T), twin::Init::kReduce, sizeof(T)));
    twin::Emit(in);
  }
}

}  // namespace AscendC
