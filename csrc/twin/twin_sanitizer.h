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
void CheckMultiCore(const char* kernel, uint32_t blockDim, std::vector<std::vector<GmAccess>>& perBlock);

}  // namespace twin
}  // namespace AscendC
