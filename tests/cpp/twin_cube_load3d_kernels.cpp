// LoadData 3Dv2 (csrc/twin/twin_cube_load3d.h) on the twin, for tests/twin/test_twin_cube_load3d.py:
//   torch.ops.twin_cube_load3d.run(l1, params, to_b)  copies l1 (the raw feature map: int8, int16 as
//   b16, int32 as b32) into L1, issues one LoadData 3Dv2 into L0A (or L0B) with
//   params = [l1H, l1W, channelSize, kExtension, mExtension, kStartPt, mStartPt, enTranspose, filterW,
//   padLeft] and returns the mExtension * kExtension elements it wrote. No path leads from L0 to GM,
//   so the result is read through the twin's pointer once the block is done.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <cstring>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "twin_cube_load3d.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {
std::vector<int64_t> gParams;  // the launch's parameters (one launch at a time)
bool gToB = false;

template <typename T>
void LoadBlock(GM_ADDR l1Gm, GM_ADDR out, uint32_t n, uint32_t outElems) {
  GlobalTensor<T> src;
  src.SetGlobalBuffer(reinterpret_cast<T*>(l1Gm), n);
  TPipe pipe;
  TBuf<TPosition::A1> l1Buf;
  TBuf<TPosition::A2> l0aBuf;
  TBuf<TPosition::B2> l0bBuf;
  pipe.InitBuffer(l1Buf, n * sizeof(T));
  pipe.InitBuffer(l0aBuf, 64 * 1024);
  pipe.InitBuffer(l0bBuf, 64 * 1024);
  LocalTensor<T> l1 = l1Buf.Get<T>();
  DataCopy(l1, src, Nd2NzParams(1, 1, uint16_t(n), 0, uint16_t(n), 1, 1, 0));  // one ND row: bytes as they are
  SetFlag<HardEvent::MTE2_MTE1>(0);
  WaitFlag<HardEvent::MTE2_MTE1>(0);
  LoadData3DParamsV2<T> p;
  const auto& v = gParams;
  p.l1H = uint16_t(v[0]), p.l1W = uint16_t(v[1]), p.channelSize = uint16_t(v[2]);
  p.kExtension = uint16_t(v[3]), p.mExtension = uint16_t(v[4]), p.kStartPt = uint16_t(v[5]);
  p.mStartPt = uint16_t(v[6]), p.enTranspose = v[7] != 0, p.filterW = uint8_t(v[8]), p.padList[0] = uint8_t(v[9]);
  LocalTensor<T> l0 = gToB ? l0bBuf.Get<T>() : l0aBuf.Get<T>();
  LoadData(l0, l1, p);
  std::memcpy(out, l0.TwinPtr(), outElems * sizeof(T));
}

template <typename T>
void Kernel(GM_ADDR l1, GM_ADDR out, GM_ADDR sizes) {
  const auto* s = reinterpret_cast<const int64_t*>(sizes);
  LoadBlock<T>(l1, out, uint32_t(s[0]), uint32_t(s[1]));
}
extern "C" __global__ __aicore__ void load3d_b8(GM_ADDR l1, GM_ADDR out, GM_ADDR s) { Kernel<int8_t>(l1, out, s); }
extern "C" __global__ __aicore__ void load3d_b16(GM_ADDR l1, GM_ADDR out, GM_ADDR s) { Kernel<half>(l1, out, s); }
extern "C" __global__ __aicore__ void load3d_b32(GM_ADDR l1, GM_ADDR out, GM_ADDR s) { Kernel<float>(l1, out, s); }

torch::Tensor Run(torch::Tensor l1, std::vector<int64_t> params, bool toB) {
  TORCH_CHECK(params.size() == 10, "params: l1H, l1W, channelSize, kExt, mExt, kStart, mStart, trans, filterW, pad");
  l1 = l1.contiguous();
  const auto st = l1.scalar_type();
  TORCH_CHECK(st == torch::kInt8 || st == torch::kInt16 || st == torch::kInt32, "l1: int8, int16 or int32");
  torch::Tensor out = torch::zeros({params[4] * params[3]}, l1.options());
  torch::Tensor sizes = torch::tensor({l1.numel(), out.numel()}, torch::kInt64);
  gParams = params, gToB = toB;
  auto* kernel = st == torch::kInt8 ? load3d_b8 : st == torch::kInt16 ? load3d_b16 : load3d_b32;
  RaiseRuleErrors([&] {
    AscendC::twin::Launch("load3d", 1, kernel, reinterpret_cast<GM_ADDR>(l1.data_ptr()),
                          reinterpret_cast<GM_ADDR>(out.data_ptr()), reinterpret_cast<GM_ADDR>(sizes.data_ptr()));
  });
  return out;
}
}  // namespace

TORCH_LIBRARY(twin_cube_load3d, m) { m.def("run(Tensor l1, int[] params, bool to_b) -> Tensor", &Run); }
