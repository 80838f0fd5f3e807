// Polling before sleeping, for the host's worker threads (the thread pool's helpers and
// the executors). Waking a sleeping thread costs tens of microseconds on the VMs this runs
// on (a futex wake and an inter-processor interrupt through the hypervisor): about what a
// 4096-bag lookup takes, and ten times a whole async call's round trip to an executor that
// is awake. Work comes back to back (a step's parallel loops, a loop of small ops), so a
// thread that polls a little before it sleeps is usually still awake for the next (as
// OpenMP runtimes do).
#pragma once

#include <chrono>
#include <thread>

namespace hb {

// How long a thread with nothing to do polls before it sleeps: HB_SPIN_US, default 200 us
// (0: sleep at once; anything but a whole number >= 0 keeps the default; at most 100 ms).
std::chrono::microseconds spinBeforeSleep();

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

// Polls ready() for up to `spin`; true once it holds. Between rounds of 64 polls the
// thread offers its core to any other runnable thread (sched_yield: one system call, well
// under a microsecond when no other thread is waiting). A completed task wakes the JS
// thread while the executor and the pool's helpers poll for the next one: on a machine
// with no more cores than pollers, a poller that never yields keeps the JS thread waiting
// for the scheduler to preempt it. Measured on a 2-vCPU EPYC VM: an eager lookup of 4096
// ids (dim 64) settled in 200-290 us (median) without the yield, 93-136 us with it;
// training steps ran at the same speed either way.
template <typename Ready>
bool pollFor(std::chrono::microseconds spin, Ready ready) {
  if (spin.count() == 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
    std::this_thread::yield();
  }
}

}  // namespace hb
