// CPU twin, in-core synchronisation: pipes, HardEvent, SetFlag/WaitFlag and PipeBarrier. The twin
// executes in program order, so these order nothing here; each is recorded (twin_record.h) so
// the sanitizer can check that the program would be ordered on the NPU.
#pragma once
#include <cstdint>

#include "twin_core.h"
#include "twin_record.h"

enum pipe_t : uint8_t {
  PIPE_S,
  PIPE_V,
  PIPE_M,
  PIPE_MTE1,
  PIPE_MTE2,
  PIPE_MTE3,
  PIPE_ALL,
  PIPE_MTE4,
  PIPE_MTE5,
  PIPE_V2,
  PIPE_FIX
};

namespace AscendC {

enum class HardEvent : uint8_t {
  MTE2_MTE1,
  MTE1_MTE2,
  MTE1_M,
  M_MTE1,
  MTE2_V,
  V_MTE2,
  MTE3_V,
  V_MTE3,
  M_V,
  V_M,
  V_V,
  MTE3_MTE1,
  MTE1_MTE3,
  MTE1_V,
  MTE2_M,
  M_MTE2,
  V_MTE1,
  M_FIX,
  FIX_M,
  MTE3_MTE2,
  MTE2_MTE3,
  S_V,
  V_S,
  S_MTE2,
  MTE2_S,
  S_MTE3,
  MTE3_S,
  MTE2_FIX,
  FIX_MTE2,
  FIX_S,
  M_S
};
using TEventID = int8_t;

namespace twin {
constexpr Pipe ToPipe(pipe_t p) {
  switch (p) {
    case PIPE_S: return Pipe::S;
    case PIPE_V:
    case PIPE_V2: return Pipe::V;
    case PIPE_M: return Pipe::M;
    case PIPE_MTE1: return Pipe::MTE1;
    case PIPE_MTE2: return Pipe::MTE2;
    case PIPE_MTE3: return Pipe::MTE3;
    case PIPE_FIX: return Pipe::FIX;
    default: return Pipe::ALL;
  }
}

struct EventPipes {
  Pipe src, dst;
};
// Source and destination pipe of each HardEvent, in the enum's order (the name is <src>_<dst>).
constexpr EventPipes kEventPipes[] = {
    {Pipe::MTE2, Pipe::MTE1}, {Pipe::MTE1, Pipe::MTE2}, {Pipe::MTE1, Pipe::M}, {Pipe::M, Pipe::MTE1},
    {Pipe::MTE2, Pipe::V},    {Pipe::V, Pipe::MTE2},    {Pipe::MTE3, Pipe::V}, {Pipe::V, Pipe::MTE3},
    {Pipe::M, Pipe::V},       {Pipe::V, Pipe::M},       {Pipe::V, Pipe::V},    {Pipe::MTE3, Pipe::MTE1},
    {Pipe::MTE1, Pipe::MTE3}, {Pipe::MTE1, Pipe::V},    {Pipe::MTE2, Pipe::M}, {Pipe::M, Pipe::MTE2},
    {Pipe::V, Pipe::MTE1},    {Pipe::M, Pipe::FIX},     {Pipe::FIX, Pipe::M},  {Pipe::MTE3, Pipe::MTE2},
    {Pipe::MTE2, Pipe::MTE3}, {Pipe::S, Pipe::V},       {Pipe::V, Pipe::S},    {Pipe::S, Pipe::MTE2},
    {Pipe::MTE2, Pipe::S},    {Pipe::S, Pipe::MTE3},    {Pipe::MTE3, Pipe::S}, {Pipe::MTE2, Pipe::FIX},
    {Pipe::FIX, Pipe::MTE2},  {Pipe::FIX, Pipe::S},     {Pipe::M, Pipe::S}};
constexpr EventPipes Pipes(HardEvent e) { return kEventPipes[static_cast<int>(e)]; }

// Event ids of one TPipe, per (src, dst) pipe pair: what AllocEventID hands out (lowest free id).
struct EventPool {
  uint8_t occupied[kPipes * kPipes] = {};
  static int Key(Pipe src, Pipe dst) { return int(src) * kPipes + int(dst); }
  int32_t Fetch(Pipe src, Pipe dst) const {
    const unsigned free = ~unsigned(occupied[Key(src, dst)]) & 0xffu;
    return free ? __builtin_ctz(free) : kEventIds;  // kEventIds: none left (synccheck names it)
  }
  int32_t Alloc(Pipe src, Pipe dst) {
    const int32_t id = Fetch(src, dst);
    if (id < kEventIds) occupied[Key(src, dst)] |= uint8_t(1u << id);
    return id;
  }
  void Release(Pipe src, Pipe dst, int32_t id) {
    if (id >= 0 && id < kEventIds) occupied[Key(src, dst)] &= uint8_t(~(1u << id));
  }
};
}  // namespace twin

// PipeBarrier(ISASI).md: no barrier on PIPE_S (the scalar unit keeps its own order in hardware).
template <pipe_t pipe>
inline void PipeBarrier() {
  if constexpr (pipe == PIPE_S)
    twin::Violation("pipe barrier",
                    "PipeBarrier<PIPE_S>: A2 has no barrier for the scalar pipe (its order is kept "
                    "by the hardware)");
  if (twin::Recording()) twin::EmitBarrier(twin::ToPipe(pipe));
}
template <HardEvent event>
inline void SetFlag(int32_t eventID) {
  if (twin::Recording()) twin::EmitSync(twin::Kind::kSetFlag, twin::Pipes(event).src, twin::Pipes(event).dst, eventID);
}
template <HardEvent event>
inline void WaitFlag(int32_t eventID) {
  if (twin::Recording()) twin::EmitSync(twin::Kind::kWaitFlag, twin::Pipes(event).src, twin::Pipes(event).dst, eventID);
}

}  // namespace AscendC
