// The CPU twin's instruction record, exported for tools (the pipeline model): start/stop
// recording whole launches, then take them as one JSON string per launch:
//   {"kernel", "block_dim", "blocks": [[instr, ...], ...]}, instr = {"serial", "pipe", "op",
//   "dtype", "count", "repeats", "gm_read", "gm_write", "ub_read", "ub_write",
//   "gm_read_ranges", "gm_write_ranges", "event", ["barrier"], ["que", "slot"]}
// (fields described in csrc/twin/twin_record.h). The packed record (twin_record_pack.h), what the pipeline
// model reads at any shape: the same pair, one uint8 tensor per launch. The host profile (twin_host_profile.h): the
// same pair, per launch {"kernel", "block_dim", "setup_ns", "block_ns", "apis": [...]}. And how many host workers ran
// the cores of the last synchronising launch (twin_launch.h), which says the parallel schedule ran.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>

#include <string>
#include <vector>

#include "twin_host_profile.h"
#include "twin_launch.h"
#include "twin_record.h"
#include "twin_record_pack.h"

namespace ascendc_ops {
namespace {
void TwinRecord(bool on) { AscendC::twin::SetRecordExport(on); }
std::vector<std::string> TwinRecordTake() { return AscendC::twin::TakeRecordedLaunches(); }
void TwinRecordPacked(bool on) { AscendC::twin::SetRecordPack(on); }
std::vector<at::Tensor> TwinRecordPackedTake() {
  std::vector<at::Tensor> out;
  for (const std::string& launch : AscendC::twin::TakePackedLaunches()) {
    at::Tensor t = at::empty({int64_t(launch.size())}, at::kByte);
    std::memcpy(t.data_ptr(), launch.data(), launch.size());
    out.push_back(std::move(t));
  }
  return out;
}
void TwinHostProfile(bool on) { AscendC::twin::SetHostProfile(on); }
std::vector<std::string> TwinHostProfileTake() { return AscendC::twin::TakeHostProfiles(); }
int64_t TwinCoreWorkers() { return AscendC::twin::LastCoreWorkers(); }
}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("twin_record(bool on) -> ()", &TwinRecord);
  m.def("twin_record_take() -> str[]", &TwinRecordTake);
  m.def("twin_record_packed(bool on) -> ()", &TwinRecordPacked);
  m.def("twin_record_packed_take() -> Tensor[]", &TwinRecordPackedTake);
  m.def("twin_host_profile(bool on) -> ()", &TwinHostProfile);
  m.def("twin_host_profile_take() -> str[]", &TwinHostProfileTake);
  m.def("twin_core_workers() -> int", &TwinCoreWorkers);
}

}  // namespace ascendc_ops
