// The attention kernels' dropout-mask unpacking (csrc/kernels/attention_dropout.h) on one AIV, so
// tests/twin/test_attention_dropout_unpack.py can check it against torch_npu's packing in NumPy:
// torch.ops.twin_attention_dropout.factors(mask, first_bit, row_bits, rows, cols, keep_prob) -> fp32 [rows, pp],
// keep / keep_prob of rows [0, rows) x keys [0, cols), row r's first key at bit first_bit + r * row_bits.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include "attention_dropout.h"
#include "kernel_operator.h"
#include "kernel_table.h"
#include "kernel_utils.h"
#include "twin_core.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {

void FactorsKernel(GM_ADDR maskGm, GM_ADDR outGm, uint64_t maskBytes, int64_t firstBit, int64_t rowBits, uint32_t rows,
                   uint32_t cols, float keepProb) {
  using attention_dropout::kShifts;
  const uint32_t pp = (cols + 7) / 8 * 8, rb = AttentionDropoutRowBytes(cols), pitch = pp + 8;  // wider tables
  TPipe pipe;
  TBuf<TPosition::VECCALC> bytesBuf, floatBuf, scratchBuf, factorBuf, offsetBuf, powerBuf;
  pipe.InitBuffer(bytesBuf, rows * rb);
  pipe.InitBuffer(floatBuf, rows * rb * 4);
  pipe.InitBuffer(scratchBuf, rows * (pp > rb / 2 ? pp : rb / 2) * 4);
  pipe.InitBuffer(factorBuf, rows * pp * 4);
  pipe.InitBuffer(offsetBuf, kShifts * pitch * 4);
  pipe.InitBuffer(powerBuf, kShifts * pitch * 4);
  GlobalTensor<uint8_t> mask;
  mask.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(maskGm), maskBytes);
  GlobalTensor<float> out;
  out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(outGm), uint64_t(rows) * pp);
  LocalTensor<uint32_t> offsets = offsetBuf.Get<uint32_t>();
  LocalTensor<float> powers = powerBuf.Get<float>(), factors = factorBuf.Get<float>();
  AttentionDropoutTables(offsets, powers, pitch);
  SyncPipes<HardEvent::S_V>();
  AttentionLoadDropout(bytesBuf.Get<uint8_t>(), mask, firstBit, rowBits, rows, cols, rb);
  SyncPipes<HardEvent::MTE2_V>();
  AttentionDropoutFactors(factors, bytesBuf.Get<uint8_t>(), floatBuf.Get<float>(), scratchBuf.Get<float>(), offsets,
                          powers, pitch, firstBit, rowBits, rows, pp, rb, 1.0f / keepProb);
  SyncPipes<HardEvent::V_MTE3>();
  DataCopy(out, factors, rows * pp);
}

at::Tensor FactorsOp(const at::Tensor& mask, int64_t firstBit, int64_t rowBits, int64_t rows, int64_t cols,
                     double keepProb) {
  TORCH_CHECK(mask.scalar_type() == at::kByte && mask.dim() == 1, "a 1-D uint8 mask");
  TORCH_CHECK(rows > 0 && rows <= 64 && cols > 0 && cols <= 256, "rows in [1, 64], cols in [1, 256]");
  const int64_t pp = (cols + 7) / 8 * 8;
  at::Tensor m = mask.contiguous();
  at::Tensor out = at::empty({rows, pp}, at::kFloat);
  RaiseRuleErrors([&] {
    AscendC::twin::Launch("attention_dropout_factors", 1, &FactorsKernel, reinterpret_cast<GM_ADDR>(m.data_ptr()),
                          reinterpret_cast<GM_ADDR>(out.data_ptr()), uint64_t(m.numel()), firstBit, rowBits,
                          uint32_t(rows), uint32_t(cols), float(keepProb));
  });
  return out;
}

}  // namespace

TORCH_LIBRARY(twin_attention_dropout, m) {
  m.def("factors(Tensor mask, int first_bit, int row_bits, int rows, int cols, float keep_prob) -> Tensor", &FactorsOp);
}
