// native/kernels/finite_check.h on the GPU: each thread folds the index of a bad value
// into the minimum, so the first one is found whatever the schedule.
#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/finite_check.h"

namespace hb {
namespace cuda {

namespace {

__global__ void firstNonFiniteKernel(const float* x, int64_t n, unsigned long long* first) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if (!finiteFloat(x[i])) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

}  // namespace

int64_t firstNonFinite(int device, const float* x, int64_t n) {
  if (n == 0) return -1;
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = streamForThisThread(context);
  unsigned long long* first = static_cast<unsigned long long*>(allocate(device, sizeof(unsigned long long)));
  const unsigned long long none = ~0ull;
  unsigned long long found = none;
  try {
    check(cudaMemcpyAsync(first, &none, sizeof none, cudaMemcpyHostToDevice, stream), "firstNonFinite");
    const int threads = 256;
    const int blocks = int(std::min<int64_t>((n + threads - 1) / threads, 4096));
    launchKernel(firstNonFiniteKernel, blocks, threads, 0, stream, x, n, first);
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
