// CPU twin, the host profile consumer (twin_host_profile.h).
#include "twin_host_profile.h"

#include <cstdio>
#include <cstring>
#include <mutex>

namespace AscendC {
namespace twin {

namespace {
// The row of (op, pipe) in costs, appended when missing.
HostCost& Row(std::vector<HostCost>& costs, const char* op, Pipe pipe) {
  for (HostCost& c : costs)
    if (c.pipe == pipe && std::strcmp(c.op, op) == 0) return c;
  costs.push_back(HostCost{op, pipe});
  return costs.back();
}

uint64_t UbBytes(const Instr& in) {
  uint64_t bytes = 0;
  for (int i = 0; i < in.nAccess; ++i)
    if (in.access[i].space == Space::UB) bytes += in.access[i].span.Bytes();
  return bytes;
}
}  // namespace

void HostProfiler::OnInstr(const Instr& in) {
  const uint64_t now = HostNs();
  if (last_ >= 0) costs_[last_].ns += now - lastDoneNs_;
  else setupNs_ = now - beginNs_;
  HostCost& c = Row(costs_, in.op, in.pipe);
  ++c.calls;
  c.ubBytes += UbBytes(in);
  c.gmBytes += in.GmBytes(false) + in.GmBytes(true);
  last_ = int(&c - costs_.data());
}

std::vector<HostCost> HostProfiler::Finish(uint64_t* setupNs, uint64_t* blockNs) {
  const uint64_t end = HostNs();
  if (last_ >= 0) costs_[last_].ns += end - lastDoneNs_;
  else setupNs_ = end - beginNs_;
  *setupNs = setupNs_, *blockNs = end - beginNs_;
  return std::move(costs_);
}

void LaunchCosts::Add(const std::vector<HostCost>& block, uint64_t setup, uint64_t total) {
  setupNs += setup, blockNs += total;
  for (const HostCost& c : block) {
    HostCost& row = Row(costs, c.op, c.pipe);
    row.calls += c.calls, row.ns += c.ns, row.ubBytes += c.ubBytes, row.gmBytes += c.gmBytes;
  }
}

namespace {
std::mutex gMutex;
bool gOn = false;
std::vector<std::string> gDone;
}  // namespace

void SetHostProfile(bool on) {
  std::lock_guard<std::mutex> lock(gMutex);
  gOn = on;
}
bool HostProfileOn() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gOn;
}

void FinishHostProfile(const std::string& kernel, uint32_t blockDim, const LaunchCosts& launch) {
  std::string out = "{\"kernel\":\"" + kernel + "\",\"block_dim\":" + std::to_string(blockDim) +
                    ",\"setup_ns\":" + std::to_string(launch.setupNs) +
                    ",\"block_ns\":" + std::to_string(launch.blockNs) + ",\"apis\":[";
  char buf[256];
  for (size_t i = 0; i < launch.costs.size(); ++i) {
    const HostCost& c = launch.costs[i];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"op\":\"%s\",\"pipe\":\"%s\",\"calls\":%llu,\"ns\":%llu,\"ub_bytes\":%llu,\"gm_bytes\":%llu}",
                  i ? "," : "", c.op, PipeName(c.pipe), (unsigned long long)c.calls, (unsigned long long)c.ns,
                  (unsigned long long)c.ubBytes, (unsigned long long)c.gmBytes);
    out += buf;
  }
  out += "]}";
  std::lock_guard<std::mutex> lock(gMutex);
  gDone.push_back(std::move(out));
}

std::vector<std::string> TakeHostProfiles() {
  std::lock_guard<std::mutex> lock(gMutex);
  std::vector<std::string> out;
  out.swap(gDone);
  return out;
}

}  // namespace twin
}  // namespace AscendC
