// The attention kernels' dropout-mask unpacking (csrc/kernels/attention_dropout.h's AttentionDropout) on one AIV,
// so tests/twin/test_attention_dropout_unpack.py can check it against torch_npu's packing in NumPy:
// torch.ops.twin_attention_dropout.factors(mask, first_bit, row_bits, rows, cols, keep_prob, pitch, mode)
// -> fp32 [rows, pp], keep / keep_prob of rows [0, rows) x keys [0, cols), row r's first key at bit
// first_bit + r * row_bits, with tables for blocks of `pitch` keys in AttentionDropoutMode `mode`.
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
                   uint32_t cols, float keepProb, uint32_t pitch, int32_t mode) {
  const uint32_t pp = (cols + 7) / 8 * 8;
  TPipe pipe;
  TBuf<TPosition::VECCALC> intoBuf;  // as the forward's bound buffer
  pipe.InitBuffer(intoBuf, rows * pitch * 4);
  AttentionDropout dropout;
  dropout.Init(pipe, AttentionDropoutBuffers(rows, pitch, mode), pitch, mode, maskGm, maskBytes);
  GlobalTensor<float> out;
  out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(outGm), uint64_t(rows) * pp);
  dropout.Load(firstBit, rowBits, rows, cols);
  const LocalTensor<float> factors =
      dropout.Factors(intoBuf.Get<float>(), firstBit, rowBits, rows, pp, 1.0f / keepProb);
  SyncPipes<HardEvent::V_MTE3>();
  DataCopy(out, factors, rows * pp);
}

at::Tensor FactorsOp(const at::Tensor& mask, int64_t firstBit, int64_t rowBits, int64_t rows, int64_t cols,
                     double keepProb, int64_t pitch, int64_t mode) {
  TORCH_CHECK(mask.scalar_type() == at::kByte && mask.dim() == 1, "a 1-D uint8 mask");
  TORCH_CHECK(rows > 0 && rows <= 64 && cols > 0 && cols <= pitch && pitch % 8 == 0 && pitch <= 512,
              "rows in [1, 64], cols in [1, pitch], pitch a multiple of 8 up to 512");
  TORCH_CHECK(mode == kDropoutBits || (mode == kDropoutBytes && cols % 8 == 0 && firstBit % 8 == 0 && rowBits % 8 == 0),
              "mode 1, or 2 with whole-byte rows");
  const int64_t pp = (cols + 7) / 8 * 8;
  at::Tensor m = mask.contiguous();
  at::Tensor out = at::empty({rows, pp}, at::kFloat);
  RaiseRuleErrors([&] {
    AscendC::twin::Launch("attention_dropout_factors", 1, &FactorsKernel, reinterpret_cast<GM_ADDR>(m.data_ptr()),
                          reinterpret_cast<GM_ADDR>(out.data_ptr()), uint64_t(m.numel()), firstBit, rowBits,
                          uint32_t(rows), uint32_t(cols), float(keepProb), uint32_t(pitch), int32_t(mode));
  });
  return out;
}

}  // namespace

TORCH_LIBRARY(twin_attention_dropout, m) {
  m.def(
      "factors(Tensor mask, int first_bit, int row_bits, int rows, int cols, float keep_prob, int pitch, "
      "int mode) -> Tensor",
      &FactorsOp);
}
