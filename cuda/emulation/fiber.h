// Stackful fibers: each emulated CUDA thread of a block runs on one, so a thread can stop
// at __syncthreads or a warp intrinsic and let its block-mates catch up, as on a GPU.
// Switching is a handful of register moves on x86-64 (no signal-mask system call, as
// swapcontext makes); other architectures fall back to ucontext.
#pragma once

#include <cstddef>

namespace hb {
namespace cuda_emulation {

class Fiber {
 public:
  explicit Fiber(size_t stackBytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Readies the fiber to run entry(argument) from the top of its stack at the next
  // resume(); the stack may be reused by a finished fiber.
  void start(void (*entry)(void*), void* argument);
  // From the scheduler: runs the fiber until it suspends or entry returns.
  void resume();
  // From inside the fiber: back to the scheduler that resumed it.
  void suspend();
  bool finished() const { return finished_; }

 private:
  static void trampoline();
  struct Native;
  Native* native_;
  void (*entry_)(void*) = nullptr;
  void* argument_ = nullptr;
  bool finished_ = true;
};

}  // namespace cuda_emulation
}  // namespace hb
