// Helpers shared by the kernels; plain Ascend C, valid on the NPU and on the CPU twin.
#pragma once
#include "kernel_operator.h"

// Copies the tiling struct the host wrote to GM into a local struct (what the op build's
// GET_TILING_DATA expands to; direct-launch kernels do it themselves).
template <typename TilingData>
__aicore__ inline void CopyTiling(TilingData* dst, GM_ADDR tiling) {
  __gm__ uint32_t* src = reinterpret_cast<__gm__ uint32_t*>(tiling);
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  for (uint32_t i = 0; i < sizeof(TilingData) / sizeof(uint32_t); ++i) {
    out[i] = src[i];
  }
}

// Block b of n takes tasks [begin, begin + count) of taskCount, the first `remainder` blocks one more.
__aicore__ inline void BlockTaskRange(int64_t perBlock, int64_t remainder, int64_t& begin, int64_t& count) {
  const int64_t b = AscendC::GetBlockIdx();
  count = perBlock + (b < remainder ? 1 : 0);
  begin = b * perBlock + (b < remainder ? b : remainder);
}

// Elements a run of `len` elements occupies in UB once DataCopyPad has padded it to 32 bytes.
template <typename T>
__aicore__ inline uint32_t PaddedLen(uint32_t len) {
  constexpr uint32_t perBlock = 32 / sizeof(T);
  return (len + perBlock - 1) / perBlock * perBlock;
}

// SetFlag then WaitFlag on `evt` with an id the TPipe's queues are not holding. A literal id can
// collide with the id a TQue hand-off holds (FreeTensor's V_MTE2, say): a second SetFlag on a
// set event is undefined and hangs the device, so TPipe kernels take ids from FetchEventID.
template <AscendC::HardEvent evt>
__aicore__ inline void SyncPipes() {
  using namespace AscendC;  // CANN declares GetTPipePtr() globally, the twin in AscendC: both found
  const TEventID id = GetTPipePtr()->FetchEventID(evt);
  AscendC::SetFlag<evt>(id);
  AscendC::WaitFlag<evt>(id);
}
