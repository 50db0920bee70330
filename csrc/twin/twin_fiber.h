// CPU twin, cores as fibers: a core of a synchronising launch is a user-level context with its own stack,
// run on a host worker until it waits for something not yet there, then switched out in user space
// (swapcontext: no kernel scheduler, no mutex hand-off). Every switch goes between a core and its worker's
// scheduler, never core to core. Stacks come from a cache, so a launch maps no memory once warm.
#pragma once
#include <ucontext.h>

#include <cstddef>
#include <functional>

namespace AscendC {
namespace twin {

class Fiber {
 public:
  Fiber() = default;  // the worker's own context: no stack of its own
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  ~Fiber();

  // Makes this a core that runs `body` on a stack of its own, returning to `scheduler` when body ends.
  void Start(Fiber* scheduler, std::function<void()> body);
  // On the scheduler: runs `core` until it yields or ends. On a core: `core` is its scheduler.
  void SwitchTo(Fiber& core);
  void Yield() { SwitchTo(*scheduler_); }  // on a core: back to its scheduler
  bool Finished() const { return finished_; }

 private:
  static void Entry(unsigned hi, unsigned lo);
  ucontext_t context_{};
  Fiber* scheduler_ = nullptr;
  std::function<void()> body_;
  void* stack_ = nullptr;
  size_t stackBytes_ = 0;
  bool finished_ = false;
  // AddressSanitizer's view of the stacks (it must be told of every switch; twin_fiber.cpp)
  void* fakeStack_ = nullptr;
  const void* asanBottom_ = nullptr;
  size_t asanSize_ = 0;
};

}  // namespace twin
}  // namespace AscendC
