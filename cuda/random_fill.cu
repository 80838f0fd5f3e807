#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/random_fill.h"

namespace hb {
namespace cuda {

namespace {
__global__ void fillKernel(float* out, int64_t n, FillSpec spec) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = fillValue(spec, uint64_t(i));
  }
}
}  // namespace

void fill(int device, float* out, int64_t n, const FillSpec& spec) {
  if (n == 0) return;
  DeviceContext& context = useDevice(device);
  const int64_t threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  launchKernel(fillKernel, unsigned(blocks < 65535 ? blocks : 65535), unsigned(threads), 0, context.compute, out, n, spec);
  check(cudaGetLastError(), "fill kernel launch");
  check(cudaStreamSynchronize(context.compute), "fill kernel");
}

}  // namespace cuda
}  // namespace hb
