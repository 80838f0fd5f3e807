// The host thread pool that CPU kernels split their loops over.
#pragma once

#include <cstdint>
#include <functional>

namespace hb {

// Calls body(first, last) over [0, n) in chunks of at least `grain`, on the pool's
// threads and the calling thread, and returns when all chunks are done. The first
// exception a chunk throws is rethrown here. Safe to call from several threads: calls
// take turns. Called from inside a chunk, it runs body(0, n) on that thread. Pool size:
// HB_NUM_THREADS, else the number of hardware threads.
void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// As parallelFor, except that where another call has the pool it runs body(0, n) on the
// calling thread at once instead of waiting its turn: for work better done alone now than
// late (a copy the JS thread makes while a kernel on the executor holds the pool).
void parallelForIfFree(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

int threadPoolSize();

}  // namespace hb
