// Deliberately unsynchronised / uninitialised / overlapping Ascend C kernels, one per sanitizer
// finding, exposed as torch.ops.twin_sanitizer_faults.run(name, block_dim). Every one of them
// computes the right numbers on the twin (which runs in program order); on the NPU each would
// race, hang or write garbage. "clean" uses every construct correctly and must pass.
#include <torch/library.h>

#include <map>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "twin_core.h"
#include "twin_launch.h"

using namespace AscendC;

namespace {
constexpr uint32_t kElems = 256;  // one row: 1 KiB of float

struct Rig {  // a pipe, queues, scratch and this block's row of GM (rows are blockDim apart)
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> inQ;
  TQue<QuePosition::VECOUT, 2> outQ;
  TBuf<TPosition::VECCALC> calc;
  GlobalTensor<float> row, shared;
  explicit Rig(GM_ADDR x) {
    shared.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x), kElems * 2 * GetBlockNum());
    row = shared[kElems * 2 * GetBlockIdx()];
    pipe.InitBuffer(inQ, 2, kElems * sizeof(float));
    pipe.InitBuffer(outQ, 2, kElems * sizeof(float));
    pipe.InitBuffer(calc, 4 * kElems * sizeof(float));
  }
  // The row through an inQ buffer and out of it: that FreeTensor sets V_MTE2 with the pipe's id 0, for the
  // buffer's next AllocTensor to wait on.
  void PassRow() {
    LocalTensor<float> a = inQ.AllocTensor<float>();
    DataCopy(a, row, kElems);
    inQ.EnQue(a);
    a = inQ.DeQue<float>();
    inQ.FreeTensor(a);
  }
};

// Every construct used right: queues, manual flags with ids from the pipe, padding computed on
// but never copied out, a scalar read after V_S.
extern "C" __global__ __aicore__ void clean(GM_ADDR x) {
  Rig r(x);
  for (int tile = 0; tile < 3; ++tile) {
    LocalTensor<float> a = r.inQ.AllocTensor<float>();
    DataCopyPad(a, r.row, DataCopyExtParams(1, 20 * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>());
    r.inQ.EnQue(a);
    a = r.inQ.DeQue<float>();
    LocalTensor<float> c = r.outQ.AllocTensor<float>();
    Adds(c, a, 1.0f, 24);  // lanes 20..23 are padding: computed on, never stored
    r.outQ.EnQue(c);
    r.inQ.FreeTensor(a);
    c = r.outQ.DeQue<float>();
    DataCopyPad(r.row[kElems + 32 * tile], c, DataCopyExtParams(1, 20 * sizeof(float), 0, 0, 0));
    r.outQ.FreeTensor(c);
  }
  LocalTensor<float> t = r.calc.Get<float>();
  Duplicate(t, 2.0f, 64);
  const TEventID id = GetTPipePtr()->FetchEventID(HardEvent::V_S);
  SetFlag<HardEvent::V_S>(id);
  WaitFlag<HardEvent::V_S>(id);
  (void)t.GetValue(3);
}

// DataCopy in, then the vector op reads it: the SetFlag is there, its WaitFlag is not.
extern "C" __global__ __aicore__ void missing_waitflag(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> a = r.calc.Get<float>(kElems);
  LocalTensor<float> b = r.calc.GetWithOffset<float>(kElems, kElems * sizeof(float));
  DataCopy(a, r.row, kElems);
  SetFlag<HardEvent::MTE2_V>(0);
  Add(b, a, a, kElems);
}

// The vector unit overwrites a buffer MTE3 is still copying out.
extern "C" __global__ __aicore__ void overwrite_during_copy_out(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> c = r.calc.Get<float>(kElems);
  Duplicate(c, 1.0f, kElems);
  SetFlag<HardEvent::V_MTE3>(1);
  WaitFlag<HardEvent::V_MTE3>(1);
  DataCopy(r.row, c, kElems);
  Muls(c, c, 2.0f, kElems);  // needs SetFlag/WaitFlag<MTE3_V> first
}

extern "C" __global__ __aicore__ void unpaired_setflag(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> c = r.calc.Get<float>(kElems);
  Duplicate(c, 1.0f, kElems);
  SetFlag<HardEvent::V_MTE3>(3);  // nobody waits
}

extern "C" __global__ __aicore__ void wait_without_set(GM_ADDR x) {
  Rig r(x);
  WaitFlag<HardEvent::MTE2_V>(2);
}

extern "C" __global__ __aicore__ void reserved_event_id(GM_ADDR x) {
  Rig r(x);
  SetFlag<HardEvent::S_V>(7);
  WaitFlag<HardEvent::S_V>(7);
}

// A literal id 0 collides with the id the TPipe gave the queue's pending FreeTensor.
extern "C" __global__ __aicore__ void event_id_collision(GM_ADDR x) {
  Rig r(x);
  r.PassRow();                    // SetFlag<V_MTE2>(0), waited by the next AllocTensor of that buffer
  SetFlag<HardEvent::V_MTE2>(0);  // same event, same id, still set
  WaitFlag<HardEvent::V_MTE2>(0);
}

// A manual WaitFlag consumes the event a FreeTensor set: the TPipe's own wait at the end hangs.
extern "C" __global__ __aicore__ void stolen_queue_event(GM_ADDR x) {
  Rig r(x);
  r.PassRow();
  WaitFlag<HardEvent::V_MTE2>(0);
}

// Reads a UB range nothing wrote and copies the result out.
extern "C" __global__ __aicore__ void uninitialised_read(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> a = r.calc.Get<float>(kElems);
  LocalTensor<float> b = r.calc.GetWithOffset<float>(kElems, kElems * sizeof(float));
  Duplicate(a, 1.0f, 128);  // only the first half
  Add(b, a, a, kElems);
  SetFlag<HardEvent::V_MTE3>(0);
  WaitFlag<HardEvent::V_MTE3>(0);
  DataCopy(r.row, b, kElems);
}

// Copies out the padding DataCopyPad left unfilled (20 floats land in a 24-float row).
extern "C" __global__ __aicore__ void padding_copied_out(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> a = r.inQ.AllocTensor<float>();
  DataCopyPad(a, r.row, DataCopyExtParams(1, 20 * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>());
  r.inQ.EnQue(a);
  a = r.inQ.DeQue<float>();
  LocalTensor<float> c = r.outQ.AllocTensor<float>();
  Muls(c, a, 3.0f, 24);
  r.outQ.EnQue(c);
  c = r.outQ.DeQue<float>();
  DataCopy(r.row[kElems], c, 24);  // 24 floats = 3 whole blocks, 4 of them padding
  r.inQ.FreeTensor(a);
  r.outQ.FreeTensor(c);
}

// Two DataCopy GM->UB into overlapping UB with no PipeBarrier<PIPE_MTE2> between them.
extern "C" __global__ __aicore__ void mte2_overlap_no_barrier(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> a = r.calc.Get<float>(kElems);
  DataCopy(a, r.row, kElems);
  DataCopy(a[64], r.row, 64);
}

// Writes GM, then reads the same GM back without SetFlag/WaitFlag<MTE3_MTE2>.
extern "C" __global__ __aicore__ void gm_read_back_unsynced(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> c = r.calc.Get<float>(kElems);
  LocalTensor<float> d = r.calc.GetWithOffset<float>(kElems, kElems * sizeof(float));
  Duplicate(c, 1.0f, kElems);
  SetFlag<HardEvent::V_MTE3>(0);
  WaitFlag<HardEvent::V_MTE3>(0);
  DataCopy(r.row, c, kElems);
  DataCopy(d, r.row, kElems);
}

// Every block writes the same GM row.
extern "C" __global__ __aicore__ void blocks_write_same_row(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> c = r.calc.Get<float>(kElems);
  Duplicate(c, float(GetBlockIdx()), kElems);
  SetFlag<HardEvent::V_MTE3>(0);
  WaitFlag<HardEvent::V_MTE3>(0);
  DataCopy(r.shared, c, kElems);
}

// Block b reads the row block b+1 writes.
extern "C" __global__ __aicore__ void block_reads_neighbours_row(GM_ADDR x) {
  Rig r(x);
  LocalTensor<float> c = r.calc.Get<float>(kElems);
  const int64_t next = (GetBlockIdx() + 1) % GetBlockNum();
  DataCopy(c, r.shared[kElems * 2 * next], kElems);
  SetFlag<HardEvent::MTE2_MTE3>(0);
  WaitFlag<HardEvent::MTE2_MTE3>(0);
  DataCopy(r.row, c, kElems);
}

using Kernel = void (*)(GM_ADDR);
const KernelTable<Kernel>& Kernels() {
  static const KernelTable<Kernel> kernels{{"clean", clean},
                                           {"missing_waitflag", missing_waitflag},
                                           {"overwrite_during_copy_out", overwrite_during_copy_out},
                                           {"unpaired_setflag", unpaired_setflag},
                                           {"wait_without_set", wait_without_set},
                                           {"reserved_event_id", reserved_event_id},
                                           {"event_id_collision", event_id_collision},
                                           {"stolen_queue_event", stolen_queue_event},
                                           {"uninitialised_read", uninitialised_read},
                                           {"padding_copied_out", padding_copied_out},
                                           {"mte2_overlap_no_barrier", mte2_overlap_no_barrier},
                                           {"gm_read_back_unsynced", gm_read_back_unsynced},
                                           {"blocks_write_same_row", blocks_write_same_row},
                                           {"block_reads_neighbours_row", block_reads_neighbours_row}};
  return kernels;
}

void Run(c10::string_view name, int64_t blockDim) {
  auto it = FindKernel(Kernels(), name, "sanitizer fault kernel");
  std::vector<float> gm(size_t(kElems) * 2 * size_t(blockDim), 1.0f);
  RaiseRuleErrors([&] {
    // told its size, the launch takes the caller-thread or the pool path by set_inline_launch_bytes
    AscendC::twin::LaunchMoving(gm.size() * sizeof(float), it->first.c_str(), uint32_t(blockDim), it->second,
                                reinterpret_cast<GM_ADDR>(gm.data()));
  });
}

std::vector<std::string> Names() { return KernelNames(Kernels()); }
}  // namespace

TORCH_LIBRARY(twin_sanitizer_faults, m) {
  m.def("run(str name, int block_dim=2) -> ()", &Run);
  m.def("names() -> str[]", &Names);
}
