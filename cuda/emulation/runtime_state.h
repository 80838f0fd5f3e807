// What the emulated runtime (runtime.cc) shares with the block scheduler and the cub
// shim: error reporting, stream handles and the device allocations.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
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

// Held while work runs "on" a stream. Work runs when issued, on the issuing host thread,
// so two host threads may issue to one stream at once (the executor its kernels, the JS
// thread a stream-ordered free): holding the stream serialises them as the stream's
// order would on a GPU, where the free waits for the kernels queued before it.
class StreamTurn {
 public:
  explicit StreamTurn(cudaStream_t stream);
  ~StreamTurn();
  StreamTurn(const StreamTurn&) = delete;
  StreamTurn& operator=(const StreamTurn&) = delete;

 private:
  std::recursive_mutex* mutex_;
};
// True when [pointer, pointer + bytes) lies inside one live device allocation.
bool isDeviceRange(const void* pointer, size_t bytes);

}  // namespace cuda_emulation
}  // namespace hb
