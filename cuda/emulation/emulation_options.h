// How the emulated CUDA device schedules and fills memory, for the race checks: blocks
// (and the threads of each block) started in a seeded order instead of concurrently, and
// fresh device memory and shared memory poisoned (all bits set: NaN floats, -1 integers)
// so that a read before the first write shows; and whether streams queue their work until
// the host waits for them (runtime_state.h's enqueue). Read from HB_CUDA_EMULATE_SEED,
// HB_CUDA_EMULATE_POISON and HB_CUDA_EMULATE_DEFER at first use; tests change them through
// the addon.
#pragma once

#include <cstdint>

namespace hb {
namespace cuda_emulation {

struct EmulationOptions {
  uint64_t scheduleSeed = 0;  // 0: blocks concurrently on the thread pool, threads in index order
  bool poison = false;
  bool deferred = true;  // false: every stream's work runs when it is issued
};

EmulationOptions emulationOptions();
void setEmulationOptions(const EmulationOptions& options);

// Counters since the process started (what a test reports it ran).
struct EmulationCounters {
  uint64_t launches = 0;
  uint64_t blocks = 0;
  uint64_t threads = 0;
  uint64_t hostWaits = 0;  // runtime_state.h's hostWaitCount
};
EmulationCounters emulationCounters();

}  // namespace cuda_emulation
}  // namespace hb
