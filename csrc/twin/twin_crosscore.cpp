// CPU twin, launches whose cores synchronise: every core of the launch is a fiber (twin_fiber.h) with its
// own UB, L1/L0 and record, resident for the whole launch. A core runs until it finishes or waits for
// something not yet there; then its worker's scheduler runs the next of its cores that can go, in slot
// order after the one that stopped. Core groups (an AIC and its AIVs; a lone AIV or AIC in MIX_AIV_1_0 /
// MIX_AIC_1_0) are islands that workers claim one at a time and run side by side on the pool; a worker
// with nothing to run claims another, and with nothing left to claim waits for another worker's core
// (mode 0, SyncAll). With a record consumer (sanitizer, export, profile) or ASCENDC_TWIN_MIX=serial one
// worker holds every core on the calling thread, so the order, and with it the record, is fixed. When no
// core can go anywhere while some have not finished, that is the device's deadlock: the launch fails at
// once naming every waiting core.
// The flag counters follow CrossCoreSetFlag(ISASI).md and 关键特性说明.md (asc-devkit
// docs/zh/api/SIMD-API/基础API/同步控制/核间同步/); with a record consumer each wait also joins the setters'
// vector clocks, which the sanitizer's multi-core check uses to accept GM hand-offs ordered by a flag.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "twin_core.h"
#include "twin_crosscore.h"
#include "twin_fiber.h"
#include "twin_fuse.h"
#include "twin_launch.h"
#include "twin_record.h"
#include "twin_sanitizer.h"

namespace AscendC {
namespace twin {

namespace {
constexpr int kFlags = 16;       // flag ids per core, modes 0-2 (CrossCoreSetFlag(ISASI).md, flagId)
constexpr int kMaxCount = 15;    // a flag's counter holds 0..15
constexpr int kSyncAllLo = 11, kSyncAllHi = 14;  // ids the hard SyncAll takes for itself

const char* TypeName(KernelMetaType t) {
  static const char* names[] = {"KERNEL_TYPE_AIV_ONLY",       "KERNEL_TYPE_AIC_ONLY",    "KERNEL_TYPE_MIX_AIV_1_0",
                                "KERNEL_TYPE_MIX_AIC_1_0",    "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2",
                                "KERNEL_TYPE_AICORE",         "KERNEL_TYPE_VECTORCORE",  "KERNEL_TYPE_MIX_AICORE",
                                "KERNEL_TYPE_MIX_VECTOR_CORE"};
  return t < KERNEL_TYPE_MAX ? names[t] : "no kernel type";
}
bool IsMix(KernelMetaType t) {
  return t == KERNEL_TYPE_MIX_AIV_1_0 || t == KERNEL_TYPE_MIX_AIC_1_0 || t == KERNEL_TYPE_MIX_AIC_1_1 ||
         t == KERNEL_TYPE_MIX_AIC_1_2;
}
struct Aborted {};  // unwinds a core when another core failed or the launch deadlocked
}  // namespace

using Clock = std::vector<uint32_t>;  // per slot: epochs of that core ordered before this point (empty: not kept)

// What the running host thread holds for the core it runs: a core that yields parks it, and takes it back
// when it resumes (ExchangeLocals swaps the thread's values with the parked ones).
struct ParkedLocals {
  CoreContext ctx;  // its UB, L1/L0 and launch model
  bool inBlock = false;
  BlockRecorder* recorder = nullptr;
  uint8_t* sysWorkspace = nullptr;
  TPipe* pipe = nullptr;
  RecordLocals record;
};
void ExchangeLocals(ParkedLocals& parked) {
  std::swap(Core(), parked.ctx);
  const bool in = InBlock();
  SetInBlock(parked.inBlock);
  parked.inBlock = in;
  std::swap(tRecorder, parked.recorder);
  std::swap(tSysWorkspace, parked.sysWorkspace);
  std::swap(CurrentPipe(), parked.pipe);
  ExchangeRecordLocals(parked.record);
}

struct CrossCoreLaunch {
  const char* kernel = "?";
  KernelMetaType type = KERNEL_TYPE_MAX;
  uint32_t groups = 0, aics = 0, aivsPerGroup = 0, slots = 0;
  bool ordered = false;  // vector clocks kept: a record consumer orders GM accesses by them
  std::mutex mu;
  std::condition_variable cv;  // a worker with every core waiting sleeps here until another worker's event
  bool aborted = false;
  std::exception_ptr error;
  // islands (core groups) claimed by workers; workers holding unfinished cores, and those of them asleep
  uint32_t islands = 0, nextIsland = 0, active = 0, idle = 0, workersUsed = 0;
  uint64_t events = 0;  // state changes another worker may be waiting for
  // asleep workers that found none of their cores could go since the last event: when every other active
  // worker is one of them, nothing anywhere can change again (a sleeper not yet awake to an event is not)
  uint32_t fresh = 0;
  enum class State { kReady, kRunning, kWaiting, kDone };
  struct CoreState {
    State state = State::kReady;
    std::function<bool()> canGo;
    std::string waits;                 // what it waits for, for the deadlock report
    uint8_t counter[kFlags] = {};
    std::deque<Clock> tokens[kFlags];  // clocks of the sets that raised the counter
    // this core's sets (modes 0-2) still waiting for the other parties' k-th set: the scheduler counts
    // a round once every party has set, so a core that sets twice first waits for the others twice
    std::deque<Clock> arrived[3][kFlags];
    Clock clock;
    std::vector<Clock> epochs;         // the clock at the start of each epoch
    uint32_t syncAlls = 0;
    uint16_t manualIds = 0, syncAllIds = 0;  // flag ids used by the kernel / by the hard SyncAll
    Fiber fiber;
    ParkedLocals parked;
  };
  std::unique_ptr<CoreState[]> cores;
  uint32_t syncArrived = 0, syncRound = 0;
  std::vector<Clock> syncJoins;  // per SyncAll round: the clocks its parties released
  Clock& SyncJoin(uint32_t round) {
    while (syncJoins.size() <= round) syncJoins.emplace_back(ordered ? slots : 0, 0);
    return syncJoins[round];
  }
  // Another worker may be asleep waiting for what just changed (called with mu held).
  void Notify() {
    ++events;
    fresh = 0;
    if (idle) cv.notify_all();
  }
  // Sleeps (mu held by `lock`) until another worker's event, the launch's abort, or `timeout`.
  template <typename Duration>
  void Sleep(std::unique_lock<std::mutex>& lock, Duration timeout) {
    const uint64_t seen = events;
    ++idle, ++fresh;
    cv.wait_for(lock, timeout, [&] { return events != seen || aborted; });
    --idle;
    if (events == seen) --fresh;  // else an event cleared it already
  }

  bool IsAic(uint32_t slot) const { return slot < aics; }
  uint32_t Group(uint32_t slot) const { return IsAic(slot) ? slot : (slot - aics) / aivsPerGroup; }
  uint32_t AivSlot(uint32_t group, uint32_t sub) const { return aics + group * aivsPerGroup + sub; }
  std::string Name(uint32_t slot) const {
    if (IsAic(slot)) return "AIC " + std::to_string(slot);
    const uint32_t v = slot - aics;
    return "AIV " + std::to_string(v) + " (group " + std::to_string(v / aivsPerGroup) + ", sub-block " +
           std::to_string(v % aivsPerGroup) + ")";
  }
  uint32_t KindCount(bool aic) const { return aic ? aics : slots - aics; }
  // The cores of island i: a group's AIC and AIVs, or one core where a launch has one kind.
  std::vector<uint32_t> Island(uint32_t i) const {
    if (!aics || !aivsPerGroup) return {i};
    std::vector<uint32_t> s{i};
    for (uint32_t v = 0; v < aivsPerGroup; ++v) s.push_back(AivSlot(i, v));
    return s;
  }
};

namespace {
void Join(Clock& into, const Clock& from) {
  for (size_t i = 0; i < std::min(into.size(), from.size()); ++i) into[i] = std::max(into[i], from[i]);
}

// The clock a set releases: everything this core did up to now (its epoch included), then a new epoch.
Clock Release(CrossCoreLaunch& L, uint32_t slot) {
  ++Core().crossEpoch;
  if (!L.ordered) return {};
  auto& c = L.cores[slot];
  Clock token = c.clock;
  token[slot] = Core().crossEpoch;
  c.clock[slot] = Core().crossEpoch;
  c.epochs.push_back(c.clock);
  return token;
}
void Acquire(CrossCoreLaunch& L, uint32_t slot, const Clock& token) {
  ++Core().crossEpoch;
  if (!L.ordered) return;
  auto& c = L.cores[slot];
  Join(c.clock, token);
  c.clock[slot] = Core().crossEpoch;
  c.epochs.push_back(c.clock);
}

void Raise(CrossCoreLaunch& L, uint32_t slot, int flag, const Clock& token, int mode) {
  auto& c = L.cores[slot];
  if (c.counter[flag] >= kMaxCount)
    Violation("cross-core flag overflow",
              "CrossCoreSetFlag<" + std::to_string(mode) + ">(" + std::to_string(flag) + ") raises " + L.Name(slot) +
                  "'s counter for flag " + std::to_string(flag) +
                  " past 15 (a counter holds 0-15; sets without matching waits: the device stops with an error)");
  ++c.counter[flag];
  c.tokens[flag].push_back(token);
  L.Notify();
}

// Blocks this core until its condition holds: it parks, and its worker runs another of its cores meanwhile
// (the worker resumes it once the condition holds, or to unwind it when the launch is aborted).
void WaitUntil(CrossCoreLaunch& L, uint32_t slot, std::function<bool()> canGo, std::string what) {
  auto& self = L.cores[slot];
  {
    std::lock_guard<std::mutex> lock(L.mu);
    if (canGo()) return;
    self.state = CrossCoreLaunch::State::kWaiting;
    self.canGo = std::move(canGo);
    self.waits = std::move(what);
  }
  PauseBlockClock();
  self.fiber.Yield();
  ResumeBlockClock();
  std::lock_guard<std::mutex> lock(L.mu);
  if (L.aborted) throw Aborted{};
}

void EmitCross(const char* op, int mode, pipe_t pipe, int flag) {
  if (!Recording()) return;
  Instr in;
  in.kind = Kind::kCross;
  in.op = op, in.pipe = ToPipe(pipe), in.event = flag, in.crossMode = int8_t(mode);
  Emit(in);
}

CrossCoreLaunch& NeedMix(const char* api, int mode) {
  CoreContext& c = Core();
  const KernelMetaType t = c.declaredType != KERNEL_TYPE_MAX ? c.declaredType : c.launchType;
  // CrossCoreSetFlag(ISASI).md 约束说明 and 表3: AIV_ONLY/AIC_ONLY start no scheduling module
  const bool ok = mode == 0 ? IsMix(t) : (t == KERNEL_TYPE_MIX_AIC_1_1 || t == KERNEL_TYPE_MIX_AIC_1_2);
  if (!ok)
    Violation("cross-core kernel type",
              std::string(api) + (mode >= 0 ? " mode " + std::to_string(mode) : std::string()) +
                  " in a kernel of type " + TypeName(t) +
                  ": with AIV_ONLY or AIC_ONLY the hardware starts no scheduling module and no cross-core sync "
                  "works; mode 0 and the hard SyncAll need a MIX type (MIX_AIV_1_0 for a pure vector kernel, "
                  "__mix__(0, 1)), modes 1 and 2 MIX_AIC_1_1 or MIX_AIC_1_2");
  if (!c.cross) Violation("cross-core kernel type", std::string(api) + ": the launch does not run a MIX kernel type");
  return *c.cross;
}
void CheckMode(const char* api, int mode) {
  if (mode == 4)
    Violation("cross-core mode", std::string(api) +
                                     " mode 4 (AIC and one AIV) exists on Ascend 950PR/950DT only; Atlas A2 has "
                                     "modes 0, 1 and 2");
  if (mode < 0 || mode > 2)
    Violation("cross-core mode",
              std::string(api) + " mode " + std::to_string(mode) + ": Atlas A2 has modes 0, 1 and 2");
}
void CheckResidency(CrossCoreLaunch& L, const char* api) {
  // SyncAll.md, the common rule: numBlocks beyond the cores that run the kernel hangs it
  const uint32_t cubeCores = ::tiling::kA2CubeCores, vectorCores = 2 * ::tiling::kA2CubeCores;
  if (L.aics > cubeCores || L.slots - L.aics > vectorCores)
    Violation("SyncAll residency",
              std::string(api) + " in a launch of " + std::to_string(L.groups) + " blocks (" + std::to_string(L.aics) +
                  " AIC, " + std::to_string(L.slots - L.aics) + " AIV): Atlas A2 (910B) has " +
                  std::to_string(cubeCores) + " AIC and " + std::to_string(vectorCores) +
                  " AIV; a synchronising launch needs every block resident at once (the device hangs)");
}
void NoteId(CrossCoreLaunch& L, uint32_t slot, int flag, const char* api) {
  auto& c = L.cores[slot];
  c.manualIds |= uint16_t(1u << flag);
  if (flag >= kSyncAllLo && flag <= kSyncAllHi && c.syncAlls)
    Violation("cross-core flag id", std::string(api) + " flag " + std::to_string(flag) +
                                        " in a kernel that calls the hard SyncAll, which takes flags 11-14 itself");
  if (flag < 2 * Core().matmulObjects)
    Violation("cross-core flag id", std::string(api) + " flag " + std::to_string(flag) + " with " +
                                        std::to_string(Core().matmulObjects) +
                                        " Matmul object(s): the Matmul library takes flags 0.." +
                                        std::to_string(2 * Core().matmulObjects - 1));
}
}  // namespace

void DeclareKernelType(KernelMetaType type) {
  CoreContext& c = Core();
  c.declaredType = type;
  if (c.launchType == KERNEL_TYPE_MAX) {  // a plain launch: blocks of one kind, nothing cross-core
    if (IsMix(type) && type != KERNEL_TYPE_MIX_AIV_1_0 && type != KERNEL_TYPE_MIX_AIC_1_0)
      Violation("kernel type", std::string("the kernel declares ") + TypeName(type) +
                                   ", whose launch runs AIC and AIV cores together: launch it with twin::LaunchTyped");
    c.aic = type == KERNEL_TYPE_AIC_ONLY || type == KERNEL_TYPE_MIX_AIC_1_0;
    return;
  }
  if (type != c.launchType)
    Violation("kernel type",
              std::string("the kernel declares ") + TypeName(type) + " but the launch runs " + TypeName(c.launchType));
}

void CrossSet(int mode, pipe_t pipe, uint16_t flagId) {
  CheckMode("CrossCoreSetFlag", mode);
  if (pipe == PIPE_S || pipe == PIPE_ALL)
    Violation("cross-core pipe",
              std::string("CrossCoreSetFlag<") + std::to_string(mode) + ", " +
                  (pipe == PIPE_S ? "PIPE_S" : "PIPE_ALL") +
                  ">: modes 0-2 take PIPE_V, PIPE_M, PIPE_MTE1/2/3 or PIPE_FIX, not PIPE_S or PIPE_ALL");
  CrossCoreLaunch& L = NeedMix("CrossCoreSetFlag", mode);
  const int flag = flagId & 0xF;  // the device keeps the low 4 bits
  const uint32_t slot = Core().slot;
  NoteId(L, slot, flag, "CrossCoreSetFlag");
  FlushFused();
  EmitCross("CrossCoreSetFlag", mode, pipe, flag);
  std::lock_guard<std::mutex> lock(L.mu);
  const bool aic = L.IsAic(slot);
  const Clock token = Release(L, slot);
  const uint32_t g = L.Group(slot);
  if (mode == 1 && aic)
    Violation("cross-core mode", "CrossCoreSetFlag mode 1 synchronises the AIVs of a group; an AIC set it");
  if (mode == 2 && aic) {  // mode 2 from the AIC: each AIV of the group
    for (uint32_t v = 0; v < L.aivsPerGroup; ++v) Raise(L, L.AivSlot(g, v), flag, token, mode);
    return;
  }
  // the parties of the round: mode 0 every core of this kind, modes 1 and 2 the AIVs of the group
  std::vector<uint32_t> parties;
  for (uint32_t s = 0; s < L.slots; ++s)
    if (mode == 0 ? L.IsAic(s) == aic : !L.IsAic(s) && L.Group(s) == g) parties.push_back(s);
  L.cores[slot].arrived[mode][flag].push_back(token);
  for (uint32_t s : parties)
    if (L.cores[s].arrived[mode][flag].empty()) return;
  Clock joined(L.slots, 0);
  for (uint32_t s : parties) {
    Join(joined, L.cores[s].arrived[mode][flag].front());
    L.cores[s].arrived[mode][flag].pop_front();
  }
  if (mode == 2) Raise(L, g, flag, joined, mode);  // the AIC once all AIVs set
  else
    for (uint32_t s : parties) Raise(L, s, flag, joined, mode);
}

void CrossWait(int mode, pipe_t pipe, uint16_t flagId) {
  CheckMode("CrossCoreWaitFlag", mode);  // on A2 the wait ignores mode and pipe (it blocks every pipe)
  (void)pipe;
  CrossCoreLaunch& L = NeedMix("CrossCoreWaitFlag", mode);
  const int flag = flagId & 0xF;
  const uint32_t slot = Core().slot;
  NoteId(L, slot, flag, "CrossCoreWaitFlag");
  FlushFused();
  EmitCross("CrossCoreWaitFlag", mode, pipe, flag);
  auto& c = L.cores[slot];
  WaitUntil(
      L, slot, [&c, flag] { return c.counter[flag] > 0; },
      "CrossCoreWaitFlag flag " + std::to_string(flag) + " (mode " + std::to_string(mode) + ")");
  std::lock_guard<std::mutex> lock(L.mu);
  --c.counter[flag];
  const Clock token = c.tokens[flag].front();
  c.tokens[flag].pop_front();
  Acquire(L, slot, token);
}

void HardSyncAll(bool aivOnly) {
  CrossCoreLaunch& L = NeedMix("SyncAll", 0);
  CheckResidency(L, "SyncAll");
  // SyncAll.md: a pure vector kernel must use isAIVOnly = true (false hangs it); in a MIX kernel
  // with AICs, true synchronises the AIVs only
  const bool hasAic = L.aics > 0, hasAiv = L.slots > L.aics;
  if (!aivOnly && !(hasAic && hasAiv))
    Violation("SyncAll mode",
              "SyncAll<false> in a kernel with one kind of core hangs on the device (SyncAll.md: "
              "isAIVOnly must be true for a pure vector kernel)");
  const uint32_t slot = Core().slot;
  auto& c = L.cores[slot];
  if (c.manualIds & 0x7800u)
    Violation("cross-core flag id", "the hard SyncAll takes flags 11-14, which this kernel also sets or waits");
  ++c.syncAlls;
  if (aivOnly && L.IsAic(slot)) return;  // the AIVs' barrier
  const uint32_t parties = aivOnly ? L.slots - L.aics : L.slots;
  FlushFused();
  EmitCross("SyncAll", -1, PIPE_ALL, -1);
  uint32_t round;
  {
    std::lock_guard<std::mutex> lock(L.mu);
    round = L.syncRound;
    Join(L.SyncJoin(round), Release(L, slot));
    if (++L.syncArrived == parties) L.syncArrived = 0, ++L.syncRound, L.Notify();
  }
  WaitUntil(L, slot, [&L, round] { return L.syncRound > round; }, "SyncAll (round " + std::to_string(round) + ")");
  std::lock_guard<std::mutex> lock(L.mu);
  Acquire(L, slot, L.SyncJoin(round));
}

void SoftSyncAll(const GlobalTensor<int32_t>& gm, const LocalTensor<int32_t>& ub, int32_t usedCores) {
  CoreContext& core = Core();
  if (!core.cross)
    Violation("SyncAll residency",
              "the soft SyncAll waits on the other blocks, which this launch runs one "
              "after another: launch the kernel with twin::LaunchTyped (every block resident)");
  CrossCoreLaunch& L = *core.cross;
  CheckResidency(L, "SyncAll");
  const int64_t blocks = core.blockNum;
  const int64_t parties = usedCores == 0 ? blocks : usedCores;
  // SyncAll.md: gmWorkspace and ubWorkspace at least GetBlockNum() x 32 bytes, GM zeroed; usedCores
  // at most GetBlockNum() x GetTaskRatio()
  if (gm.GetSize() * 4 < uint64_t(blocks) * 32 || ub.GetSize() * 4 < uint64_t(blocks) * 32)
    Violation("SyncAll workspace", "soft SyncAll workspaces of " + std::to_string(gm.GetSize() * 4) + " (GM) and " +
                                       std::to_string(ub.GetSize() * 4) +
                                       " (UB) bytes; each needs GetBlockNum() x 32 = " + std::to_string(blocks * 32));
  if (parties < 0 || parties > blocks * core.taskRation)
    Violation("SyncAll workspace",
              "usedCores " + std::to_string(usedCores) + " beyond GetBlockNum() x GetTaskRation()");
  const int64_t me = core.blockIdx;
  FlushFused();
  EmitCross("SyncAll", -1, PIPE_ALL, -1);
  auto& c = L.cores[core.slot];
  const int32_t round = int32_t(++c.syncAlls);
  int32_t* slots = gm.GetPhyAddr();
  if (me < parties) {
    if (slots[me * 8] != round - 1)
      Violation("SyncAll workspace", "block " + std::to_string(me) + "'s soft SyncAll slot holds " +
                                         std::to_string(slots[me * 8]) + " at call " + std::to_string(round) +
                                         ": the GM workspace must start zeroed");
    slots[me * 8] = round;
  }
  {
    std::lock_guard<std::mutex> lock(L.mu);
    Join(L.SyncJoin(uint32_t(round - 1)), Release(L, core.slot));
    L.Notify();  // its slot in GM is written
  }
  WaitUntil(
      L, core.slot,
      [slots, parties, round] {
        for (int64_t b = 0; b < parties; ++b)
          if (slots[b * 8] < round) return false;
        return true;
      },
      "soft SyncAll (call " + std::to_string(round) + ")");
  std::lock_guard<std::mutex> lock(L.mu);
  Acquire(L, core.slot, L.SyncJoin(uint32_t(round - 1)));
}

namespace {
// One core's fiber: its launch model, the kernel, and what it leaves for the launch (an error, kDone).
void RunCore(CrossCoreLaunch& L, uint32_t slot, const std::function<void()>& body, LaunchRecord* record, bool fuse) {
  CoreContext& c = Core();
  ResetCoreModel(c, slot);
  c.kernel = L.kernel;
  c.launchType = L.type;
  c.cross = &L;
  c.aic = L.IsAic(slot);
  c.blockNum = L.groups;
  if (c.aic) {
    c.blockIdx = slot;
  } else {
    c.taskRation = L.aivsPerGroup;
    c.subBlockIdx = (slot - L.aics) % L.aivsPerGroup;
    c.blockIdx = slot - L.aics;  // GetBlockIdx on an AIV: group x ratio + sub-block
  }
  SetInBlock(true);
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(L.mu);
    aborted = L.aborted;
  }
  std::exception_ptr error;
  if (!aborted) {
    try {
      BeginBlock(record, slot);
      BeginFusedBlock(fuse);
      body();
      FlushFused();
      EndBlock(record, true);
    } catch (const Aborted&) {
      DropFused();
      AbortBlock();
    } catch (...) {
      DropFused();
      AbortBlock();
      error = std::current_exception();
    }
  }
  SetInBlock(false);
  std::lock_guard<std::mutex> lock(L.mu);
  L.cores[slot].state = CrossCoreLaunch::State::kDone;
  if (error && !L.aborted) L.error = error, L.aborted = true;
  L.Notify();
}

std::string DeadlockReport(const CrossCoreLaunch& L) {
  std::string report = "Ascend C twin: kernel '" + std::string(L.kernel) +
                       "': [cross-core deadlock] no core can continue (the device hangs here):";
  uint32_t done = 0;
  for (uint32_t s = 0; s < L.slots; ++s) {
    if (L.cores[s].state == CrossCoreLaunch::State::kWaiting)
      report += "\n  " + L.Name(s) + " waits in " + L.cores[s].waits;
    done += L.cores[s].state == CrossCoreLaunch::State::kDone;
  }
  return report + "\n  (" + std::to_string(done) + " of " + std::to_string(L.slots) + " cores finished)";
}

// A worker: runs its cores until each has finished, claiming islands as it runs out of cores that can go.
// The next core to run is the first after the last one run, in the order the worker holds them, that can go.
// A worker whose cores all wait while it holds its share of the islands (a SyncAll reached early) first
// leaves the rest to workers not yet started, for up to kShareWait; if none comes it claims them itself
// (fewer host threads than workers run them one after another, and must not deadlock).
constexpr auto kShareWait = std::chrono::microseconds(2000);
void RunWorker(CrossCoreLaunch& L, std::vector<uint32_t> mine, uint32_t workers, const std::function<void()>& body,
               LaunchRecord* record, bool fuse) {
  Fiber home;
  size_t last = mine.empty() ? 0 : mine.size() - 1;
  const size_t share = (L.islands + workers - 1) / workers * L.Island(0).size();  // cores
  bool othersHadTheirChance = false;
  std::unique_lock<std::mutex> lock(L.mu);
  if (!mine.empty()) ++L.active, ++L.workersUsed;
  for (;;) {
    CrossCoreLaunch::CoreState* next = nullptr;
    uint32_t slot = 0;
    for (size_t k = 1; k <= mine.size() && !next; ++k) {
      const size_t i = (last + k) % mine.size();
      auto& c = L.cores[mine[i]];
      if (c.state == CrossCoreLaunch::State::kReady ||
          (c.state == CrossCoreLaunch::State::kWaiting && (L.aborted || c.canGo())))
        next = &c, slot = mine[i], last = i;
    }
    if (next) {
      const bool first = next->state == CrossCoreLaunch::State::kReady;
      next->state = CrossCoreLaunch::State::kRunning;
      lock.unlock();
      if (first) next->fiber.Start(&home, [&L, slot, &body, record, fuse] { RunCore(L, slot, body, record, fuse); });
      ExchangeLocals(next->parked);
      home.SwitchTo(next->fiber);
      ExchangeLocals(next->parked);
      lock.lock();
      continue;
    }
    if (L.nextIsland < L.islands) {
      size_t unfinished = 0;
      for (uint32_t s : mine) unfinished += L.cores[s].state != CrossCoreLaunch::State::kDone;
      if (unfinished >= share && !othersHadTheirChance) {
        const uint64_t seen = L.events;
        L.Sleep(lock, kShareWait);
        othersHadTheirChance = L.events == seen;
        continue;
      }
      othersHadTheirChance = false;
      if (mine.empty()) ++L.active, ++L.workersUsed;
      const size_t before = mine.size();
      for (uint32_t s : L.Island(L.nextIsland++)) mine.push_back(s);
      last = (before ? before : mine.size()) - 1;  // the new island's first core runs next
      continue;
    }
    bool finished = true;
    for (uint32_t s : mine) finished = finished && L.cores[s].state == CrossCoreLaunch::State::kDone;
    if (finished) break;
    // every core of this worker waits: for another worker's event, or, when every worker is here, forever
    if (L.fresh + 1 == L.active && L.nextIsland == L.islands && !L.aborted) {
      L.error = std::make_exception_ptr(RuleError(DeadlockReport(L)));
      L.aborted = true;
      L.Notify();
      continue;
    }
    L.Sleep(lock, std::chrono::hours(1));  // woken by the event or abort it waits for
  }
  if (!mine.empty()) --L.active, L.Notify();
}

bool SerialSchedule(bool recording) {
  if (recording || Threads() <= 1) return true;
  const char* v = std::getenv("ASCENDC_TWIN_MIX");
  return v && std::strcmp(v, "serial") == 0;
}

// End of the kernel: a set whose wait never came stays on the device (the next kernel sees it).
void CheckSetsWaited(CrossCoreLaunch& L) {
  for (uint32_t s = 0; s < L.slots; ++s)
    for (int f = 0; f < kFlags; ++f)
      if (L.cores[s].counter[f])
        throw RuleError("Ascend C twin: kernel '" + std::string(L.kernel) + "': [cross-core set without wait] flag " +
                        std::to_string(f) + " of " + L.Name(s) + " is still raised " +
                        std::to_string(L.cores[s].counter[f]) +
                        " time(s) at the end of the kernel: a CrossCoreSetFlag with no CrossCoreWaitFlag");
  for (uint32_t s = 0; s < L.slots; ++s)
    for (int m = 0; m < 3; ++m)
      for (int f = 0; f < kFlags; ++f)
        if (!L.cores[s].arrived[m][f].empty())
          throw RuleError("Ascend C twin: kernel '" + std::string(L.kernel) + "': [cross-core set without wait] " +
                          L.Name(s) + " set flag " + std::to_string(f) + " in mode " + std::to_string(m) + " " +
                          std::to_string(L.cores[s].arrived[m][f].size()) +
                          " more time(s) than the other parties of its round, which never did");
}
}  // namespace

namespace {
std::atomic<uint32_t> gLastCoreWorkers{0};
}  // namespace
uint32_t LastCoreWorkers() { return gLastCoreWorkers.load(std::memory_order_relaxed); }

void ForEachCore(const char* kernelName, KernelMetaType type, uint32_t blockDim, const std::function<void()>& core,
                 uint64_t gmBytes) {
  (void)gmBytes;  // every core is resident, whatever the launch moves
  if (type != KERNEL_TYPE_AIV_ONLY && type != KERNEL_TYPE_AIC_ONLY && !IsMix(type))
    throw RuleError(std::string("Ascend C twin: kernel '") + kernelName + "': [kernel type] " + TypeName(type) +
                    " is not an Atlas A2 kernel type");
  if (InBlock()) throw RuleError("Ascend C twin: a MIX launch inside a running block is not modelled");
  FlushFused();
  CrossCoreLaunch L;
  L.kernel = kernelName;
  L.type = type;
  L.groups = blockDim;
  const bool cube = type != KERNEL_TYPE_MIX_AIV_1_0 && type != KERNEL_TYPE_AIV_ONLY;
  const bool vector = type != KERNEL_TYPE_MIX_AIC_1_0 && type != KERNEL_TYPE_AIC_ONLY;
  L.aics = cube ? blockDim : 0;
  L.aivsPerGroup = !vector ? 0 : type == KERNEL_TYPE_MIX_AIC_1_2 ? 2 : 1;
  L.slots = L.aics + blockDim * L.aivsPerGroup;
  L.islands = L.aics && L.aivsPerGroup ? blockDim : L.slots;
  LaunchRecord* record = BeginLaunch(kernelName, L.slots);
  L.ordered = record != nullptr;
  L.cores.reset(new CrossCoreLaunch::CoreState[L.slots]);
  for (uint32_t s = 0; s < L.slots; ++s) {
    auto& c = L.cores[s];
    if (L.ordered) c.clock.assign(L.slots, 0), c.epochs.push_back(c.clock);
    c.parked.ctx = TakeCoreBuffers();
  }
  const bool fuse = FuseEnabled();
  if (SerialSchedule(record != nullptr)) {
    std::vector<uint32_t> all(L.slots);
    for (uint32_t s = 0; s < L.slots; ++s) all[s] = s;
    L.nextIsland = L.islands;
    RunWorker(L, std::move(all), 1, core, record, fuse);
  } else {
    const uint32_t workers = std::min<uint32_t>(uint32_t(Threads()), L.islands);
    RunWorkers(workers, [&](uint32_t) { RunWorker(L, {}, workers, core, record, fuse); });
  }
  for (uint32_t s = 0; s < L.slots; ++s) GiveCoreBuffers(L.cores[s].parked.ctx);
  gLastCoreWorkers.store(L.workersUsed, std::memory_order_relaxed);
  if (!L.error && L.ordered) {
    std::vector<std::string> names;
    std::vector<std::vector<Clock>> epochs;
    for (uint32_t s = 0; s < L.slots; ++s) names.push_back(L.Name(s)), epochs.push_back(L.cores[s].epochs);
    SetCrossOrder(record, std::move(names), std::move(epochs));
  }
  EndLaunch(record, !L.error);  // the sanitizer's multi-core check, with the cross-core order
  if (L.error) std::rethrow_exception(L.error);
  if (SanitizeEnabled()) CheckSetsWaited(L);
}

}  // namespace twin
}  // namespace AscendC
