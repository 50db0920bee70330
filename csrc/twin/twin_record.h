// CPU twin, the one instruction record. Every Ascend C call the twin implements that touches a
// pipe is described once, as an Instr: its pipe, API name, dtype, element count, the byte spans
// it reads and writes (UB/L1/L0 offsets, GM addresses), and the synchronisation it stands for
// (SetFlag/WaitFlag with event ids, PipeBarrier; TQue hand-offs become the flags the real
// framework emits). The record is the only hook into instructions: the sanitizer
// (twin_sanitizer.h), the whole JSON export (twin_record_ops.cpp) and the packed one the pipeline
// model reads (twin_record_pack.h) consume it.
// It is always the issue-order stream: fused execution (twin_fuse.h, ASCENDC_TWIN_FUSE=1) defers
// only the host's data movement, from the same API calls, with its own small descriptor: the
// record is built only while a consumer is active (Recording()), and fusion works without one.
//
// Cost when nothing consumes it: one thread-local pointer test per API call (Recording()).
//
// Emitting from new API code (the cube path, say):
//   if (twin::Recording()) {
//     twin::Instr in = twin::OpInstr(twin::Pipe::M, "Mmad", twin::DtypeName<T>(), count);
//     in.Add(twin::Access::Read(twin::Space::L0A, offset, bytes));
//     in.Add(twin::Access::Write(twin::Space::L0C, offset, bytes, twin::Init::kReduce));
//     twin::Emit(in);
//   }
// Offsets of on-chip spaces are bytes from the start of that space; GM spans are host addresses.
// Sync: twin::EmitSync(twin::Kind::kSetFlag, src, dst, id) / kWaitFlag / EmitBarrier(pipe).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace AscendC {
namespace twin {

enum class Pipe : uint8_t { S, V, M, MTE1, MTE2, MTE3, FIX, ALL };
constexpr int kPipes = 7;  // S..FIX; ALL is a barrier target only
const char* PipeName(Pipe p);

enum class Space : uint8_t { GM, UB, L1, L0A, L0B, L0C, BT };  // BT: the bias table (TPosition::C2)
constexpr int kSpaces = 7;
const char* SpaceName(Space s);

// `blocks` runs of `blockBytes` bytes, `pitch` bytes apart, from `begin`.
struct Span {
  uint64_t begin = 0;
  uint64_t pitch = 0;
  uint32_t blockBytes = 0;
  uint32_t blocks = 0;
  uint64_t End() const { return blocks ? begin + (blocks - 1) * pitch + blockBytes : begin; }
  uint64_t Bytes() const { return uint64_t(blockBytes) * blocks; }
  static Span Run(uint64_t begin, uint64_t bytes) { return Span{begin, bytes, uint32_t(bytes), bytes ? 1u : 0u}; }
};

// What a write leaves in its bytes, for initcheck.
enum class Init : uint8_t {
  kDefined,      // every byte gets a value (GM->UB copy, Duplicate, SetValue)
  kPadded,       // per block, only [definedLead, definedLead + definedBytes) (DataCopyPad's landed rows)
  kElementwise,  // element i is defined iff element i of every read is (arithmetic, Cast, UB->UB copy)
  kReduce,       // defined iff every byte read is (reductions)
  kGather,       // dst[i] from the offset table and the source element it names
  kRowwise,      // run k of the write is defined iff run k of every read is (a read of one run: that run);
                 // the mask/repeat instructions, one run per repeat (twin_vector_repeat.h)
};

struct Access {
  Span span;
  Space space = Space::UB;
  bool write = false;
  bool leaves = false;     // a read whose value leaves the core (copy to GM, scalar read): must be defined
  uint8_t elemBytes = 0;   // element size, for element-wise initcheck
  Init init = Init::kDefined;
  uint32_t definedLead = 0, definedBytes = 0;  // kPadded only

  static Access Read(Space s, uint64_t begin, uint64_t bytes, uint8_t elem = 0) {
    Access a;
    a.span = Span::Run(begin, bytes), a.space = s, a.elemBytes = elem;
    return a;
  }
  static Access Write(Space s, uint64_t begin, uint64_t bytes, Init init, uint8_t elem = 0) {
    Access a = Read(s, begin, bytes, elem);
    a.write = true, a.init = init;
    return a;
  }
};

// kCross: CrossCoreSetFlag / CrossCoreWaitFlag (event = flag id, crossMode) and SyncAll (crossMode -1)
enum class Kind : uint8_t { kOp, kSetFlag, kWaitFlag, kBarrier, kCross };
constexpr int kMaxAccess = 5;
constexpr int kEventIds = 8;  // ids 0..7 per HardEvent on Atlas A2 (QUE_MAX_EVENT)

struct Instr {
  Kind kind = Kind::kOp;
  Pipe pipe = Pipe::V;
  const char* op = "";
  const char* dtype = "";
  uint64_t count = 0;
  uint32_t repeats = 0;       // 256-byte vector repeats
  bool atomicAdd = false;     // GM writes accumulate (SetAtomicAdd)
  bool smallMmad = false;     // Mmad with (m/16)*(n/16) < 10: accumulating on it needs PipeBarrier<PIPE_M>
  // synchronisation: kSetFlag/kWaitFlag name src -> dst and the id; kBarrier names pipe
  Pipe src = Pipe::S, dst = Pipe::S;
  int32_t event = -1;
  int8_t crossMode = -1;      // kCross: the mode of a cross-core set/wait
  const char* que = nullptr;  // set for TQue hand-offs: the queue position (VECIN, VECOUT, ...)
  int32_t slot = -1;          // with que: the buffer, unique per TQue buffer in the block
  bool manual = false;        // SetFlag/WaitFlag written in the kernel (not by the framework)
  const char* via = nullptr;  // the framework call that stands for it: EnQue, DeQue, FreeTensor, ...
  uint8_t nAccess = 0;
  Access access[kMaxAccess];
  const uint32_t* gatherOffsets = nullptr;  // kGather: byte offsets (valid during Emit only)
  uint32_t gatherBase = 0;
  uint32_t serial = 0;        // 1-based issue order in the block, set by Emit

  void Add(const Access& a) {
    if (nAccess < kMaxAccess) access[nAccess++] = a;
  }
  uint64_t GmBytes(bool write) const;
};

// The record of one running block; null when no consumer is active.
struct BlockRecorder;
// Defined here (constant-initialised, no TLS wrapper): UBSan reports the extern form's TLS wrapper
// as a null load when an executable links the static twin.
inline thread_local BlockRecorder* tRecorder = nullptr;
inline bool Recording() { return tRecorder != nullptr; }

void Emit(Instr& in);  // hands the instruction to every active consumer; may throw a Violation

// While one lives, findings are held until the block ends instead of thrown (destructors such as
// ~TPipe emit instructions and must not throw).
struct DeferErrors {
  DeferErrors();
  ~DeferErrors();
};

inline Instr OpInstr(Pipe pipe, const char* op, const char* dtype, uint64_t count, uint32_t elemBytes = 0) {
  Instr in;
  in.pipe = pipe, in.op = op, in.dtype = dtype, in.count = count;
  in.repeats = uint32_t((count * elemBytes + 255) / 256);
  return in;
}
void EmitSync(Kind kind, Pipe src, Pipe dst, int32_t id, const char* que = nullptr, int32_t slot = -1,
              const char* via = nullptr);
void EmitBarrier(Pipe pipe);
// The record's per-core state held by the running host thread (DeferErrors' depth, the event ids a TPipe
// handed out): a core that yields on a cross-core wait parks it, and takes it back when it resumes.
struct RecordLocals {
  int defer = 0;
  uint8_t handedOut[kPipes * kPipes] = {};
};
void ExchangeRecordLocals(RecordLocals& parked);  // swaps this thread's with `parked`
// The running block's host clock (the host profile) stops while its core is switched out, and goes on.
void PauseBlockClock();
void ResumeBlockClock();
// Ids a TPipe handed out (FetchEventID/AllocEventID) may be 6 or 7; literal ones may not.
void NoteEventHandedOut(Pipe src, Pipe dst, int32_t id);
bool EventHandedOut(Pipe src, Pipe dst, int32_t id);

// ---- launches: which consumers run (set up by the launcher) ----
// The sanitizer runs when ASCENDC_TWIN_SANITIZE=1 (read at every launch; "0" or unset: off).
bool SanitizeEnabled();
// JSON export of whole launches (torch.ops.ascendc_ops.twin_record / twin_record_take).
void SetRecordExport(bool on);
std::vector<std::string> TakeRecordedLaunches();

// One launch: created by ForEachBlock when some consumer is active.
class LaunchRecord;
LaunchRecord* BeginLaunch(const char* kernel, uint32_t blockDim);  // null: nothing records
void BeginBlock(LaunchRecord* launch, uint32_t block);
void EndBlock(LaunchRecord* launch, bool ok);  // ok: the kernel returned (end-of-block checks run)
void AbortBlock();                             // the kernel threw: drop the block's recorder
void EndLaunch(LaunchRecord* launch, bool ok);
// A launch whose cores synchronise: each record slot's core name ("AIC 0", "AIV 1 (group 0, ...)")
// and, per core and cross-core epoch, the epochs of every core ordered before it (vector clocks).
void SetCrossOrder(
    LaunchRecord* launch, std::vector<std::string> names,
    std::vector<std::vector<std::vector<uint32_t>>> epochs);  // ok: no block failed; may throw (multi-core checks)

}  // namespace twin
}  // namespace AscendC
