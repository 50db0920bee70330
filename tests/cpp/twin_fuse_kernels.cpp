// Kernels that stress fused execution's aliasing rule (csrc/twin/twin_fuse.h): views of one buffer
// at shifted starts or with another element type, inside one run of element-wise instructions, in
// UB and through GM. Each reads N floats of x and writes N floats of y; tests/twin/test_twin_speed.py
// runs each fused and unfused (ASCENDC_TWIN_FUSE=0) and against NumPy. N spans several strips.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <map>
#include <string>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "twin_core.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {
constexpr uint32_t kN = 4096;
constexpr uint32_t kShift = 64;  // 256 bytes: aligned views, shifted by less than a strip

struct Bufs {
  TPipe pipe;
  TBuf<TPosition::VECCALC> ba, bb, bc;
  GlobalTensor<float> x, y;
  LocalTensor<float> a, b, c;
  Bufs(GM_ADDR xp, GM_ADDR yp) {
    x.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(xp), kN);
    y.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(yp), kN);
    pipe.InitBuffer(ba, kN * sizeof(float));
    pipe.InitBuffer(bb, kN * sizeof(float));
    pipe.InitBuffer(bc, kN * sizeof(float));
    a = ba.Get<float>(), b = bb.Get<float>(), c = bc.Get<float>();
    DataCopy(a, x, kN);
    Duplicate(c, 0.0f, kN);
    Duplicate(b, -1.0f, kN);  // not what the last launch left in this thread's UB ...
    (void)b.GetValue(0);      // ... before the kernel's run starts (a scalar read ends a run)
  }
  void Store() { DataCopy(y, c, kN); }
};

// c[i] = 2 x[i + 64] + 1: a read ahead of the instruction that writes it.
extern "C" __global__ __aicore__ void shifted_read(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 2.0f, kN);
  Adds(k.c, k.b[kShift], 1.0f, kN - kShift);
  k.Store();
}

// c = 2x, then c[64:] = x[:-64] + 1: two writes of one buffer at different starts.
extern "C" __global__ __aicore__ void shifted_write(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.c, k.a, 2.0f, kN);
  Adds(k.c[kShift], k.a, 1.0f, kN - kShift);
  k.Store();
}

// A read of b, then a write of b 64 elements further on: the read must see the old values.
extern "C" __global__ __aicore__ void war_shift(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 3.0f, kN);
  Adds(k.c, k.b, 1.0f, kN);
  Muls(k.b[kShift], k.a, 2.0f, kN - kShift);
  Add(k.c, k.c, k.b, kN);
  k.Store();
}

// One instruction whose source is its own destination a repeat further on (what A2 allows of a
// shifted self-overlap): each element is read before the instruction overwrites it.
extern "C" __global__ __aicore__ void self_overlap(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 2.0f, kN);
  Add(k.b, k.b[kShift], k.a, kN - kShift);
  DataCopy(k.c, k.b, kN);
  k.Store();
}

// Halves written, then the same bytes read as floats (another element size).
extern "C" __global__ __aicore__ void retyped(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Duplicate(k.b, 0.0f, kN);
  LocalTensor<half> h = k.b.ReinterpretCast<half>();
  Cast(h, k.a, RoundMode::CAST_NONE, kN);
  DataCopy(k.c, k.b, kN / 2);
  k.Store();
}

// UB -> GM, then GM -> UB of the same bytes 64 elements on: aliasing through GM.
extern "C" __global__ __aicore__ void gm_roundtrip(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 2.0f, kN);
  DataCopy(k.y, k.b, kN);
  DataCopy(k.c, k.y[kShift], kN - kShift);
  Adds(k.c, k.c, 1.0f, kN - kShift);
  Duplicate(k.c[kN - kShift], 0.0f, kShift);
  k.Store();
}

// A scalar read in the middle of a run: c = 2 x[100] + 2x.
extern "C" __global__ __aicore__ void scalar_read(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 2.0f, kN);
  const float v = k.b.GetValue(100);
  Duplicate(k.c, v, kN);
  Add(k.c, k.c, k.b, kN);
  k.Store();
}

// Scalar writes in the middle of a run: one to an operand the run reads, one to a buffer it does not touch.
extern "C" __global__ __aicore__ void scalar_write(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 2.0f, kN);
  k.a.SetValue(3, 100.0f);
  k.c.SetValue(5, 9.0f);
  Add(k.c, k.c, k.b, kN);
  Add(k.c, k.c, k.a, kN);
  k.Store();
}

// 32 rows of 100 floats, 128 apart in GM, land padded (2 left, 4 right, value 7) 112 apart in UB;
// +1 on everything; rows of 106 go back 128 apart. Strided row copies inside a run.
extern "C" __global__ __aicore__ void pad_rows(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  DataCopyPad(k.b, k.x, DataCopyExtParams(32, 100 * 4, 28 * 4, 0, 0), DataCopyPadExtParams<float>(true, 2, 4, 7.0f));
  Adds(k.c, k.b, 1.0f, 32 * 112);
  DataCopyPad(k.y, k.c, DataCopyExtParams(32, 106 * 4, 0, 22 * 4, 0));
}

// Rows stored to GM, then rows loaded back one row and 4 columns on: aliasing through strided GM.
extern "C" __global__ __aicore__ void pad_roundtrip(GM_ADDR x, GM_ADDR y) {
  Bufs k(x, y);
  Muls(k.b, k.a, 2.0f, kN);
  DataCopyPad(k.y, k.b, DataCopyExtParams(32, 100 * 4, 3, 28 * 4, 0));
  DataCopyPad(k.c, k.y[128 + 4], DataCopyExtParams(31, 96 * 4, 32 * 4, 0, 0), DataCopyPadExtParams<float>());
  Adds(k.c, k.c, 1.0f, 31 * 96);
  k.Store();
}

using Kernel = void (*)(GM_ADDR, GM_ADDR);
const KernelTable<Kernel>& Kernels() {
  static const KernelTable<Kernel> k = {
      {"shifted_read", shifted_read}, {"shifted_write", shifted_write},
      {"war_shift", war_shift},       {"self_overlap", self_overlap},
      {"retyped", retyped},           {"gm_roundtrip", gm_roundtrip},
      {"scalar_read", scalar_read},   {"pad_rows", pad_rows},
      {"scalar_write", scalar_write}, {"pad_roundtrip", pad_roundtrip},
  };
  return k;
}

at::Tensor Run(c10::string_view name, const at::Tensor& x) {
  auto it = FindKernel(Kernels(), name, "fuse kernel");
  TORCH_CHECK_VALUE(x.dtype() == at::kFloat && x.numel() == kN && x.is_contiguous(), "x must be ", kN,
                    " contiguous floats");
  at::Tensor y = at::zeros({int64_t(kN)}, x.options());
  RaiseRuleErrors([&] {
    AscendC::twin::Launch(it->first.c_str(), 1, it->second, reinterpret_cast<GM_ADDR>(x.data_ptr<float>()),
                          reinterpret_cast<GM_ADDR>(y.data_ptr<float>()));
  });
  return y;
}

std::vector<std::string> Names() { return KernelNames(Kernels()); }
}  // namespace

TORCH_LIBRARY(twin_fuse_kernels, m) {
  m.def("run(str name, Tensor x) -> Tensor", &Run);
  m.def("names() -> str[]", &Names);
}
