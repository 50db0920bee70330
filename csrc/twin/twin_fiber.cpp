// CPU twin, cores as fibers (twin_fiber.h). ucontext, not hand-written assembly: it is in every libc, and
// AddressSanitizer (tools/sanitize_host.sh) understands it once told of each switch; its one cost over
// assembly, a signal-mask system call per switch, leaves a switch at about 190 ns (docs/twin.md).
#include "twin_fiber.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define TWIN_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TWIN_FIBER_ASAN 1
#endif
#endif
#ifdef TWIN_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace AscendC {
namespace twin {

namespace {
// A core's stack: the 8 MiB a host thread gets, reserved, not committed (pages appear as touched), under
// one guard page that turns an overflow into a fault rather than another core's data.
constexpr size_t kStackBytes = size_t(8) << 20;
constexpr size_t kGuardBytes = 4096;

std::mutex gStackMutex;
std::vector<void*> gFreeStacks;  // mapped regions of kGuardBytes + kStackBytes, kept for the next launch

void* TakeStack() {
  {
    std::lock_guard<std::mutex> lock(gStackMutex);
    if (!gFreeStacks.empty()) {
      void* s = gFreeStacks.back();
      gFreeStacks.pop_back();
      return s;
    }
  }
  void* region = mmap(nullptr, kGuardBytes + kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (region == MAP_FAILED) throw std::bad_alloc();
  mprotect(region, kGuardBytes, PROT_NONE);
  return region;
}
void GiveStack(void* region) {
  std::lock_guard<std::mutex> lock(gStackMutex);
  gFreeStacks.push_back(region);
}

#ifdef TWIN_FIBER_ASAN
inline void AsanStart(void** fake, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake, bottom, size);
}
inline void AsanFinish(void* fake, const void** bottom, size_t* size) {
  __sanitizer_finish_switch_fiber(fake, bottom, size);
}
#else
inline void AsanStart(void**, const void*, size_t) {}
inline void AsanFinish(void*, const void**, size_t*) {}
#endif
}  // namespace

Fiber::~Fiber() {
  if (stack_) GiveStack(static_cast<uint8_t*>(stack_) - kGuardBytes);
}

void Fiber::Start(Fiber* scheduler, std::function<void()> body) {
  scheduler_ = scheduler;
  body_ = std::move(body);
  if (!stack_) stack_ = static_cast<uint8_t*>(TakeStack()) + kGuardBytes, stackBytes_ = kStackBytes;
  asanBottom_ = stack_, asanSize_ = stackBytes_;
  getcontext(&context_);
  context_.uc_stack.ss_sp = stack_;
  context_.uc_stack.ss_size = stackBytes_;
  context_.uc_link = nullptr;  // Entry never returns: it switches to the scheduler for good
  const uintptr_t self = reinterpret_cast<uintptr_t>(this);
  makecontext(&context_, reinterpret_cast<void (*)()>(&Fiber::Entry), 2, unsigned(self >> 32), unsigned(self));
}

void Fiber::Entry(unsigned hi, unsigned lo) {
  Fiber* self = reinterpret_cast<Fiber*>((uintptr_t(hi) << 32) | uintptr_t(lo));
  AsanFinish(nullptr, &self->scheduler_->asanBottom_, &self->scheduler_->asanSize_);
  self->body_();  // the launch's core body catches everything it throws
  self->finished_ = true;
  Fiber& to = *self->scheduler_;
  AsanStart(nullptr, to.asanBottom_, to.asanSize_);  // this stack is done with: its fake frames go
  setcontext(&to.context_);
}

void Fiber::SwitchTo(Fiber& core) {
  AsanStart(&fakeStack_, core.asanBottom_, core.asanSize_);
  swapcontext(&context_, &core.context_);
  // back here: the other side switched to us; a core learns its scheduler's stack again (ASan)
  AsanFinish(fakeStack_, stack_ ? &scheduler_->asanBottom_ : nullptr, stack_ ? &scheduler_->asanSize_ : nullptr);
}

}  // namespace twin
}  // namespace AscendC
