// native/kernels/wire_cast.h on the GPU: one thread per value.
#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/wire_cast.h"

namespace hb {
namespace cuda {

namespace {

__global__ void packWireKernel(const float* in, uint16_t* out, int64_t n, bool bfloat16) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = packWireValue(in[i], bfloat16);
}

__global__ void unpackWireKernel(const uint16_t* in, float* out, int64_t n, bool bfloat16) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = unpackWireValue(in[i], bfloat16);
}

constexpr int kThreads = 256;

}  // namespace

void packWire(int device, const float* in, uint16_t* out, int64_t n, bool bfloat16) {
  if (n == 0) return;
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = streamForThisThread(context);
  launchKernel(packWireKernel, unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream, in, out, n, bfloat16);
  check(cudaGetLastError(), "packWire launch");
  check(cudaStreamSynchronize(stream), "packWire");
}

void unpackWire(int device, const uint16_t* in, float* out, int64_t n, bool bfloat16) {
  if (n == 0) return;
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = streamForThisThread(context);
  launchKernel(unpackWireKernel, unsigned((n + kThreads - 1) / kThreads), kThreads, 0, stream, in, out, n, bfloat16);
  check(cudaGetLastError(), "unpackWire launch");
  check(cudaStreamSynchronize(stream), "unpackWire");
}

}  // namespace cuda
}  // namespace hb
