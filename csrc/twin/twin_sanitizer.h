// CPU twin, the sanitizer: a consumer of the instruction record (twin_record.h) that finds what
// msSanitizer finds on the NPU, for the program as run, on any CPU.
//   racecheck   happens-before with a vector clock per pipe and per-32-byte shadow state of UB
//               (and L1/L0): a cross-pipe RAW/WAR/WAW not ordered by SetFlag/WaitFlag, a TQue
//               hand-off or PipeBarrier<PIPE_ALL>; same-pipe MTE2 (UB) / MTE3 (GM) writes to
//               overlapping bytes without PipeBarrier of that pipe; MTE3 -> MTE2 through the
//               block's own GM. Not errors, because the compiler (--cce-auto-sync, on by
//               default) inserts them: PIPE_V -> PIPE_V barriers and syncs with PIPE_S
//               (GetValue/SetValue), which are modelled as the compiler's inserted waits.
//   synccheck   SetFlag never waited by the end of the block; WaitFlag with no SetFlag (a hang);
//               SetFlag on an event that is still set (undefined, hangs at PipeBarrier<PIPE_ALL>);
//               event ids outside 0..7, and manual use of ids 6 and 7 (reserved).
//   initcheck   shadow bit per UB byte; DataCopyPad's unfilled padding stays undefined; vector
//               ops propagate undefinedness element by element (computing on padding lanes is
//               fine); an error when undefined bytes leave the core (copy to GM, GetValue).
//   multi-core  blocks of one launch writing overlapping GM bytes (unless both atomic-add), or
//               one block reading GM bytes another block writes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "twin_record.h"

namespace AscendC {
namespace twin {

// One GM access of a block, for the launch-level multi-core check.
struct GmAccess {
  Span span;
  bool write = false;
  bool atomic = false;
  uint32_t serial = 0;
  const char* op = "";
  uint32_t epoch = 0;  // the core's cross-core epoch (sets and waits before it)
};

// The cross-core order of a synchronising launch: per core, its name and, per epoch, the epochs of
// every core ordered before it. An access of core a at epoch ea precedes one of core b at epoch eb
// iff epochs[b][eb][a] > ea.
struct CrossOrder {
  std::vector<std::string> names;
  std::vector<std::vector<std::vector<uint32_t>>> epochs;
  bool Before(uint32_t a, uint32_t ea, uint32_t b, uint32_t eb) const { return epochs[b][eb][a] > ea; }
};

class BlockSanitizer {
 public:
  BlockSanitizer();
  ~BlockSanitizer();
  void OnInstr(const Instr& in);  // throws RuleError (through Violation) on the first finding
  void OnBlockEnd();              // synccheck at the end of the block
  std::vector<GmAccess> TakeGm();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// After every block of a launch ran: overlapping GM writes / reads across blocks.
// With `order` (cores that synchronise), accesses ordered by a cross-core flag or SyncAll are fine,
// and the rest is reported as a [cross-core race] naming both cores.
void CheckMultiCore(const char* kernel, uint32_t blockDim, std::vector<std::vector<GmAccess>>& perBlock,
                    const CrossOrder* order = nullptr);

}  // namespace twin
}  // namespace AscendC
