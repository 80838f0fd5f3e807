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

// Polls ready() for up to `spin`; true once it holds.
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
  }
}

}  // namespace hb
