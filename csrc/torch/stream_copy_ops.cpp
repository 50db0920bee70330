// The streaming copy test op: torch.ops.ascendc_ops.stream_copy(x, buffer_num, block_dim) runs
// csrc/kernels/stream_copy.cpp on the twin. Not a product op (no op_proto): it calibrates the
// pipeline model and shows kernel authors the smallest complete kernel.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "stream_copy_tiling.h"
#include "twin_backend.h"

extern "C" void stream_copy(uint8_t* x, uint8_t* y, uint8_t* workspace, uint8_t* tiling);

namespace ascendc_ops {
namespace {

at::Tensor StreamCopy(const at::Tensor& x, int64_t bufferNum, int64_t blockDim) {
  TORCH_CHECK_VALUE(x.device().is_cpu(), "stream_copy: x must be on the CPU (the twin), got ", x.device());
  TORCH_CHECK_VALUE(x.element_size() % 2 == 0, "stream_copy: x must have 2- or 4-byte elements, got ", x.scalar_type());
  TORCH_CHECK_VALUE(bufferNum == 1 || bufferNum == 2, "stream_copy: buffer_num must be 1 or 2, got ", bufferNum);
  TORCH_CHECK_VALUE(blockDim >= 0 && blockDim <= 65535,
                    "stream_copy: block_dim must be in [0, 65535] (0: one per core), got ", blockDim);
  const at::Tensor src = x.contiguous();
  at::Tensor out = at::empty_like(src, at::MemoryFormat::Contiguous);
  const tiling::StreamCopyTiling t = tiling::TileStreamCopy(src.numel() * src.element_size() / 2, uint32_t(bufferNum),
                                                            uint32_t(blockDim), TwinPlatform());
  if (t.blockDim == 0) return out;
  StreamCopyTilingData data = t.data;
  LaunchOnTwin("stream_copy", t.blockDim, stream_copy, Gm(src), Gm(out), static_cast<uint8_t*>(nullptr),
               reinterpret_cast<uint8_t*>(&data));
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("stream_copy(Tensor x, int buffer_num=2, int block_dim=0) -> Tensor", &StreamCopy);
}

}  // namespace ascendc_ops
