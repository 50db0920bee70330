// CPU twin, memory: GlobalTensor (GM), LocalTensor (a view of this core's UB), and the TPipe /
// TQue / TBuf buffer management with the UB-capacity and queue-discipline rules.
#pragma once
#include <string>

#include "twin_core.h"
#include "twin_fuse.h"
#include "twin_record.h"
#include "twin_sync.h"
#include "twin_types.h"

namespace AscendC {

enum class TPosition : int32_t {
  GM,
  A1,
  A2,
  B1,
  B2,
  C1,
  C2,
  CO1,
  CO2,
  VECIN,
  VECOUT,
  VECCALC,
  LCM = VECCALC,
  SPM,
  SHM = SPM,
  TSCM,
  C2PIPE2GM,
  MAX
};
using QuePosition = TPosition;

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;
  void SetGlobalBuffer(T* buffer, uint64_t bufferSize) {
    data_ = buffer, size_ = bufferSize, bounded_ = true, bufferBytes_ = bufferSize * sizeof(T);
  }
  void SetGlobalBuffer(T* buffer) {
    data_ = buffer;
    size_ = 0;
    bounded_ = false;
    bufferBytes_ = 0;
  }
  T GetValue(const uint64_t offset) const {
    TwinCheckRange(offset + 1, "GetValue");
    if (twin::Recording()) TwinRecordScalar("GetValue", offset, false);
    twin::ObserveRange(data_ + offset, sizeof(T), false);  // a pending fused copy may write it
    return data_[offset];
  }
  void SetValue(const uint64_t offset, T value) {
    TwinCheckRange(offset + 1, "SetValue");
    if (twin::Recording()) TwinRecordScalar("SetValue", offset, true);
    twin::ObserveRange(data_ + offset, sizeof(T), true);
    data_[offset] = value;
  }
  uint64_t GetSize() const { return size_; }
  T* GetPhyAddr() const { return data_; }
  GlobalTensor operator[](const uint64_t offset) const {
    TwinCheckRange(offset, "GlobalTensor::operator[]");
    GlobalTensor view = *this;
    view.data_ = data_ + offset;
    view.size_ = bounded_ ? size_ - offset : 0;
    return view;
  }
  // Twin-only: the bytes of the whole buffer this tensor views (0 when unbounded), for the host's
  // choice of streaming stores: every row written into a large output streams, the last ones too.
  uint64_t TwinBufferBytes() const { return bufferBytes_; }
  // Twin-only: GM bounds are checked when SetGlobalBuffer was given a size.
  void TwinCheckRange(uint64_t elems, const char* api) const {
    if (bounded_ && elems > size_) {
      twin::Violation("GM bounds", std::string(api) + " touches " + std::to_string(elems) + " " + twin::DtypeName<T>() +
                                       " elements but only " + std::to_string(size_) + " remain in the GlobalTensor");
    }
  }
  void TwinRecordScalar(const char* api, uint64_t offset, bool write) const {  // PIPE_S reads/writes GM
    twin::Instr in = twin::OpInstr(twin::Pipe::S, api, twin::DtypeName<T>(), 1);
    const uint64_t at = reinterpret_cast<uint64_t>(data_ + offset);
    in.Add(write ? twin::Access::Write(twin::Space::GM, at, sizeof(T), twin::Init::kDefined, sizeof(T))
                 : twin::Access::Read(twin::Space::GM, at, sizeof(T), sizeof(T)));
    twin::Emit(in);
  }

 private:
  T* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t bufferBytes_ = 0;
  bool bounded_ = false;
};

namespace twin {
enum class SlotState : uint8_t { kFree, kAllocated, kEnqueued, kDequeued };
struct Slot {
  uint8_t* addr = nullptr;
  uint32_t bytes = 0;
  SlotState state = SlotState::kFree;
  int16_t id = -1;        // buffer number within its TPipe (the record's "slot")
  int8_t enQueEvt = -1;   // event id of the pending EnQue hand-off
  Space space = Space::UB;  // the on-chip buffer the TPipe carved it from (TPosition -> buffer)
};

// The buffer a TPosition lives in on the A2 cube/vector cores: A1/B1/C1 -> L1, A2 -> L0A,
// B2 -> L0B, CO1 -> L0C, C2 -> the bias table, everything else (VECIN/VECOUT/VECCALC, ...) -> UB.
constexpr Space SpaceOf(TPosition pos) {
  switch (pos) {
    case TPosition::A1:
    case TPosition::B1:
    case TPosition::C1: return Space::L1;
    case TPosition::A2: return Space::L0A;
    case TPosition::B2: return Space::L0B;
    case TPosition::CO1: return Space::L0C;
    case TPosition::C2: return Space::BT;
    default: return Space::UB;
  }
}
inline uint8_t* SpaceBase(Space s) {
  CoreContext& c = Core();
  switch (s) {
    case Space::L1: return c.l1;
    case Space::L0A: return c.l0a;
    case Space::L0B: return c.l0b;
    case Space::L0C: return c.l0c;
    case Space::BT: return c.bt;
    default: return c.ub;
  }
}
constexpr uint32_t SpaceBytes(Space s) {
  switch (s) {
    case Space::L1: return kL1Bytes;
    case Space::L0A: return kL0aBytes;
    case Space::L0B: return kL0bBytes;
    case Space::L0C: return kL0cBytes;
    case Space::BT: return kBtBytes;
    default: return kUbBytes;
  }
}

// What the real TPipe keeps for its queues: event ids in use, and per buffer the FreeTensor
// event the next AllocTensor (or the pipe's destruction) waits for.
constexpr int kMaxPipeSlots = 128;
struct PipeState {
  EventPool events;
  int8_t freeEvt[kMaxPipeSlots];
  Pipe freeSrc[kMaxPipeSlots], freeDst[kMaxPipeSlots];
  const char* freeQue[kMaxPipeSlots];
  int16_t slots = 0;
  PipeState() {
    for (int i = 0; i < kMaxPipeSlots; ++i) freeEvt[i] = -1;
  }
};
}  // namespace twin

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;
  LocalTensor() = default;
  T GetValue(const uint32_t index) const {
    TwinCheckCount(index + 1, "GetValue");
    if (twin::Recording()) TwinRecordScalar("GetValue", index, false);
    twin::ObserveRange(data_ + index, sizeof(T), false);  // flushes the run only if it writes the element
    return data_[index];
  }
  template <typename S>
  void SetValue(const uint32_t index, const S value) const {
    TwinCheckCount(index + 1, "SetValue");
    if (twin::Recording()) TwinRecordScalar("SetValue", index, true);
    twin::ObserveRange(data_ + index, sizeof(T), true);
    data_[index] = static_cast<T>(value);
  }
  LocalTensor operator[](const uint32_t offset) const {
    TwinCheckCount(offset, "operator[]");
    LocalTensor view = *this;
    view.data_ = data_ + offset;
    view.size_ = size_ - offset;
    return view;
  }
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    LocalTensor<U> out;
    out.data_ = reinterpret_cast<U*>(data_);
    out.size_ = static_cast<uint32_t>(uint64_t(size_) * sizeof(T) / sizeof(U));
    out.slot_ = slot_;
    return out;
  }
  uint32_t GetSize() const { return size_; }
  uint64_t GetPhyAddr() const { return TwinOffset(); }

  // ---- twin internals (not Ascend C API; kernels never call these) ----
  // The data for an API that reads or writes it now: a pending fused run executes first.
  T* TwinData() const {
    twin::Observe();
    return data_;
  }
  T* TwinPtr() const { return data_; }  // the address only (fused instructions, queue ownership)
  twin::Slot* TwinSlot() const { return slot_; }
  // The on-chip buffer this tensor lives in, and its byte offset there (UB for slot-less tensors).
  twin::Space TwinSpace() const { return slot_ ? slot_->space : twin::Space::UB; }
  uint64_t TwinOffset() const { return uint64_t(reinterpret_cast<uint8_t*>(data_) - twin::SpaceBase(TwinSpace())); }
  uint64_t TwinUbOffset() const { return uint64_t(reinterpret_cast<uint8_t*>(data_) - twin::Core().ub); }
  void TwinCheckCount(uint64_t elems, const char* api) const {
    if (data_ == nullptr) twin::Violation("UB bounds", std::string(api) + " on a LocalTensor that holds no buffer");
    if (elems > size_) {
      twin::Violation("UB bounds", std::string(api) + " needs " + std::to_string(elems) + " " + twin::DtypeName<T>() +
                                       " elements but the LocalTensor holds " + std::to_string(size_));
    }
  }
  void TwinCheckAligned(const char* api) const {  // the UB base is 64-byte aligned, so the address tells
    if (reinterpret_cast<uintptr_t>(data_) % twin::kBlockBytes != 0) {
      twin::Violation("32-byte alignment", std::string(api) + " operand starts at UB byte " +
                                               std::to_string(TwinUbOffset()) + ", not a multiple of 32");
    }
  }
  // This tensor's first `elems` elements as a record operand (UB bytes from the UB base).
  twin::Access TwinRead(uint64_t elems) const {
    return twin::Access::Read(twin::Space::UB, TwinUbOffset(), elems * sizeof(T), sizeof(T));
  }
  twin::Access TwinWrite(uint64_t elems, twin::Init init) const {
    return twin::Access::Write(twin::Space::UB, TwinUbOffset(), elems * sizeof(T), init, sizeof(T));
  }
  void TwinRecordScalar(const char* api, uint32_t index, bool write) const {  // PIPE_S reads/writes UB
    twin::Instr in = twin::OpInstr(twin::Pipe::S, api, twin::DtypeName<T>(), 1);
    const uint64_t at = TwinUbOffset() + uint64_t(index) * sizeof(T);
    twin::Access a = write ? twin::Access::Write(twin::Space::UB, at, sizeof(T), twin::Init::kDefined, sizeof(T))
                           : twin::Access::Read(twin::Space::UB, at, sizeof(T), sizeof(T));
    a.leaves = !write;  // a scalar read is a use: the value steers the program
    in.Add(a);
    twin::Emit(in);
  }
  static LocalTensor TwinMake(twin::Slot* slot, uint32_t byteOffset, uint32_t elems) {
    LocalTensor t;
    t.data_ = reinterpret_cast<T*>(slot->addr + byteOffset);
    t.size_ = elems;
    t.slot_ = slot;
    return t;
  }

 private:
  template <typename U>
  friend class LocalTensor;
  T* data_ = nullptr;
  uint32_t size_ = 0;
  twin::Slot* slot_ = nullptr;
};

namespace twin {
// Buffers carved out of one pipe: the shared part of TQue and TBuf.
class BufferPool {
 public:
  Slot slots[kMaxQueueBuffers];
  uint32_t count = 0;
  PipeState* pipeState = nullptr;  // the TPipe that carved the buffers
  Space space = Space::UB;         // where the TPipe carves them (the TQue/TBuf's TPosition)
  int32_t quePosition = -1;        // a TQue's TPosition when its buffers carry hand-off events
  Slot* Find(const void* addr) {
    for (uint32_t i = 0; i < count; ++i)
      if (slots[i].addr == addr) return &slots[i];
    return nullptr;
  }
};
}  // namespace twin

namespace twin {
// The hand-off a queue position stands for: EnQue = SetFlag<src_dst>, DeQue = WaitFlag<src_dst>,
// FreeTensor = SetFlag<dst_src>, AllocTensor = WaitFlag<dst_src> if one is pending
// (kernel_tquebind_impl.h). Positions without a pair (VECCALC, GM, ...) emit no events.
struct QueEvents {
  bool any;
  Pipe src, dst;
  const char* name;
};
constexpr QueEvents EventsOf(TPosition pos) {
  switch (pos) {
    case TPosition::VECIN: return {true, Pipe::MTE2, Pipe::V, "VECIN"};
    case TPosition::VECOUT: return {true, Pipe::V, Pipe::MTE3, "VECOUT"};
    case TPosition::A1: return {true, Pipe::MTE2, Pipe::MTE1, "A1"};
    case TPosition::B1: return {true, Pipe::MTE2, Pipe::MTE1, "B1"};
    case TPosition::C1: return {true, Pipe::MTE2, Pipe::MTE1, "C1"};
    case TPosition::A2: return {true, Pipe::MTE1, Pipe::M, "A2"};
    case TPosition::B2: return {true, Pipe::MTE1, Pipe::M, "B2"};
    case TPosition::CO1: return {true, Pipe::M, Pipe::FIX, "CO1"};
    default: return {false, Pipe::S, Pipe::S, "?"};
  }
}
}  // namespace twin

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public twin::BufferPool {
 public:
  TQue() {
    space = twin::SpaceOf(pos);
    if constexpr (twin::EventsOf(pos).any) quePosition = int32_t(pos);
  }
  template <typename T>
  LocalTensor<T> AllocTensor() {
    for (uint32_t k = 0; k < count; ++k) {  // round robin from a cursor, like the real TQue
      twin::Slot& s = slots[cursor_];
      cursor_ = cursor_ + 1 == count ? 0 : cursor_ + 1;
      if (s.state == twin::SlotState::kFree) {
        s.state = twin::SlotState::kAllocated;
        if constexpr (kEvents.any) WaitFree(s);
        return LocalTensor<T>::TwinMake(&s, 0, s.bytes / sizeof(T));
      }
    }
    if (count == 0) twin::Violation("queue discipline", "AllocTensor on a TQue that InitBuffer never set up");
    twin::Violation("queue discipline", "AllocTensor with all " + std::to_string(count) +
                                            " buffers of the TQue in use (a FreeTensor is missing)");
  }
  template <typename T>
  bool EnQue(const LocalTensor<T>& tensor) {
    twin::Slot* s = Own(tensor.TwinPtr(), "EnQue");
    if (s->state != twin::SlotState::kAllocated)
      twin::Violation("queue discipline", "EnQue of a tensor that is not freshly allocated (enqueued twice?)");
    if (fifoLen_ >= depth) {
      twin::Violation("queue discipline", "EnQue exceeds the TQue depth of " + std::to_string(depth));
    }
    s->state = twin::SlotState::kEnqueued;
    fifo_[(fifoHead_ + fifoLen_++) % kFifo] = s;
    if constexpr (kEvents.any) {
      s->enQueEvt = int8_t(pipeState->events.Alloc(kEvents.src, kEvents.dst));
      twin::EmitSync(twin::Kind::kSetFlag, kEvents.src, kEvents.dst, s->enQueEvt, kEvents.name, s->id, "EnQue");
    }
    return true;
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    if (fifoLen_ == 0) twin::Violation("queue discipline", "DeQue of an empty TQue (EnQue missing)");
    twin::Slot* s = fifo_[fifoHead_];
    fifoHead_ = (fifoHead_ + 1) % kFifo;
    --fifoLen_;
    s->state = twin::SlotState::kDequeued;
    if constexpr (kEvents.any) {
      twin::EmitSync(twin::Kind::kWaitFlag, kEvents.src, kEvents.dst, s->enQueEvt, kEvents.name, s->id, "DeQue");
      pipeState->events.Release(kEvents.src, kEvents.dst, s->enQueEvt);
      s->enQueEvt = -1;
    }
    return LocalTensor<T>::TwinMake(s, 0, s->bytes / sizeof(T));
  }
  template <typename T>
  void FreeTensor(LocalTensor<T>& tensor) {
    twin::Slot* s = Own(tensor.TwinPtr(), "FreeTensor");
    if (s->state == twin::SlotState::kFree) twin::Violation("queue discipline", "double FreeTensor of one buffer");
    if (s->state == twin::SlotState::kEnqueued)
      twin::Violation("queue discipline", "FreeTensor of a tensor still in the queue (DeQue it first)");
    s->state = twin::SlotState::kFree;
    if constexpr (kEvents.any) {
      twin::PipeState& p = *pipeState;
      if (s->id >= 0 && s->id < twin::kMaxPipeSlots) {
        p.freeEvt[s->id] = int8_t(p.events.Alloc(kEvents.dst, kEvents.src));
        p.freeSrc[s->id] = kEvents.dst, p.freeDst[s->id] = kEvents.src, p.freeQue[s->id] = kEvents.name;
        twin::EmitSync(twin::Kind::kSetFlag, kEvents.dst, kEvents.src, p.freeEvt[s->id], kEvents.name, s->id,
                       "FreeTensor");
      }
    }
  }
  bool HasTensorInQue() { return fifoLen_ > 0; }
  int32_t GetTensorCountInQue() { return int32_t(fifoLen_); }

 private:
  static constexpr uint32_t kFifo = twin::kMaxQueueBuffers;
  static constexpr twin::QueEvents kEvents = twin::EventsOf(pos);
  twin::Slot* Own(const void* addr, const char* api) {
    twin::Slot* s = Find(addr);
    if (!s) twin::Violation("queue discipline", std::string(api) + " of a tensor that does not belong to this TQue");
    return s;
  }
  void WaitFree(twin::Slot& s) {  // the previous user of this buffer has released it
    twin::PipeState& p = *pipeState;
    if (s.id < 0 || s.id >= twin::kMaxPipeSlots || p.freeEvt[s.id] < 0) return;
    twin::EmitSync(twin::Kind::kWaitFlag, kEvents.dst, kEvents.src, p.freeEvt[s.id], kEvents.name, s.id, "AllocTensor");
    p.events.Release(kEvents.dst, kEvents.src, p.freeEvt[s.id]);
    p.freeEvt[s.id] = -1;
  }
  twin::Slot* fifo_[kFifo] = {};
  uint32_t fifoHead_ = 0, fifoLen_ = 0, cursor_ = 0;
};

template <TPosition pos = TPosition::LCM>
class TBuf : public twin::BufferPool {
 public:
  TBuf() { space = twin::SpaceOf(pos); }
  template <typename T>
  LocalTensor<T> Get() {
    return Get<T>(Whole().bytes / sizeof(T));
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t len) {
    return GetWithOffset<T>(len, 0);
  }
  template <typename T>
  LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) {
    twin::Slot& s = Whole();
    if (bufOffset % twin::kBlockBytes != 0)
      twin::Violation("32-byte alignment", "TBuf::GetWithOffset offset " + std::to_string(bufOffset) + " bytes");
    if (uint64_t(bufOffset) + uint64_t(size) * sizeof(T) > s.bytes) {
      twin::Violation("UB bounds", "TBuf::Get of " + std::to_string(size) + " " + twin::DtypeName<T>() +
                                       " elements at byte " + std::to_string(bufOffset) + " overruns the " +
                                       std::to_string(s.bytes) + "-byte TBuf");
    }
    return LocalTensor<T>::TwinMake(&s, bufOffset, size);
  }

 private:
  twin::Slot& Whole() {
    if (count == 0) twin::Violation("UB bounds", "TBuf::Get on a TBuf that InitBuffer never set up");
    return slots[0];
  }
};

// One pipe owns the UB of its core; buffers are carved from it in order, 32-byte aligned.
class TPipe;
namespace twin {
inline TPipe*& CurrentPipe() {  // what GetTPipePtr() returns: the block's latest TPipe
  thread_local TPipe* pipe = nullptr;
  return pipe;
}
}  // namespace twin

class TPipe {
 public:
  TPipe() { twin::CurrentPipe() = this; }
  ~TPipe() {
    twin::DeferErrors hold;  // a finding here surfaces at the end of the block: destructors must not throw
    if (!destroyed_) Destroy();
    if (twin::CurrentPipe() == this) twin::CurrentPipe() = nullptr;
  }
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;
  template <class T>
  bool InitBuffer(T& que, uint8_t num, uint32_t len) {
    if (num == 0 || num > twin::kMaxQueueBuffers)
      twin::Violation("queue discipline", "InitBuffer with num=" + std::to_string(num) + " (1..64)");
    // A TQue buffer holds its hand-off's event id, and A2 has 8 per pipe pair: at most 8 TQue
    // buffers per TPosition (TQue简介.md, "QUE的Buffer数量最大也分别为8个").
    if (que.quePosition >= 0) {
      uint32_t& n = queBuffers_[que.quePosition];
      if (n + num > uint32_t(twin::kEventIds))
        twin::Violation("buffer count", "InitBuffer(TQue, " + std::to_string(num) + ") brings this TPipe to " +
                                            std::to_string(n + num) + " TQue buffers at one TPosition; A2 has " +
                                            std::to_string(twin::kEventIds) + " event ids for their hand-offs");
      n += num;
    }
    return Carve(que, num, len, "TQue");
  }
  template <TPosition bufPos>
  bool InitBuffer(TBuf<bufPos>& buf, uint32_t len) {
    return Carve(buf, 1, len, "TBuf");
  }
  void Reset() {
    WaitPendingFrees();
    for (uint32_t& u : usedBytes_) u = 0;
    for (uint32_t& n : queBuffers_) n = 0;
    buffers_ = 0;
  }
  // As on the device: buffers released by FreeTensor are waited for, then every pipe drains.
  void Destroy() {
    WaitPendingFrees();
    PipeBarrier<PIPE_ALL>();
    for (uint32_t& u : usedBytes_) u = 0;
    destroyed_ = true;
  }
  // Event ids for manual SetFlag/WaitFlag that cannot collide with the queues' hand-offs.
  template <HardEvent evt>
  TEventID AllocEventID() {
    const int32_t id = state_.events.Alloc(twin::Pipes(evt).src, twin::Pipes(evt).dst);
    twin::NoteEventHandedOut(twin::Pipes(evt).src, twin::Pipes(evt).dst, id);
    return TEventID(id);
  }
  template <HardEvent evt>
  void ReleaseEventID(TEventID id) {
    state_.events.Release(twin::Pipes(evt).src, twin::Pipes(evt).dst, id);
  }
  template <HardEvent evt>
  TEventID FetchEventID() {
    return FetchEventID(evt);
  }
  TEventID FetchEventID(HardEvent evt) {
    const int32_t id = state_.events.Fetch(twin::Pipes(evt).src, twin::Pipes(evt).dst);
    twin::NoteEventHandedOut(twin::Pipes(evt).src, twin::Pipes(evt).dst, id);
    return TEventID(id);
  }

 private:
  void WaitPendingFrees() {
    for (int i = 0; i < state_.slots && i < twin::kMaxPipeSlots; ++i) {
      if (state_.freeEvt[i] < 0) continue;
      twin::EmitSync(twin::Kind::kWaitFlag, state_.freeSrc[i], state_.freeDst[i], state_.freeEvt[i], state_.freeQue[i],
                     i, "TPipe::Destroy");
      state_.events.Release(state_.freeSrc[i], state_.freeDst[i], state_.freeEvt[i]);
      state_.freeEvt[i] = -1;
    }
  }
  bool Carve(twin::BufferPool& pool, uint32_t num, uint32_t len, const char* what) {
    const uint32_t slotBytes = twin::AlignUp32(len);
    uint32_t& used = usedBytes_[int(pool.space)];
    const uint64_t need = uint64_t(used) + uint64_t(num) * slotBytes;
    const uint32_t cap = twin::SpaceBytes(pool.space);
    if (need > cap) {
      const bool ub = pool.space == twin::Space::UB;
      const std::string rule = std::string(twin::SpaceName(pool.space)) + " capacity";
      twin::Violation(rule.c_str(), std::string("InitBuffer(") + what + ", " + std::to_string(num) + " x " +
                                        std::to_string(len) + " B) brings this TPipe to " + std::to_string(need) +
                                        " B, over the " + std::to_string(cap) + " B " +
                                        (ub ? "Unified Buffer" : twin::SpaceName(pool.space)));
    }
    if (pool.count != 0) twin::Violation("queue discipline", std::string("InitBuffer called twice on one ") + what);
    // At most 64 buffers per TPipe until Reset (InitBuffer.md 约束说明; kernel_tpipe_impl.h curBufSize_
    // <= QBUF_MAX_LEN): a TBuf is one, a TQue num.
    if (buffers_ + num > twin::kMaxQueueBuffers)
      twin::Violation("buffer count", std::string("InitBuffer(") + what + ", " + std::to_string(num) +
                                          ") brings this TPipe to " + std::to_string(buffers_ + num) +
                                          " buffers, over the 64 one TPipe holds");
    buffers_ += num;
    uint8_t* base = twin::SpaceBase(pool.space);
    for (uint32_t i = 0; i < num; ++i) {
      pool.slots[i] = twin::Slot{base + used, slotBytes, twin::SlotState::kFree, state_.slots++, -1, pool.space};
      used += slotBytes;
    }
    pool.count = num;
    pool.pipeState = &state_;
    return true;
  }
  uint32_t usedBytes_[twin::kSpaces] = {};
  uint32_t queBuffers_[int(TPosition::MAX)] = {};
  uint32_t buffers_ = 0;
  bool destroyed_ = false;
  twin::PipeState state_;
};

inline TPipe* GetTPipePtr() { return twin::CurrentPipe(); }

}  // namespace AscendC
