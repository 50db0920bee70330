// CPU twin, the instruction record: per-block recorders, the consumers they feed (sanitizer,
// JSON export), and the launch-level collection.
#include "twin_record.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "twin_core.h"
#include "twin_host_profile.h"
#include "twin_record_pack.h"
#include "twin_sanitizer.h"

namespace AscendC {
namespace twin {

const char* PipeName(Pipe p) {
  static const char* names[] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL"};
  return names[static_cast<int>(p)];
}

const char* SpaceName(Space s) {
  static const char* names[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BT"};
  return names[static_cast<int>(s)];
}

uint64_t Instr::GmBytes(bool write) const {
  uint64_t bytes = 0;
  for (int i = 0; i < nAccess; ++i)
    if (access[i].space == Space::GM && access[i].write == write) bytes += access[i].span.Bytes();
  return bytes;
}

struct BlockRecorder {
  uint32_t serial = 0;
  std::exception_ptr deferred;  // first finding held by DeferErrors
  std::unique_ptr<BlockSanitizer> sanitizer;
  bool keep = false;
  std::vector<Instr> stream;  // kept for the export
  std::unique_ptr<HostProfiler> profiler;
  std::unique_ptr<BlockPack> pack;  // the packed record's share of this block
};
thread_local int tDefer = 0;
thread_local uint8_t tHandedOut[kPipes * kPipes];  // per pipe pair: ids a TPipe handed to the kernel

void NoteEventHandedOut(Pipe src, Pipe dst, int32_t id) {
  if (tRecorder && id >= 0 && id < kEventIds) tHandedOut[int(src) * kPipes + int(dst)] |= uint8_t(1u << id);
}
bool EventHandedOut(Pipe src, Pipe dst, int32_t id) {
  return id >= 0 && id < kEventIds && (tHandedOut[int(src) * kPipes + int(dst)] >> id & 1u);
}

void ExchangeRecordLocals(RecordLocals& parked) {
  std::swap(tDefer, parked.defer);
  for (int i = 0; i < kPipes * kPipes; ++i) std::swap(tHandedOut[i], parked.handedOut[i]);
}

void PauseBlockClock() {
  if (tRecorder && tRecorder->profiler) tRecorder->profiler->Pause();
}
void ResumeBlockClock() {
  if (tRecorder && tRecorder->profiler) tRecorder->profiler->Resume();
}

DeferErrors::DeferErrors() { ++tDefer; }
DeferErrors::~DeferErrors() { --tDefer; }

class LaunchRecord {
 public:
  std::string kernel;
  uint32_t blockDim = 0;
  bool sanitize = false, keep = false, profile = false;
  std::mutex mu;
  std::unique_ptr<LaunchPack> pack;          // when the packed record is on
  std::vector<std::vector<Instr>> streams;   // per block, when kept
  std::vector<std::vector<GmAccess>> gm;     // per block, when sanitizing
  LaunchCosts host;                          // summed over blocks, when profiling the host
  CrossOrder order;                          // cores of a synchronising launch (empty otherwise)
};

void SetCrossOrder(LaunchRecord* launch, std::vector<std::string> names,
                   std::vector<std::vector<std::vector<uint32_t>>> epochs) {
  if (!launch) return;
  launch->order.names = std::move(names);
  launch->order.epochs = std::move(epochs);
}

namespace {
std::mutex gExportMutex;
bool gExport = false;
std::vector<std::string> gExported;

std::string Json(const LaunchRecord& launch);
}  // namespace

void Emit(Instr& in) {
  BlockRecorder* r = tRecorder;
  in.serial = ++r->serial;
  if (r->profiler) {
    r->profiler->OnInstr(in);
    if (!r->keep && !r->sanitizer && !r->pack) return r->profiler->Done();
  }
  if (r->pack) r->pack->OnInstr(in);
  if (r->keep) {
    r->stream.push_back(in);
    r->stream.back().gatherOffsets = nullptr;
  }
  if (r->sanitizer) {
    if (tDefer == 0 && std::uncaught_exceptions() == 0) {
      r->sanitizer->OnInstr(in);
    } else {
      try {
        r->sanitizer->OnInstr(in);
      } catch (...) {
        if (!r->deferred && std::uncaught_exceptions() == 0) r->deferred = std::current_exception();
      }
    }
  }
  if (r->profiler) r->profiler->Done();  // the other consumers' time is the recorder's, not the instruction's
}

void EmitSync(Kind kind, Pipe src, Pipe dst, int32_t id, const char* que, int32_t slot, const char* via) {
  if (!Recording()) return;
  Instr in;
  in.kind = kind;
  in.pipe = kind == Kind::kSetFlag ? src : dst;
  in.op = kind == Kind::kSetFlag ? "SetFlag" : "WaitFlag";
  in.src = src, in.dst = dst, in.event = id, in.que = que, in.slot = slot, in.manual = via == nullptr, in.via = via;
  Emit(in);
}

void EmitBarrier(Pipe pipe) {
  if (!Recording()) return;
  Instr in;
  in.kind = Kind::kBarrier;
  in.pipe = pipe, in.op = "PipeBarrier", in.src = in.dst = pipe;
  Emit(in);
}

bool SanitizeEnabled() {
  const char* v = std::getenv("ASCENDC_TWIN_SANITIZE");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

void SetRecordExport(bool on) {
  std::lock_guard<std::mutex> lock(gExportMutex);
  gExport = on;
}

std::vector<std::string> TakeRecordedLaunches() {
  std::lock_guard<std::mutex> lock(gExportMutex);
  std::vector<std::string> out;
  out.swap(gExported);
  return out;
}

LaunchRecord* BeginLaunch(const char* kernel, uint32_t blockDim) {
  const bool sanitize = SanitizeEnabled();
  bool keep;
  {
    std::lock_guard<std::mutex> lock(gExportMutex);
    keep = gExport;
  }
  const bool profile = HostProfileOn();
  const bool pack = RecordPackOn();
  if (!sanitize && !keep && !profile && !pack) return nullptr;
  auto* launch = new LaunchRecord;
  launch->kernel = kernel;
  launch->blockDim = blockDim;
  launch->sanitize = sanitize, launch->keep = keep, launch->profile = profile;
  if (keep) launch->streams.resize(blockDim);
  if (sanitize) launch->gm.resize(blockDim);
  if (pack) launch->pack = std::make_unique<LaunchPack>();
  return launch;
}

void BeginBlock(LaunchRecord* launch, uint32_t block) {
  if (!launch) return;
  auto* r = new BlockRecorder;
  r->keep = launch->keep;
  if (launch->sanitize) r->sanitizer = std::make_unique<BlockSanitizer>();
  if (launch->profile) r->profiler = std::make_unique<HostProfiler>();
  if (launch->pack) r->pack = std::make_unique<BlockPack>();
  (void)block;
  std::memset(tHandedOut, 0, sizeof(tHandedOut));
  tRecorder = r;
}

void AbortBlock() {
  delete tRecorder;
  tRecorder = nullptr;
}

void EndBlock(LaunchRecord* launch, bool ok) {
  if (!launch) return;
  std::unique_ptr<BlockRecorder> r(tRecorder);
  tRecorder = nullptr;
  const uint32_t block = Core().slot;
  if (ok && r->deferred) std::rethrow_exception(r->deferred);
  if (ok && r->sanitizer) r->sanitizer->OnBlockEnd();  // may throw
  uint64_t setupNs = 0, blockNs = 0;
  const std::vector<HostCost> costs =
      ok && r->profiler ? r->profiler->Finish(&setupNs, &blockNs) : std::vector<HostCost>{};
  std::lock_guard<std::mutex> lock(launch->mu);
  if (launch->keep) launch->streams[block] = std::move(r->stream);
  if (launch->sanitize) launch->gm[block] = r->sanitizer->TakeGm();
  if (r->profiler) launch->host.Add(costs, setupNs, blockNs);
  if (launch->pack) launch->pack->AddBlock(block, *r->pack);
}

void EndLaunch(LaunchRecord* launchPtr, bool ok) {
  if (!launchPtr) return;
  std::unique_ptr<LaunchRecord> launch(launchPtr);
  if (ok && launch->keep) {
    std::string json = Json(*launch);
    std::lock_guard<std::mutex> lock(gExportMutex);
    gExported.push_back(std::move(json));
  }
  if (ok && launch->pack)
    AddPackedLaunch(launch->pack->Serialize(launch->kernel, launch->blockDim, launch->order.names));
  if (ok && launch->profile) FinishHostProfile(launch->kernel, launch->blockDim, launch->host);
  if (ok && launch->sanitize)
    CheckMultiCore(launch->kernel.c_str(), launch->blockDim, launch->gm,
                   launch->order.names.empty() ? nullptr : &launch->order);
}

// ---- JSON export ----
namespace {
void Ranges(std::string& out, const Instr& in, Space space, bool write) {
  out += '[';
  bool first = true;
  char buf[64];
  for (int i = 0; i < in.nAccess; ++i) {
    const Access& a = in.access[i];
    if (a.space != space || a.write != write) continue;
    // contiguous blocks merge into one range
    uint64_t b = a.span.begin, e = b + a.span.blockBytes;
    for (uint32_t k = 1; k <= a.span.blocks; ++k) {
      const uint64_t nb = a.span.begin + k * a.span.pitch;
      if (k < a.span.blocks && nb == e) {
        e = nb + a.span.blockBytes;
        continue;
      }
      std::snprintf(buf, sizeof(buf), "%s[%llu,%llu]", first ? "" : ",", (unsigned long long)b, (unsigned long long)e);
      out += buf;
      first = false;
      b = nb, e = nb + a.span.blockBytes;
    }
  }
  out += ']';
}

void InstrJson(std::string& out, const Instr& in) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"serial\":%u,\"pipe\":\"%s\",\"op\":\"%s\",\"dtype\":\"%s\",\"count\":%llu,\"repeats\":%u,"
                "\"gm_read\":%llu,\"gm_write\":%llu,\"ub_read\":",
                in.serial, PipeName(in.pipe), in.op, in.dtype, (unsigned long long)in.count, in.repeats,
                (unsigned long long)in.GmBytes(false), (unsigned long long)in.GmBytes(true));
  out += buf;
  Ranges(out, in, Space::UB, false);
  out += ",\"ub_write\":";
  Ranges(out, in, Space::UB, true);
  out += ",\"gm_read_ranges\":";
  Ranges(out, in, Space::GM, false);
  out += ",\"gm_write_ranges\":";
  Ranges(out, in, Space::GM, true);
  for (Space s : {Space::L1, Space::L0A, Space::L0B, Space::L0C, Space::BT}) {
    bool any = false;
    for (int i = 0; i < in.nAccess; ++i) any |= in.access[i].space == s;
    if (!any) continue;
    std::snprintf(buf, sizeof(buf), ",\"%s_read\":", SpaceName(s));
    out += buf;
    Ranges(out, in, s, false);
    std::snprintf(buf, sizeof(buf), ",\"%s_write\":", SpaceName(s));
    out += buf;
    Ranges(out, in, s, true);
  }
  if (in.kind == Kind::kSetFlag || in.kind == Kind::kWaitFlag) {
    std::snprintf(buf, sizeof(buf), ",\"event\":[\"%s\",\"%s\",%d]", PipeName(in.src), PipeName(in.dst), in.event);
  } else {
    std::snprintf(buf, sizeof(buf), ",\"event\":null");
  }
  out += buf;
  if (in.kind == Kind::kBarrier) {
    out += ",\"barrier\":\"";
    out += PipeName(in.pipe);
    out += '"';
  }
  if (in.que) {
    std::snprintf(buf, sizeof(buf), ",\"que\":\"%s\",\"slot\":%d", in.que, in.slot);
    out += buf;
  }
  if (in.via) {
    out += ",\"via\":\"";
    out += in.via;
    out += '"';
  }
  if (in.atomicAdd) out += ",\"atomic_add\":true";
  if (in.kind == Kind::kCross) {
    std::snprintf(buf, sizeof(buf), ",\"cross\":{\"mode\":%d,\"flag\":%d}", in.crossMode, in.event);
    out += buf;
  }
  out += '}';
}

std::string Json(const LaunchRecord& launch) {
  std::string out =
      "{\"kernel\":\"" + launch.kernel + "\",\"block_dim\":" + std::to_string(launch.blockDim) + ",\"blocks\":[";
  for (size_t b = 0; b < launch.streams.size(); ++b) {
    out += b ? ",[" : "[";
    for (size_t i = 0; i < launch.streams[b].size(); ++i) {
      if (i) out += ',';
      InstrJson(out, launch.streams[b][i]);
    }
    out += ']';
  }
  out += "]";
  if (!launch.order.names.empty()) {  // the core each block slot ran on
    out += ",\"cores\":[";
    for (size_t b = 0; b < launch.order.names.size(); ++b) {
      const std::string& n = launch.order.names[b];
      out += (b ? ",{\"kind\":\"" : "{\"kind\":\"") + n.substr(0, 3) + "\",\"name\":\"" + n + "\"}";
    }
    out += "]";
  }
  out += "}";
  return out;
}
}  // namespace

}  // namespace twin
}  // namespace AscendC
