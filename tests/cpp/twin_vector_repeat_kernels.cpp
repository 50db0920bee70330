// One mask/repeat ("level 0") vector instruction on data from Python, for tests/twin/test_vector_repeat.py:
// torch.ops.twin_repeat.run(op, a, b, dst, p) copies a, b and dst (1-D, one dtype, whole 32-byte blocks)
// into UB buffers of exactly their size, runs `op` and returns the dst buffer. p holds
// [mask, repeat, dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep, order, aOff, bOff, dOff, alias]:
// the reductions read srcBlk from src0Blk and srcRep from src0Rep, Brcb its strides from dstBlk/dstRep;
// the offsets are elements into each buffer; alias 1 (2) makes src0 (src1) dst's buffer at aOff (bOff).
// torch.ops.twin_repeat.record(on) / record_take(): this library's twin record export.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "kernel_utils.h"
#include "twin_core.h"
#include "twin_launch.h"
#include "twin_record.h"

using namespace AscendC;

namespace {
enum P {
  kMask,
  kRepeat,
  kDstBlk,
  kSrc0Blk,
  kSrc1Blk,
  kDstRep,
  kSrc0Rep,
  kSrc1Rep,
  kOrder,
  kAOff,
  kBOff,
  kDOff,
  kAlias
};

template <typename T>
void Dispatch(const std::string& op, const LocalTensor<T>& d, const LocalTensor<T>& a, const LocalTensor<T>& b,
              const std::vector<int64_t>& p) {
  const auto u8 = [&](P i) { return static_cast<uint8_t>(p[i]); };
  const BinaryRepeatParams rp(u8(kDstBlk), u8(kSrc0Blk), u8(kSrc1Blk), u8(kDstRep), u8(kSrc0Rep), u8(kSrc1Rep));
  const uint64_t mask = uint64_t(p[kMask]);
  const uint8_t rep = uint8_t(p[kRepeat]);
  const int32_t m = int32_t(p[kMask]), r = int32_t(p[kRepeat]);
  if (op == "Add") Add(d, a, b, mask, rep, rp);
  else if (op == "Sub") Sub(d, a, b, mask, rep, rp);
  else if (op == "Mul") Mul(d, a, b, mask, rep, rp);
  else if (op == "Div") Div(d, a, b, mask, rep, rp);
  else if (op == "Max") Max(d, a, b, mask, rep, rp);
  else if (op == "Min") Min(d, a, b, mask, rep, rp);
  else if (op == "WholeReduceSum")
    WholeReduceSum(d, a, m, r, int32_t(p[kDstRep]), int32_t(p[kSrc0Blk]), int32_t(p[kSrc0Rep]));
  else if (op == "WholeReduceMax")
    WholeReduceMax(d, a, m, r, int32_t(p[kDstRep]), int32_t(p[kSrc0Blk]), int32_t(p[kSrc0Rep]), ReduceOrder(p[kOrder]));
  else if (op == "BlockReduceSum")
    BlockReduceSum(d, a, r, m, int32_t(p[kDstRep]), int32_t(p[kSrc0Blk]), int32_t(p[kSrc0Rep]));
  else if (op == "BlockReduceMax")
    BlockReduceMax(d, a, r, m, int32_t(p[kDstRep]), int32_t(p[kSrc0Blk]), int32_t(p[kSrc0Rep]));
  else if (op == "Brcb") Brcb(d, a, rep, BrcbRepeatParams(uint16_t(p[kDstBlk]), uint16_t(p[kDstRep])));
  else TORCH_CHECK_VALUE(false, "unknown op ", op);
}

template <typename T>
void Run(const std::string& op, const at::Tensor& a, const at::Tensor& b, at::Tensor& out,
         const std::vector<int64_t>& p) {
  auto kernel = [&]() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf[3];
    LocalTensor<T> local[3];
    GlobalTensor<T> gm[3];
    const at::Tensor* src[3] = {&a, &b, &out};
    for (int i = 0; i < 3; ++i) {
      const uint32_t n = uint32_t(src[i]->numel());
      pipe.InitBuffer(buf[i], n * sizeof(T));
      local[i] = buf[i].Get<T>();
      gm[i].SetGlobalBuffer(reinterpret_cast<__gm__ T*>(src[i]->data_ptr()), n);
      DataCopy(local[i], gm[i], n);
    }
    SyncPipes<HardEvent::MTE2_V>();
    const LocalTensor<T> d = local[2][uint32_t(p[kDOff])];
    const LocalTensor<T> x = (p[kAlias] == 1 ? local[2] : local[0])[uint32_t(p[kAOff])];
    const LocalTensor<T> y = (p[kAlias] == 2 ? local[2] : local[1])[uint32_t(p[kBOff])];
    Dispatch<T>(op, d, x, y, p);
    SyncPipes<HardEvent::V_MTE3>();
    DataCopy(gm[2], local[2], uint32_t(out.numel()));
  };
  RaiseRuleErrors([&] { AscendC::twin::ForEachBlock("vector_repeat", 1, kernel); });
}

at::Tensor RunOp(c10::string_view op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& dst,
                 std::vector<int64_t> p) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1 && dst.dim() == 1, "1-D a, b, dst");
  TORCH_CHECK(a.scalar_type() == dst.scalar_type() && b.scalar_type() == dst.scalar_type(), "one dtype");
  TORCH_CHECK(p.size() == kAlias + 1, "13 parameters");
  for (const at::Tensor* t : {&a, &b, &dst})
    TORCH_CHECK((t->numel() * t->element_size()) % 32 == 0 && t->numel() > 0, "whole 32-byte blocks");
  at::Tensor out = dst.contiguous().clone();
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  const std::string name(op);
  switch (dst.scalar_type()) {
    case at::kFloat: Run<float>(name, x, y, out, p); break;
    case at::kHalf: Run<half>(name, x, y, out, p); break;
    case at::kInt: Run<int32_t>(name, x, y, out, p); break;
    case at::kShort: Run<int16_t>(name, x, y, out, p); break;
    default: TORCH_CHECK(false, "float32, float16, int32 or int16");
  }
  return out;
}
}  // namespace

// This library links its own copy of the twin: its record export, for the pipeline model's check.
void Record(bool on) { AscendC::twin::SetRecordExport(on); }
std::vector<std::string> RecordTake() { return AscendC::twin::TakeRecordedLaunches(); }

TORCH_LIBRARY(twin_repeat, m) {
  m.def("run(str op, Tensor a, Tensor b, Tensor dst, int[] p) -> Tensor", &RunOp);
  m.def("record(bool on) -> ()", &Record);
  m.def("record_take() -> str[]", &RecordTake);
}
