// native/kernels/finite_check.h on the GPU: each thread folds the index of a bad value
// into the minimum, so the first one is found whatever the schedule.
#include <algorithm>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/finite_check.h"

namespace hb {
namespace cuda {

namespace {

// skip, anyFailed: flags set to 1 where a value is not finite (null: none).
__global__ void firstNonFiniteKernel(const float* x, int64_t n, unsigned long long* first, int32_t* skip, int32_t* anyFailed) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (!finiteFloat(x[i])) {
      atomicMin(first, static_cast<unsigned long long>(i));
      // Every writer stores the same 1: no atomic needed.
      if (skip) *skip = 1;
      if (anyFailed) *anyFailed = 1;
    }
  }
}

int blocksFor(int64_t n, int threads) { return int(std::min<int64_t>((n + threads - 1) / threads, 4096)); }

}  // namespace

void flagNonFinite(int device, const float* x, int64_t n, uint64_t* first, int32_t* skip, int32_t* anyFailed) {
  if (n == 0) return;
  DeviceContext& context = useDevice(device);
  const int threads = 256;
  static_assert(sizeof(uint64_t) == sizeof(unsigned long long), "a 64-bit atomicMin");
  launchKernel(firstNonFiniteKernel, blocksFor(n, threads), threads, 0, context.compute, x, n,
               reinterpret_cast<unsigned long long*>(first), skip, anyFailed);
  check(cudaGetLastError(), "flagNonFinite launch");
}

void setDeviceBytes(int device, void* p, int byte, size_t bytes) {
  if (bytes == 0) return;
  DeviceContext& context = useDevice(device);
  check(cudaMemsetAsync(p, byte, bytes, context.compute), "cudaMemsetAsync");
}

int64_t firstNonFinite(int device, const float* x, int64_t n) {
  if (n == 0) return -1;
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = streamForThisThread(context);
  unsigned long long* first = static_cast<unsigned long long*>(allocate(device, sizeof(unsigned long long)));
  const unsigned long long none = ~0ull;
  unsigned long long found = none;
  try {
    // All bits set is `none`: a memset, where a copy from this pageable variable would
    // wait for the stream first.
    check(cudaMemsetAsync(first, 0xff, sizeof none, stream), "firstNonFinite");
    const int threads = 256;
    launchKernel(firstNonFiniteKernel, blocksFor(n, threads), threads, 0, stream, x, n, first, static_cast<int32_t*>(nullptr),
                 static_cast<int32_t*>(nullptr));
    check(cudaGetLastError(), "firstNonFinite launch");
    check(cudaMemcpyAsync(&found, first, sizeof found, cudaMemcpyDeviceToHost, stream), "firstNonFinite");
    check(cudaStreamSynchronize(stream), "firstNonFinite");
  } catch (...) {
    release(device, first);
    throw;
  }
  release(device, first);
  return found == none ? -1 : int64_t(found);
}

}  // namespace cuda
}  // namespace hb
