// CPU twin, memory: GlobalTensor (GM), LocalTensor (a view of this core's UB), and the TPipe /
// TQue / TBuf buffer management with the UB-capacity and queue-discipline rules.
#pragma once
#include <string>

#include "twin_core.h"
#include "twin_types.h"

namespace AscendC {

enum class TPosition : int32_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, C2PIPE2GM, MAX };
using QuePosition = TPosition;

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;
  void SetGlobalBuffer(T* buffer, uint64_t bufferSize) { data_ = buffer; size_ = bufferSize; bounded_ = true; }
  void SetGlobalBuffer(T* buffer) { data_ = buffer; size_ = 0; bounded_ = false; }
  T GetValue(const uint64_t offset) const { TwinCheckRange(offset + 1, "GetValue"); return data_[offset]; }
  void SetValue(const uint64_t offset, T value) { TwinCheckRange(offset + 1, "SetValue"); data_[offset] = value; }
  uint64_t GetSize() const { return size_; }
  T* GetPhyAddr() const { return data_; }
  GlobalTensor operator[](const uint64_t offset) const {
    TwinCheckRange(offset, "GlobalTensor::operator[]");
    GlobalTensor view = *this;
    view.data_ = data_ + offset;
    view.size_ = bounded_ ? size_ - offset : 0;
    return view;
  }
  // Twin-only: GM bounds are checked when SetGlobalBuffer was given a size.
  void TwinCheckRange(uint64_t elems, const char* api) const {
    if (bounded_ && elems > size_) {
      twin::Violation("GM bounds", std::string(api) + " touches " + std::to_string(elems) + " " +
                                        twin::DtypeName<T>() + " elements but only " + std::to_string(size_) +
                                        " remain in the GlobalTensor");
    }
  }

 private:
  T* data_ = nullptr;
  uint64_t size_ = 0;
  bool bounded_ = false;
};

namespace twin {
enum class SlotState : uint8_t { kFree, kAllocated, kEnqueued, kDequeued };
struct Slot {
  uint8_t* addr = nullptr;
  uint32_t bytes = 0;
  SlotState state = SlotState::kFree;
};
}  // namespace twin

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;
  LocalTensor() = default;
  T GetValue(const uint32_t index) const {
    TwinCheckCount(index + 1, "GetValue");
    return data_[index];
  }
  template <typename S>
  void SetValue(const uint32_t index, const S value) const {
    TwinCheckCount(index + 1, "SetValue");
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
  uint64_t GetPhyAddr() const { return TwinUbOffset(); }

  // ---- twin internals (not Ascend C API; kernels never call these) ----
  T* TwinData() const { return data_; }
  twin::Slot* TwinSlot() const { return slot_; }
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
  Slot* Find(const void* addr) {
    for (uint32_t i = 0; i < count; ++i)
      if (slots[i].addr == addr) return &slots[i];
    return nullptr;
  }
};
}  // namespace twin

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public twin::BufferPool {
 public:
  TQue() = default;
  template <typename T>
  LocalTensor<T> AllocTensor() {
    for (uint32_t i = 0; i < count; ++i) {
      if (slots[i].state == twin::SlotState::kFree) {
        slots[i].state = twin::SlotState::kAllocated;
        return LocalTensor<T>::TwinMake(&slots[i], 0, slots[i].bytes / sizeof(T));
      }
    }
    if (count == 0) twin::Violation("queue discipline", "AllocTensor on a TQue that InitBuffer never set up");
    twin::Violation("queue discipline", "AllocTensor with all " + std::to_string(count) +
                                            " buffers of the TQue in use (a FreeTensor is missing)");
  }
  template <typename T>
  bool EnQue(const LocalTensor<T>& tensor) {
    twin::Slot* s = Own(tensor.TwinData(), "EnQue");
    if (s->state != twin::SlotState::kAllocated)
      twin::Violation("queue discipline", "EnQue of a tensor that is not freshly allocated (enqueued twice?)");
    if (fifoLen_ >= depth) {
      twin::Violation("queue discipline", "EnQue exceeds the TQue depth of " + std::to_string(depth));
    }
    s->state = twin::SlotState::kEnqueued;
    fifo_[(fifoHead_ + fifoLen_++) % kFifo] = s;
    return true;
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    if (fifoLen_ == 0) twin::Violation("queue discipline", "DeQue of an empty TQue (EnQue missing)");
    twin::Slot* s = fifo_[fifoHead_];
    fifoHead_ = (fifoHead_ + 1) % kFifo;
    --fifoLen_;
    s->state = twin::SlotState::kDequeued;
    return LocalTensor<T>::TwinMake(s, 0, s->bytes / sizeof(T));
  }
  template <typename T>
  void FreeTensor(LocalTensor<T>& tensor) {
    twin::Slot* s = Own(tensor.TwinData(), "FreeTensor");
    if (s->state == twin::SlotState::kFree) twin::Violation("queue discipline", "double FreeTensor of one buffer");
    if (s->state == twin::SlotState::kEnqueued)
      twin::Violation("queue discipline", "FreeTensor of a tensor still in the queue (DeQue it first)");
    s->state = twin::SlotState::kFree;
  }
  bool HasTensorInQue() { return fifoLen_ > 0; }
  int32_t GetTensorCountInQue() { return int32_t(fifoLen_); }

 private:
  static constexpr uint32_t kFifo = twin::kMaxQueueBuffers;
  twin::Slot* Own(const void* addr, const char* api) {
    twin::Slot* s = Find(addr);
    if (!s) twin::Violation("queue discipline", std::string(api) + " of a tensor that does not belong to this TQue");
    return s;
  }
  twin::Slot* fifo_[kFifo] = {};
  uint32_t fifoHead_ = 0, fifoLen_ = 0;
};

template <TPosition pos = TPosition::LCM>
class TBuf : public twin::BufferPool {
 public:
  TBuf() = default;
  template <typename T>
  LocalTensor<T> Get() { return Get<T>(Whole().bytes / sizeof(T)); }
  template <typename T>
  LocalTensor<T> Get(uint32_t len) { return GetWithOffset<T>(len, 0); }
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
class TPipe {
 public:
  TPipe() = default;
  template <class T>
  bool InitBuffer(T& que, uint8_t num, uint32_t len) {
    if (num == 0 || num > twin::kMaxQueueBuffers)
      twin::Violation("queue discipline", "InitBuffer with num=" + std::to_string(num) + " (1..64)");
    return Carve(que, num, len, "TQue");
  }
  template <TPosition bufPos>
  bool InitBuffer(TBuf<bufPos>& buf, uint32_t len) { return Carve(buf, 1, len, "TBuf"); }
  void Reset() { usedBytes_ = 0; }
  void Destroy() { usedBytes_ = 0; }

 private:
  bool Carve(twin::BufferPool& pool, uint32_t num, uint32_t len, const char* what) {
    const uint32_t slotBytes = twin::AlignUp32(len);
    const uint64_t need = uint64_t(usedBytes_) + uint64_t(num) * slotBytes;
    if (need > twin::kUbBytes) {
      twin::Violation("UB capacity", std::string("InitBuffer(") + what + ", " + std::to_string(num) + " x " +
                                         std::to_string(len) + " B) brings this TPipe to " + std::to_string(need) +
                                         " B, over the " + std::to_string(twin::kUbBytes) + " B Unified Buffer");
    }
    if (pool.count != 0) twin::Violation("queue discipline", std::string("InitBuffer called twice on one ") + what);
    for (uint32_t i = 0; i < num; ++i) {
      pool.slots[i] = twin::Slot{twin::Core().ub + usedBytes_, slotBytes, twin::SlotState::kFree};
      usedBytes_ += slotBytes;
    }
    pool.count = num;
    return true;
  }
  uint32_t usedBytes_ = 0;
};

}  // namespace AscendC
