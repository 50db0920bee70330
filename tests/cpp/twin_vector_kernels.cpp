// Kernels that run one vector instruction on data from Python, so tests/twin/test_vector_fidelity.py
// can compare the twin's arithmetic bit for bit with the A2 order computed independently in NumPy.
// torch.ops.twin_vector.reduce_sum(x, count, dst): ReduceSum's count form over x[0, count) into a copy
// of dst (one 32-byte block), returned; x is padded to whole 32-byte blocks for the copy in.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "kernel_utils.h"
#include "twin_core.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {
template <typename T>
void ReduceSumKernel(GM_ADDR x, GM_ADDR dst, uint32_t padded, int32_t count) {
  constexpr uint32_t kBlock = 32 / sizeof(T);
  TPipe pipe;
  TBuf<TPosition::VECCALC> srcBuf, dstBuf, tmpBuf;
  pipe.InitBuffer(srcBuf, padded * sizeof(T));
  pipe.InitBuffer(dstBuf, 32);
  pipe.InitBuffer(tmpBuf, 32);
  GlobalTensor<T> xGm, dstGm;
  xGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), padded);
  dstGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dst), kBlock);
  LocalTensor<T> src = srcBuf.Get<T>(), out = dstBuf.Get<T>(), tmp = tmpBuf.Get<T>();
  DataCopy(src, xGm, padded);
  DataCopy(out, dstGm, kBlock);
  SyncPipes<HardEvent::MTE2_V>();
  ReduceSum(out, src, tmp, count);
  SyncPipes<HardEvent::V_MTE3>();
  DataCopy(dstGm, out, kBlock);
}

template <typename T>
void RunReduceSum(at::Tensor& xp, at::Tensor& out, int64_t count) {
  AscendC::twin::Launch("reduce_sum", 1, &ReduceSumKernel<T>, reinterpret_cast<GM_ADDR>(xp.data_ptr()),
                        reinterpret_cast<GM_ADDR>(out.data_ptr()), uint32_t(xp.numel()), int32_t(count));
}

at::Tensor ReduceSumOp(const at::Tensor& x, int64_t count, const at::Tensor& dst) {
  TORCH_CHECK(x.dim() == 1 && dst.dim() == 1 && x.scalar_type() == dst.scalar_type(), "1-D x and dst of one dtype");
  TORCH_CHECK(dst.numel() * dst.element_size() == 32, "dst is one 32-byte block");
  const int64_t perBlock = 32 / x.element_size();
  const int64_t padded = std::max<int64_t>(perBlock, (x.numel() + perBlock - 1) / perBlock * perBlock);
  at::Tensor xp = at::zeros({padded}, x.options());
  xp.narrow(0, 0, x.numel()).copy_(x);
  at::Tensor out = dst.contiguous().clone();
  RaiseRuleErrors([&] {
    if (x.scalar_type() == at::kFloat) RunReduceSum<float>(xp, out, count);
    else if (x.scalar_type() == at::kHalf) RunReduceSum<half>(xp, out, count);
    else TORCH_CHECK(false, "float32 or float16");
  });
  return out;
}
}  // namespace

TORCH_LIBRARY(twin_vector, m) { m.def("reduce_sum(Tensor x, int count, Tensor dst) -> Tensor", &ReduceSumOp); }
