// What the emulated runtime (runtime.cc) shares with the block scheduler and the cub
// shim: error reporting, stream handles and the device allocations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace hb {
namespace cuda_emulation {

// A launch that was refused: returned by the next cudaGetLastError on this thread.
void setLaunchError(cudaError_t error, const std::string& message);
// A kernel on `stream` that failed while running (a deadlock at a barrier, a thrown
// error): returned by the stream's next synchronisation (or cudaDeviceSynchronize, or a
// synchronous cudaMemcpy), with `message` as its cudaGetErrorString.
void reportKernelFailure(cudaStream_t stream, const std::string& message);

bool isStream(cudaStream_t stream);

// Held while work runs "on" a stream: draining a stream runs its queued work under it,
// so two host threads that drain one stream at once (the executor waiting for its kernels,
// the JS thread for a copy) run its work once, in order.
class StreamTurn {
 public:
  explicit StreamTurn(cudaStream_t stream);
  ~StreamTurn();
  StreamTurn(const StreamTurn&) = delete;
  StreamTurn& operator=(const StreamTurn&) = delete;

 private:
  std::recursive_mutex* mutex_;
};

// Queues `work` on `stream`, as a GPU queues a launch or an asynchronous copy: it runs, in
// the stream's order, when the host next waits for that stream (cudaStreamSynchronize, an
// event it recorded, a copy into pageable host memory, cudaDeviceSynchronize), on the
// waiting thread. So code that reads a result before waiting for it reads what was there
// before, and memory freed or reused before the work ran shows, as on a GPU. Work on the
// null stream, and all work under HB_CUDA_EMULATE_DEFER=0, runs at once.
void enqueue(cudaStream_t stream, std::function<void()> work);
// Runs what is queued on `stream` (every stream's work for the null stream).
void drain(cudaStream_t stream);
// Host waits for the device so far: stream, event and device synchronisations and the copies
// that wait for their stream (into pageable host memory, or from it to the device).
uint64_t hostWaitCount();
// True when [pointer, pointer + bytes) lies inside one live device allocation.
bool isDeviceRange(const void* pointer, size_t bytes);

}  // namespace cuda_emulation
}  // namespace hb
