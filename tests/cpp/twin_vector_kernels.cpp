// Kernels that run one vector instruction on data from Python, so tests/twin/test_vector_fidelity.py
// can compare the twin's arithmetic bit for bit with the A2 order computed independently in NumPy.
// torch.ops.twin_vector.reduce_sum(x, count, dst): ReduceSum's count form over x[0, count) into a copy
// of dst (one 32-byte block), returned; x is padded to whole 32-byte blocks for the copy in.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <string>
#include <vector>

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

// One instruction over n elements (a whole number of 32-byte blocks) of GM tensors in, out: the ins
// are copied to UB, `op` runs on the UB copies, the result goes back to `out`.
template <typename T, typename U, typename Op>
void Elementwise(const char* name, std::vector<at::Tensor> ins, at::Tensor& out, Op op) {
  const int64_t n = out.numel();
  TORCH_CHECK((n * sizeof(T)) % 32 == 0 && (n * sizeof(U)) % 32 == 0, "whole 32-byte blocks");
  auto kernel = [&]() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> inBuf[3], outBuf;
    LocalTensor<U> local[3];
    for (size_t i = 0; i < ins.size(); ++i) {
      pipe.InitBuffer(inBuf[i], uint32_t(n * sizeof(U)));
      local[i] = inBuf[i].Get<U>();
      GlobalTensor<U> gm;
      gm.SetGlobalBuffer(reinterpret_cast<__gm__ U*>(ins[i].data_ptr()), n);
      DataCopy(local[i], gm, uint32_t(n));
    }
    pipe.InitBuffer(outBuf, uint32_t(n * sizeof(T)));
    LocalTensor<T> dst = outBuf.Get<T>();
    GlobalTensor<T> outGm;
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out.data_ptr()), n);
    DataCopy(dst, outGm, uint32_t(n));  // the accumulator of MulAddDst
    SyncPipes<HardEvent::MTE2_V>();
    op(dst, local, int32_t(n));
    SyncPipes<HardEvent::V_MTE3>();
    DataCopy(outGm, dst, uint32_t(n));
  };
  RaiseRuleErrors([&] { AscendC::twin::ForEachBlock(name, 1, kernel); });
}

// dst = a * b + dst with MulAddDst's count form; a, b, dst of one dtype (float or half).
at::Tensor MulAddDstOp(const at::Tensor& a, const at::Tensor& b, const at::Tensor& dst) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == dst.sizes() && a.dim() == 1, "1-D a, b, dst of one size");
  at::Tensor out = dst.contiguous().clone();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Elementwise<T, T>("mul_add_dst", {a.contiguous(), b.contiguous()}, out,
                      [](LocalTensor<T>& d, LocalTensor<T>* in, int32_t n) { MulAddDst(d, in[0], in[1], n); });
  };
  if (a.scalar_type() == at::kFloat) run(float());
  else if (a.scalar_type() == at::kHalf) run(half());
  else TORCH_CHECK(false, "float32 or float16");
  return out;
}

// Cast's count form: x (float32 or int32) to `to` ("half", "bfloat16", "int32", "float") with round mode
// `mode` (the RoundMode enum's value, CAST_NONE = 0 ... CAST_ODD = 6).
at::Tensor CastOp(const at::Tensor& x, c10::string_view to, int64_t mode) {
  TORCH_CHECK(x.dim() == 1 && mode >= 0 && mode <= 6, "1-D x, mode 0..6");
  const RoundMode m = static_cast<RoundMode>(mode);
  const std::string dst(to);
  auto run = [&](auto toTag, auto fromTag, at::ScalarType outType) {
    using T = decltype(toTag);
    using U = decltype(fromTag);
    at::Tensor out = at::zeros({x.numel()}, x.options().dtype(outType));
    Elementwise<T, U>("cast", {x.contiguous()}, out,
                      [m](LocalTensor<T>& d, LocalTensor<U>* in, int32_t n) { Cast(d, in[0], m, uint32_t(n)); });
    return out;
  };
  if (x.scalar_type() == at::kFloat && dst == "half") return run(half(), float(), at::kHalf);
  if (x.scalar_type() == at::kFloat && dst == "bfloat16") return run(bfloat16_t(), float(), at::kBFloat16);
  if (x.scalar_type() == at::kFloat && dst == "int32") return run(int32_t(), float(), at::kInt);
  if (x.scalar_type() == at::kInt && dst == "float") return run(float(), int32_t(), at::kFloat);
  TORCH_CHECK(false, "float32 -> half/bfloat16/int32 or int32 -> float");
}

// Sort<float, true> of scores (a whole number of 32-element repeats) with indices 0..n-1: the (score,
// index) pairs, as n x 2 int32 bit patterns (score bits, index).
at::Tensor SortOp(const at::Tensor& scores) {
  TORCH_CHECK(
      scores.dim() == 1 && scores.scalar_type() == at::kFloat && scores.numel() % 32 == 0 && scores.numel() <= 255 * 32,
      "float32 scores, whole 32-element repeats");
  const int64_t n = scores.numel();
  at::Tensor x = scores.contiguous();
  at::Tensor out = at::zeros({n, 2}, scores.options().dtype(at::kInt));
  auto kernel = [&]() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> scoreBuf, indexBuf, dstBuf, tmpBuf;
    pipe.InitBuffer(scoreBuf, uint32_t(n * 4));
    pipe.InitBuffer(indexBuf, uint32_t(n * 4));
    pipe.InitBuffer(dstBuf, uint32_t(n * 8));
    pipe.InitBuffer(tmpBuf, uint32_t(n * 8));
    GlobalTensor<float> in, outGm;
    in.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x.data_ptr()), n);
    outGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out.data_ptr()), 2 * n);
    LocalTensor<float> score = scoreBuf.Get<float>(), dst = dstBuf.Get<float>(), tmp = tmpBuf.Get<float>(), concat;
    LocalTensor<uint32_t> index = indexBuf.Get<uint32_t>();
    DataCopy(score, in, uint32_t(n));
    for (uint32_t i = 0; i < uint32_t(n); ++i) index.SetValue(i, i);
    SyncPipes<HardEvent::MTE2_V>();
    SyncPipes<HardEvent::S_V>();
    Concat(concat, score, tmp, int32_t(n / 32));
    Sort<float, true>(dst, concat, index, tmp, int32_t(n / 32));
    SyncPipes<HardEvent::V_MTE3>();
    DataCopy(outGm, dst, uint32_t(2 * n));
  };
  RaiseRuleErrors([&] { AscendC::twin::ForEachBlock("sort", 1, kernel); });
  return out;
}
}  // namespace

// ShiftLeft / ShiftRight by `by` over int16 or int32 x, run on the unsigned view when `isUnsigned`.
at::Tensor ShiftOp(const at::Tensor& x, bool left, int64_t by, bool isUnsigned) {
  TORCH_CHECK(x.dim() == 1, "1-D x");
  at::Tensor out = at::zeros_like(x);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Elementwise<T, T>("shift", {x.contiguous()}, out, [&](LocalTensor<T>& d, LocalTensor<T>* in, int32_t n) {
      if (left) ShiftLeft(d, in[0], T(by), n);
      else ShiftRight(d, in[0], T(by), n);
    });
  };
  if (x.scalar_type() == at::kShort) isUnsigned ? run(uint16_t()) : run(int16_t());
  else if (x.scalar_type() == at::kInt) isUnsigned ? run(uint32_t()) : run(int32_t());
  else TORCH_CHECK(false, "int16 or int32");
  return out;
}

// a | b with Or's count form on int16 (uint16 when `isUnsigned`).
at::Tensor OrOp(const at::Tensor& a, const at::Tensor& b, bool isUnsigned) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.dim() == 1 && a.scalar_type() == at::kShort, "1-D int16 a, b");
  at::Tensor out = at::zeros_like(a);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Elementwise<T, T>("or", {a.contiguous(), b.contiguous()}, out,
                      [](LocalTensor<T>& d, LocalTensor<T>* in, int32_t n) { Or(d, in[0], in[1], n); });
  };
  isUnsigned ? run(uint16_t()) : run(int16_t());
  return out;
}

TORCH_LIBRARY(twin_vector, m) {
  m.def("reduce_sum(Tensor x, int count, Tensor dst) -> Tensor", &ReduceSumOp);
  m.def("mul_add_dst(Tensor a, Tensor b, Tensor dst) -> Tensor", &MulAddDstOp);
  m.def("cast(Tensor x, str to, int mode) -> Tensor", &CastOp);
  m.def("sort(Tensor scores) -> Tensor", &SortOp);
  m.def("shift(Tensor x, bool left, int by, bool is_unsigned) -> Tensor", &ShiftOp);
  m.def("bitwise_or(Tensor a, Tensor b, bool is_unsigned) -> Tensor", &OrOp);
}
