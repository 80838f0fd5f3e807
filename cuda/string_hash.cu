// FarmHash Fingerprint64 on the GPU, one thread per value, through the same
// HB_HOST_DEVICE math (native/kernels/string_hash.h) as the CPU loops, so the two
// backends give identical hashes.
//
// Inputs and outputs are host memory. Everything runs on the compute stream, so the
// allocation, copies, kernel and stream-ordered frees are in one order whichever
// thread calls (the binding calls from the JS thread, which then waits behind any
// executor work already queued there).
#include <algorithm>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "cuda/device_scratch.h"
#include "native/kernels/string_hash.h"

namespace hb {
namespace cuda {

namespace {

constexpr int kThreads = 256;
// Kernels stride over the grid, so any n fits within this many blocks.
constexpr int64_t kMaxBlocks = 1 << 20;

unsigned blocksFor(int64_t n) { return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ int64_t firstIndex() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t gridStride() { return int64_t(gridDim.x) * blockDim.x; }

// `bytes` holds the host buffer from offsets[0] on, hence the `base` subtracted.
__global__ void hashByteRanges(const uint8_t* bytes, const int64_t* offsets, int64_t base, int64_t n, uint64_t numBuckets,
                               uint64_t* out) {
  for (int64_t i = firstIndex(); i < n; i += gridStride()) {
    out[i] = fingerprintRange(bytes + (offsets[i] - base), size_t(offsets[i + 1] - offsets[i]), numBuckets);
  }
}

template <typename Int>
__global__ void hashDecimal(const Int* values, int64_t n, uint64_t numBuckets, uint64_t* out) {
  for (int64_t i = firstIndex(); i < n; i += gridStride()) out[i] = fingerprintDecimalValue(int64_t(values[i]), numBuckets);
}

// Waits for `stream` when it goes out of scope, so the buffers declared before it are
// freed (in the compute stream's order) only after the work queued here, however the
// call ends.
struct DrainOnExit {
  cudaStream_t stream;
  ~DrainOnExit() { cudaStreamSynchronize(stream); }
};

void copyIn(cudaStream_t stream, void* dst, const void* src, size_t bytes, const char* what) {
  if (bytes > 0) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), what);
}

// Launch errors, then the copy of the hashes back, then the wait that makes hostOut final.
void finish(cudaStream_t stream, uint64_t* hostOut, const Scratch& out, int64_t n, const char* what) {
  check(cudaGetLastError(), what);
  check(cudaMemcpyAsync(hostOut, out.as<uint64_t>(), size_t(n) * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream), what);
  check(cudaStreamSynchronize(stream), what);
}

}  // namespace

void fingerprintByteRanges(int device, const uint8_t* hostBytes, int64_t byteCount, const int64_t* hostOffsets, int64_t n,
                           uint64_t numBuckets, uint64_t* hostOut) {
  DeviceContext& context = useDevice(device);
  if (n <= 0) return;  // also: no launch of 0 blocks
  // Only the bytes the ranges cover travel; the binding has checked every offset, this
  // keeps a bad caller from reading outside hostBytes.
  const int64_t base = hostOffsets[0];
  const int64_t end = hostOffsets[n];
  HB_CHECK(base >= 0 && base <= end && end <= byteCount, "fingerprint64 on CUDA: offsets [", base, ", ", end,
           "] are outside the ", byteCount, " bytes given");
  // The binding calls this on the JS thread: its stream, not the executor's queue.
  cudaStream_t stream = streamForThisThread(context);
  const Scratch bytes(device, size_t(end - base));
  const Scratch offsets(device, size_t(n + 1) * sizeof(int64_t));
  const Scratch out(device, size_t(n) * sizeof(uint64_t));
  const DrainOnExit drain{stream};
  copyIn(stream, bytes.as<void>(), hostBytes + base, size_t(end - base), "fingerprint64 on CUDA: copying the bytes");
  copyIn(stream, offsets.as<void>(), hostOffsets, size_t(n + 1) * sizeof(int64_t), "fingerprint64 on CUDA: copying the offsets");
  launchKernel(hashByteRanges, blocksFor(n), kThreads, 0, stream, bytes.as<const uint8_t>(), offsets.as<const int64_t>(), base, n,
                                                       numBuckets, out.as<uint64_t>());
  finish(stream, hostOut, out, n, "fingerprint64 on CUDA (byte ranges)");
}

void fingerprintDecimal(int device, const void* hostValues, bool int64, int64_t n, uint64_t numBuckets, uint64_t* hostOut) {
  DeviceContext& context = useDevice(device);
  if (n <= 0) return;
  cudaStream_t stream = streamForThisThread(context);
  const size_t valueBytes = size_t(n) * (int64 ? sizeof(int64_t) : sizeof(int32_t));
  const Scratch values(device, valueBytes);
  const Scratch out(device, size_t(n) * sizeof(uint64_t));
  const DrainOnExit drain{stream};
  copyIn(stream, values.as<void>(), hostValues, valueBytes, "fingerprint64 on CUDA: copying the integers");
  if (int64) {
    launchKernel(hashDecimal<int64_t>, blocksFor(n), kThreads, 0, stream, values.as<const int64_t>(), n, numBuckets, out.as<uint64_t>());
  } else {
    launchKernel(hashDecimal<int32_t>, blocksFor(n), kThreads, 0, stream, values.as<const int32_t>(), n, numBuckets, out.as<uint64_t>());
  }
  finish(stream, hostOut, out, n, "fingerprint64 on CUDA (integers)");
}

}  // namespace cuda
}  // namespace hb
