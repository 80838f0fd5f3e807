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
};

// Makes `device` current on the calling thread and returns its context, created on
// first use.
DeviceContext& useDevice(int device);

// The stream for work issued from the calling thread: `compute` on the device's executor,
// `transfer` elsewhere (the JS thread), so synchronous calls do not wait for queued steps.
cudaStream_t streamForThisThread(DeviceContext& context);

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear a sticky launch error so later calls report their own
    fail("CUDA error in ", what, ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
  }
}

}  // namespace cuda
}  // namespace hb
