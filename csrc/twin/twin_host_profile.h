// CPU twin, the host profile: a consumer of the instruction record that measures where the twin's
// own time goes. The time from one instruction being recorded to the next one's issue is the host's
// cost of executing it (its data movement runs after it is recorded) plus the next one's checks;
// summed per (API, pipe) with the bytes each moved. No stream is kept, so it costs little.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "twin_record.h"

namespace AscendC {
namespace twin {

struct HostCost {
  const char* op = "";
  Pipe pipe = Pipe::S;
  uint64_t calls = 0, ns = 0, ubBytes = 0, gmBytes = 0;
};

inline uint64_t HostNs() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

class HostProfiler {
 public:
  HostProfiler() : beginNs_(HostNs()), lastDoneNs_(beginNs_) {}
  void OnInstr(const Instr& in);  // call first thing on an instruction, then Done() once recorded
  void Done() { lastDoneNs_ = HostNs(); }
  // A core switched out at a cross-core wait: the time other cores run meanwhile is not this block's.
  void Pause() { pausedNs_ = HostNs(); }
  void Resume() {
    const uint64_t away = HostNs() - pausedNs_;
    beginNs_ += away, lastDoneNs_ += away;
  }
  // The block's costs, its first instruction's delay (block setup) and its whole host time.
  std::vector<HostCost> Finish(uint64_t* setupNs, uint64_t* blockNs);

 private:
  std::vector<HostCost> costs_;
  int last_ = -1;
  uint64_t beginNs_, lastDoneNs_, setupNs_ = 0, pausedNs_ = 0;
};

// Launch level: on while a tool asks (torch.ops.ascendc_ops.twin_host_profile), one JSON string
// per launch: {"kernel", "block_dim", "setup_ns", "block_ns", "apis": [{"op", "pipe", "calls", "ns",
// "ub_bytes", "gm_bytes"}, ...]}, block times summed over the launch's blocks.
struct LaunchCosts {
  uint64_t setupNs = 0, blockNs = 0;
  std::vector<HostCost> costs;
  void Add(const std::vector<HostCost>& block, uint64_t setup, uint64_t total);  // one block's share
};
void SetHostProfile(bool on);
bool HostProfileOn();
void FinishHostProfile(const std::string& kernel, uint32_t blockDim, const LaunchCosts& costs);
std::vector<std::string> TakeHostProfiles();

}  // namespace twin
}  // namespace AscendC
