// The CPU twin's instruction record, exported for tools (the pipeline model): start/stop
// recording whole launches, then take them as one JSON string per launch:
//   {"kernel", "block_dim", "blocks": [[instr, ...], ...]}, instr = {"serial", "pipe", "op",
//   "dtype", "count", "repeats", "gm_read", "gm_write", "ub_read", "ub_write",
//   "gm_read_ranges", "gm_write_ranges", "event", ["barrier"], ["que", "slot"]}
// (fields described in csrc/twin/twin_record.h). The host profile (twin_host_profile.h): the same
// pair, per launch {"kernel", "block_dim", "setup_ns", "block_ns", "apis": [...]}. And how many host workers
// ran the cores of the last synchronising launch (twin_launch.h), which says the parallel schedule ran.
#include <torch/library.h>

#include <string>
#include <vector>

#include "twin_host_profile.h"
#include "twin_launch.h"
#include "twin_record.h"

namespace ascendc_ops {
namespace {
void TwinRecord(bool on) { AscendC::twin::SetRecordExport(on); }
std::vector<std::string> TwinRecordTake() { return AscendC::twin::TakeRecordedLaunches(); }
void TwinHostProfile(bool on) { AscendC::twin::SetHostProfile(on); }
std::vector<std::string> TwinHostProfileTake() { return AscendC::twin::TakeHostProfiles(); }
int64_t TwinCoreWorkers() { return AscendC::twin::LastCoreWorkers(); }
}  // namespace

TORCH_LIBRARY_FRAGMENT(ascendc_ops, m) {
  m.def("twin_record(bool on) -> ()", &TwinRecord);
  m.def("twin_record_take() -> str[]", &TwinRecordTake);
  m.def("twin_host_profile(bool on) -> ()", &TwinHostProfile);
  m.def("twin_host_profile_take() -> str[]", &TwinHostProfileTake);
  m.def("twin_core_workers() -> int", &TwinCoreWorkers);
}

}  // namespace ascendc_ops
