// Kernels whose cores work together (MIX kernel types, cross-core flags, SyncAll, atomic adds), one
// per rule of csrc/twin/twin_crosscore.h, exposed as torch.ops.twin_crosscore.run(name, block_dim)
// which returns the GM they wrote (tests/twin/test_crosscore.py). The valid ones must run clean
// under the sanitizer with the expected numbers; each fault must stop with its rule's name.
#include <torch/library.h>
#include <torch/types.h>  // not torch/torch.h: the whole C++ API, 8 s more to compile

#include <string>
#include <vector>

#include "kernel_operator.h"
#include "kernel_table.h"
#include "twin_core.h"
#include "twin_launch.h"
#include "twin_record.h"

using namespace AscendC;

extern "C" void mix_matmul_epilogue_example(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR y, GM_ADDR workspace,
                                            float scale);

namespace {
constexpr uint32_t kRow = 64;  // floats per core's row: 256 bytes
constexpr uint64_t kUserWorkspace = 64 * 1024;

// One row of GM per core slot (AICs first, then AIVs), plus the user workspace.
struct Gm {
  GlobalTensor<float> out, ws;
  Gm(GM_ADDR x, GM_ADDR workspace) {
    out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x), kRow * 3 * 64);
    ws.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(GetUserWorkspace(workspace)), kUserWorkspace / 4);
  }
};

// A vector core's row: load `src`, add `add`, store to `dst`.
void AddRow(const GlobalTensor<float>& dst, const GlobalTensor<float>& src, float add) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kRow * sizeof(float));
  LocalTensor<float> t = buf.Get<float>();
  DataCopy(t, src, kRow);
  SetFlag<HardEvent::MTE2_V>(0);
  WaitFlag<HardEvent::MTE2_V>(0);
  Adds(t, t, add, kRow);
  SetFlag<HardEvent::V_MTE3>(0);
  WaitFlag<HardEvent::V_MTE3>(0);
  DataCopy(dst, t, kRow);
}

// Each core writes what the launch model gives it: kind, GetBlockIdx, GetSubBlockIdx, GetBlockNum,
// GetTaskRation (AICs at slot GetBlockIdx, AIVs after the AICs).
extern "C" __global__ __aicore__ void core_ids(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  Gm g(x, workspace);
  const int64_t slot = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockNum() + GetBlockIdx();
  GlobalTensor<float> row = g.out[kRow * slot];
  row.SetValue(0, ASCEND_IS_AIC ? 1.0f : 2.0f);
  row.SetValue(1, float(GetBlockIdx()));
  row.SetValue(2, float(GetSubBlockIdx()));
  row.SetValue(3, float(GetBlockNum()));
  row.SetValue(4, float(GetTaskRation()));
}

// AIC -> GM workspace -> flag (mode 2) -> both AIVs read it; the AIVs answer with a mode-2 set the
// AIC waits for. Valid.
extern "C" __global__ __aicore__ void mix_handoff(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  Gm g(x, workspace);
  if ASCEND_IS_AIC {
    GlobalTensor<float> tile = g.ws[kRow * GetBlockIdx()];
    for (uint32_t i = 0; i < kRow; ++i) tile.SetValue(i, float(100 * GetBlockIdx() + i));
    CrossCoreSetFlag<2, PIPE_FIX>(3);
    CrossCoreWaitFlag<2, PIPE_FIX>(4);
  }
  if ASCEND_IS_AIV {
    CrossCoreWaitFlag<2, PIPE_MTE2>(3);
    const int64_t group = GetBlockIdx() / GetTaskRation();
    AddRow(g.out[kRow * GetBlockIdx()], g.ws[kRow * group], float(GetSubBlockIdx()));
    CrossCoreSetFlag<2, PIPE_MTE3>(4);
  }
}

// The same hand-off without the flags: the sanitizer's [cross-core race].
extern "C" __global__ __aicore__ void workspace_race(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  Gm g(x, workspace);
  if ASCEND_IS_AIC {
    GlobalTensor<float> tile = g.ws[kRow * GetBlockIdx()];
    for (uint32_t i = 0; i < kRow; ++i) tile.SetValue(i, float(i));
  }
  if ASCEND_IS_AIV
    AddRow(g.out[kRow * GetBlockIdx()], g.ws[kRow * (GetBlockIdx() / GetTaskRation())], 0.0f);
}

// Mode 0 across all AIVs of a MIX_AIV_1_0 kernel: every AIV writes its row, then reads its
// neighbour's. Valid.
extern "C" __global__ __aicore__ void mode0_neighbours(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  Gm g(x, workspace);
  GlobalTensor<float> src;
  src.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x) + kRow * 2 * 64, kRow * 64);
  AddRow(g.ws[kRow * GetBlockIdx()], src[kRow * GetBlockIdx()], 1.0f);
  CrossCoreSetFlag<0, PIPE_MTE3>(0);
  CrossCoreWaitFlag<0, PIPE_MTE2>(0);
  AddRow(g.out[kRow * GetBlockIdx()], g.ws[kRow * ((GetBlockIdx() + 1) % GetBlockNum())], 0.0f);
}

// Mode 1: the two AIVs of a group meet; sub-block 1 reads what sub-block 0 wrote. Valid.
extern "C" __global__ __aicore__ void mode1_pair(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  Gm g(x, workspace);
  if ASCEND_IS_AIC
    return;
  const int64_t group = GetBlockIdx() / GetTaskRation();
  if (GetSubBlockIdx() == 0) AddRow(g.ws[kRow * group], g.out[kRow * 2 * 64], 5.0f);
  CrossCoreSetFlag<1, PIPE_MTE3>(2);
  CrossCoreWaitFlag<1, PIPE_MTE2>(2);
  if (GetSubBlockIdx() == 1) AddRow(g.out[kRow * GetBlockIdx()], g.ws[kRow * group], 0.0f);
}

// Mode 2 from the AIVs: the AIC's flag rises once both AIVs have set, one AIV's k-th set meeting the
// other's k-th (CrossCoreSetFlag(ISASI).md). The twin runs one core at a time in slot order, so
// sub-block 0 sets twice before sub-block 1 sets at all; each round the AIC must still see both rows
// (row 64 + 2 g + round of out: sub-block 0's value + sub-block 1's). Valid.
extern "C" __global__ __aicore__ void mode2_one_aiv_ahead(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  Gm g(x, workspace);
  if ASCEND_IS_AIC {
    for (int64_t round = 0; round < 2; ++round) {
      CrossCoreWaitFlag<2, PIPE_MTE2>(5);
      const int64_t row = kRow * (4 * GetBlockIdx() + 2 * round);
      g.out.SetValue(kRow * (64 + 2 * GetBlockIdx() + round), g.ws.GetValue(row) + g.ws.GetValue(row + kRow));
    }
    return;
  }
  const int64_t group = GetBlockIdx() / GetTaskRation();
  for (int64_t round = 0; round < 2; ++round) {
    AddRow(g.ws[kRow * (4 * group + 2 * round + GetSubBlockIdx())], g.out[kRow * 128],
           float(10 * round + GetSubBlockIdx()));
    CrossCoreSetFlag<2, PIPE_MTE3>(5);
  }
}

// A one-launch reduction as the op package writes it (row phase, SyncAll, then block 0 sums the
// rows), with the kernel type the hard SyncAll needs for a pure vector kernel. Valid.
void RowsThenSum(Gm& g) {
  GlobalTensor<float> src;
  src.SetGlobalBuffer(g.out.GetPhyAddr() + kRow * 2 * 64, kRow * 64);
  AddRow(g.ws[kRow * GetBlockIdx()], src[kRow * GetBlockIdx()], float(GetBlockIdx()));
}
void SumRows(Gm& g) {
  if (GetBlockIdx() != 0) return;
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, 2 * kRow * sizeof(float));
  LocalTensor<float> acc = buf.Get<float>(), t = acc[kRow];
  Duplicate(acc, 0.0f, kRow);
  for (int64_t b = 0; b < GetBlockNum(); ++b) {
    DataCopy(t, g.ws[kRow * b], kRow);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Add(acc, acc, t, kRow);
    SetFlag<HardEvent::V_MTE2>(0);
    WaitFlag<HardEvent::V_MTE2>(0);
  }
  SetFlag<HardEvent::V_MTE3>(0);
  WaitFlag<HardEvent::V_MTE3>(0);
  DataCopy(g.out, acc, kRow);
}
extern "C" __global__ __aicore__ void mix_aiv_syncall(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  Gm g(x, workspace);
  RowsThenSum(g);
  SyncAll();
  SumRows(g);
}

// What csrc/kernels/op_package/rms_norm/rms_norm_grad_one_launch.h's entries and moe_token_permute declared
// before they took MIX_AIV_1_0: the hard SyncAll in a KERNEL_TYPE_AIV_ONLY kernel, which starts no
// scheduling module on A2.
extern "C" __global__ __aicore__ void aiv_only_hard_syncall(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Gm g(x, workspace);
  RowsThenSum(g);
  SyncAll();
  SumRows(g);
}

// The soft SyncAll: a zeroed GM workspace of GetBlockNum() x 32 bytes and a UB one. Valid in an
// AIV_ONLY kernel (no scheduling module needed).
void SoftSyncAllKernel(Gm& g, bool zeroed) {
  RowsThenSum(g);
  TPipe pipe;
  TBuf<TPosition::VECCALC> ubWs;
  pipe.InitBuffer(ubWs, GetBlockNum() * 32);
  GlobalTensor<int32_t> sync;
  sync.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(g.ws[kUserWorkspace / 8].GetPhyAddr()), GetBlockNum() * 8);
  if (!zeroed && GetBlockIdx() == 0) sync.SetValue(8 * (GetBlockNum() - 1), 7);
  SyncAll(sync, ubWs.Get<int32_t>());
  SumRows(g);
}
extern "C" __global__ __aicore__ void soft_syncall(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Gm g(x, workspace);
  SoftSyncAllKernel(g, true);
}
extern "C" __global__ __aicore__ void soft_syncall_dirty(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Gm g(x, workspace);
  SoftSyncAllKernel(g, false);
}

// Block 0 skips the SyncAll the others wait in: a deadlock, reported with the waiting cores.
extern "C" __global__ __aicore__ void syncall_skipped(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  Gm g(x, workspace);
  RowsThenSum(g);
  if (GetBlockIdx() == 0) return;
  SyncAll();
}

// The AIVs wait for a flag the AIC never sets.
extern "C" __global__ __aicore__ void wait_never_set(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  if ASCEND_IS_AIV
    CrossCoreWaitFlag<2, PIPE_MTE2>(5);
}

// The AIC sets a mode-2 flag 16 times and the AIVs wait for none: the counter overflows.
extern "C" __global__ __aicore__ void counter_overflow(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  if ASCEND_IS_AIC
    for (int i = 0; i < 16; ++i) CrossCoreSetFlag<2, PIPE_FIX>(1);
}
// 15 sets and 15 waits: the counter's limit, valid.
extern "C" __global__ __aicore__ void counter_at_limit(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  if ASCEND_IS_AIC
    for (int i = 0; i < 15; ++i) CrossCoreSetFlag<2, PIPE_FIX>(1);
  if ASCEND_IS_AIV
    for (int i = 0; i < 15; ++i) CrossCoreWaitFlag<2, PIPE_MTE2>(1);
}

// The AIC sets once and no AIV waits: the set outlives the kernel.
extern "C" __global__ __aicore__ void set_without_wait(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  if ASCEND_IS_AIC
    CrossCoreSetFlag<2, PIPE_FIX>(3);
}

// Mode 4 is Ascend 950 only.
extern "C" __global__ __aicore__ void mode4(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  if ASCEND_IS_AIC
    CrossCoreSetFlag<4, PIPE_FIX>(3);
}
// A set on PIPE_S (modes 0-2 refuse it).
extern "C" __global__ __aicore__ void set_on_pipe_s(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  if ASCEND_IS_AIC
    CrossCoreSetFlag<2, PIPE_S>(3);
}
// Mode 1 needs MIX_AIC_1_1 or 1_2 (table 3); MIX_AIV_1_0 has mode 0 only.
extern "C" __global__ __aicore__ void mode1_in_mix_aiv(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  CrossCoreSetFlag<1, PIPE_MTE3>(2);
  CrossCoreWaitFlag<1, PIPE_MTE3>(2);
}
// Flag 12 beside the hard SyncAll, which takes 11-14.
extern "C" __global__ __aicore__ void flag_of_syncall(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  SyncAll();
  CrossCoreSetFlag<0, PIPE_MTE3>(12);
  CrossCoreWaitFlag<0, PIPE_MTE3>(12);
}
// A flag id past 15 is cut to its low 4 bits on the device: 19 waits on 3. Valid.
extern "C" __global__ __aicore__ void flag_low_bits(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  CrossCoreSetFlag<0, PIPE_MTE3>(19);
  CrossCoreWaitFlag<0, PIPE_MTE3>(3);
}
// The kernel declares a type the launch does not run.
extern "C" __global__ __aicore__ void declares_other_type(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
}

// Every AIV adds its row into one GM row with SetAtomicAdd<float>. Valid; and with SetAtomicAdd<half>
// around a float copy, a dtype mismatch.
void AtomicRows(Gm& g, bool wrongType) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kRow * sizeof(float));
  LocalTensor<float> t = buf.Get<float>();
  Duplicate(t, float(GetBlockIdx() + 1), kRow);
  SetFlag<HardEvent::V_MTE3>(0);
  WaitFlag<HardEvent::V_MTE3>(0);
  if (wrongType) SetAtomicAdd<half>();
  else SetAtomicAdd<float>();
  DataCopyPad(g.out, t, DataCopyExtParams(1, kRow * sizeof(float), 0, 0, 0));
  SetAtomicNone();
}
extern "C" __global__ __aicore__ void atomic_rows(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Gm g(x, workspace);
  AtomicRows(g, false);
}
extern "C" __global__ __aicore__ void atomic_wrong_dtype(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Gm g(x, workspace);
  AtomicRows(g, true);
}

// DataCopyPad GM->UB and UB->GM with blockCount 0 or blockLen 0: NOPs on A2. Valid.
extern "C" __global__ __aicore__ void pad_copy_empty(GM_ADDR x, GM_ADDR workspace) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Gm g(x, workspace);
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, kRow * sizeof(float));
  LocalTensor<float> t = buf.Get<float>();
  DataCopyPad(t, g.out, DataCopyExtParams(0, 20, 0, 0, 0), DataCopyPadExtParams<float>());
  DataCopyPad(t, g.out, DataCopyExtParams(3, 0, 0, 0, 0), DataCopyPadExtParams<float>());
  DataCopyPad(g.out, t, DataCopyExtParams(0, 20, 0, 0, 0));
  DataCopyPad(g.out, t, DataCopyExtParams(2, 0, 0, 0, 0));
}

using Kernel = void (*)(GM_ADDR, GM_ADDR);
struct Entry {
  Kernel kernel;
  KernelMetaType type;  // the launch's type; KERNEL_TYPE_MAX: a plain launch (twin::Launch, the pool)
};
const KernelTable<Entry>& Kernels() {
  static const KernelTable<Entry> kernels{
      {"core_ids", {core_ids, KERNEL_TYPE_MIX_AIC_1_2}},
      {"mix_handoff", {mix_handoff, KERNEL_TYPE_MIX_AIC_1_2}},
      {"workspace_race", {workspace_race, KERNEL_TYPE_MIX_AIC_1_2}},
      {"mode0_neighbours", {mode0_neighbours, KERNEL_TYPE_MIX_AIV_1_0}},
      {"mode1_pair", {mode1_pair, KERNEL_TYPE_MIX_AIC_1_2}},
      {"mode2_one_aiv_ahead", {mode2_one_aiv_ahead, KERNEL_TYPE_MIX_AIC_1_2}},
      {"mix_aiv_syncall", {mix_aiv_syncall, KERNEL_TYPE_MIX_AIV_1_0}},
      {"aiv_only_hard_syncall", {aiv_only_hard_syncall, KERNEL_TYPE_MAX}},
      {"aiv_only_hard_syncall_typed", {aiv_only_hard_syncall, KERNEL_TYPE_AIV_ONLY}},
      {"soft_syncall", {soft_syncall, KERNEL_TYPE_AIV_ONLY}},
      {"soft_syncall_dirty", {soft_syncall_dirty, KERNEL_TYPE_AIV_ONLY}},
      {"soft_syncall_plain", {soft_syncall, KERNEL_TYPE_MAX}},
      {"syncall_skipped", {syncall_skipped, KERNEL_TYPE_MIX_AIV_1_0}},
      {"wait_never_set", {wait_never_set, KERNEL_TYPE_MIX_AIC_1_2}},
      {"counter_overflow", {counter_overflow, KERNEL_TYPE_MIX_AIC_1_2}},
      {"counter_at_limit", {counter_at_limit, KERNEL_TYPE_MIX_AIC_1_2}},
      {"set_without_wait", {set_without_wait, KERNEL_TYPE_MIX_AIC_1_2}},
      {"mode4", {mode4, KERNEL_TYPE_MIX_AIC_1_2}},
      {"set_on_pipe_s", {set_on_pipe_s, KERNEL_TYPE_MIX_AIC_1_2}},
      {"mode1_in_mix_aiv", {mode1_in_mix_aiv, KERNEL_TYPE_MIX_AIV_1_0}},
      {"flag_of_syncall", {flag_of_syncall, KERNEL_TYPE_MIX_AIV_1_0}},
      {"flag_low_bits", {flag_low_bits, KERNEL_TYPE_MIX_AIV_1_0}},
      {"declares_other_type", {declares_other_type, KERNEL_TYPE_MIX_AIC_1_2}},
      {"atomic_rows", {atomic_rows, KERNEL_TYPE_MAX}},
      {"atomic_wrong_dtype", {atomic_wrong_dtype, KERNEL_TYPE_MAX}},
      {"pad_copy_empty", {pad_copy_empty, KERNEL_TYPE_MAX}},
  };
  return kernels;
}

// Runs `name` on blockDim blocks over `x` (kRow x 3 x 64 floats: outputs, then inputs from row
// 128) and returns x.
torch::Tensor Run(c10::string_view name, int64_t blockDim, torch::Tensor x) {
  auto it = FindKernel(Kernels(), name, "cross-core kernel");
  TORCH_CHECK(x.dtype() == torch::kFloat && x.is_contiguous() && x.numel() == int64_t(kRow) * 3 * 64, "x");
  std::vector<uint8_t> workspace(AscendC::twin::kSystemWorkspaceBytes + kUserWorkspace, 0);
  auto* gm = reinterpret_cast<GM_ADDR>(x.data_ptr<float>());
  RaiseRuleErrors([&] {
    const Entry& e = it->second;
    if (e.type == KERNEL_TYPE_MAX)
      AscendC::twin::Launch(it->first.c_str(), uint32_t(blockDim), e.kernel, gm, workspace.data());
    else AscendC::twin::LaunchTyped(e.type, it->first.c_str(), uint32_t(blockDim), e.kernel, gm, workspace.data());
  });
  return x;
}

// The same launch with the instruction record exported (this library links its own twin).
std::vector<std::string> Record(c10::string_view name, int64_t blockDim, torch::Tensor x) {
  AscendC::twin::TakeRecordedLaunches();
  AscendC::twin::SetRecordExport(true);
  try {
    Run(name, blockDim, x);
  } catch (...) {
    AscendC::twin::SetRecordExport(false);
    throw;
  }
  AscendC::twin::SetRecordExport(false);
  return AscendC::twin::TakeRecordedLaunches();
}

std::vector<std::string> Names() { return KernelNames(Kernels()); }

// csrc/kernels/examples/mix_matmul_epilogue_example.cpp on one core group: a [48, 64], b [64, 32] half,
// bias [32] float -> y [48, 32] float.
torch::Tensor MixExample(torch::Tensor a, torch::Tensor b, torch::Tensor bias, double scale) {
  TORCH_CHECK(a.dtype() == torch::kHalf && b.dtype() == torch::kHalf && bias.dtype() == torch::kFloat, "dtypes");
  TORCH_CHECK(
      a.sizes() == torch::IntArrayRef({48, 64}) && b.sizes() == torch::IntArrayRef({64, 32}) && bias.numel() == 32,
      "shapes");
  a = a.contiguous(), b = b.contiguous(), bias = bias.contiguous();
  torch::Tensor y = torch::empty({48, 32}, torch::kFloat);
  std::vector<uint8_t> workspace(AscendC::twin::kSystemWorkspaceBytes + 48 * 32 * sizeof(float));
  RaiseRuleErrors([&] {
    AscendC::twin::LaunchTyped(KERNEL_TYPE_MIX_AIC_1_2, "mix_matmul_epilogue_example", 1, mix_matmul_epilogue_example,
                               reinterpret_cast<GM_ADDR>(a.data_ptr()), reinterpret_cast<GM_ADDR>(b.data_ptr()),
                               reinterpret_cast<GM_ADDR>(bias.data_ptr()), reinterpret_cast<GM_ADDR>(y.data_ptr()),
                               workspace.data(), float(scale));
  });
  return y;
}
}  // namespace

TORCH_LIBRARY(twin_crosscore, m) {
  m.def("run(str name, int block_dim, Tensor(a!) x) -> Tensor(a!)", &Run);
  m.def("record(str name, int block_dim, Tensor(a!) x) -> str[]", &Record);
  m.def("names() -> str[]", &Names);
  m.def("mix_example(Tensor a, Tensor b, Tensor bias, float scale) -> Tensor", &MixExample);
  m.def("core_workers() -> int", [] { return int64_t(AscendC::twin::LastCoreWorkers()); });
}
