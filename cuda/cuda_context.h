// Per-device streams and error checking, for the .cu files only.
#pragma once

#include <cuda_runtime.h>

#include "native/core/status.h"

namespace hb {
namespace cuda {

struct DeviceContext {
  cudaStream_t compute = nullptr;   // the device executor's work, in order
  cudaStream_t transfer = nullptr;  // synchronous copies made from the JS thread
  bool memoryPools = false;         // cudaMallocAsync usable
  // Recorded on `compute` before a copy on `transfer` touches device memory, which then
  // waits for it: the executor's tasks end with their work issued, not done.
  cudaEvent_t computeIssued = nullptr;
};

// Makes `device` current on the calling thread and returns its context, created on
// first use.
DeviceContext& useDevice(int device);

// The stream for work issued from the calling thread: `compute` on the device's executor,
// `transfer` elsewhere (the JS thread), so synchronous calls do not wait for queued steps.
cudaStream_t streamForThisThread(DeviceContext& context);

// Queues a copy of `bytes` from host memory `src` to device memory `dst` on `stream`
// without waiting for the stream (cuda/host_staging.cu): `src` is read before the call
// returns and may be freed at once. False, with nothing queued, where it does not (a copy
// over 16 MiB, or page-locked memory refused): the caller copies as before.
bool copyToDeviceInOrder(int device, cudaStream_t stream, void* dst, const void* src, size_t bytes);
// Frees the page-locked chunks once the device has copied out of every one.
void releaseHostStaging(int device) noexcept;

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear a sticky launch error so later calls report their own
    fail("CUDA error in ", what, ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
  }
}

}  // namespace cuda
}  // namespace hb
