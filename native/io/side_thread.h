// Two pieces of file work at once: one on the calling thread, one on a thread of its own.
// Not the CPU pool: a pool job holds the pool's lock until it ends, and a disk read or
// write inside one (milliseconds, or far more on a slow disk) would hold back every other
// executor's kernels meanwhile.
#pragma once

#include <future>

namespace hb {

// Runs `side` on a new thread and `here` on this one; returns when both are done,
// rethrowing what either threw (`here`'s first).
template <typename Here, typename Side>
void runWithSideThread(const Here& here, const Side& side) {
  std::future<void> other = std::async(std::launch::async, [&side] { side(); });
  try {
    here();
  } catch (...) {
    other.wait();  // `side` may read what `here`'s caller owns: never unwind past it
    throw;
  }
  other.get();
}

}  // namespace hb
