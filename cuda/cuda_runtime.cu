// Devices, memory and copies.
#include <map>
#include <mutex>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"

namespace hb {
namespace cuda {

namespace {
thread_local bool onExecutorThread = false;
}

bool compiled() { return true; }

bool emulated() {
#if defined(HB_CUDA_EMULATED)
  return true;
#else
  return false;
#endif
}

int deviceCount(std::string* whyNone) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (whyNone) *whyNone = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    return 0;
  }
  if (count == 0 && whyNone) *whyNone = "the driver reports no CUDA device";
  return count;
}

std::string deviceName(int device) {
  cudaDeviceProp properties;
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

void memoryInfo(int device, size_t* freeBytes, size_t* totalBytes) {
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaMemGetInfo(freeBytes, totalBytes), "cudaMemGetInfo");
}

DeviceContext& useDevice(int device) {
  static std::mutex mutex;
  static auto* contexts = new std::map<int, DeviceContext>();  // lives as long as the process
  check(cudaSetDevice(device), "cudaSetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  auto found = contexts->find(device);
  if (found != contexts->end()) return found->second;
  DeviceContext context;
  check(cudaStreamCreateWithFlags(&context.compute, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&context.transfer, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreateWithFlags(&context.computeIssued, cudaEventDisableTiming), "cudaEventCreate");
  int pools = 0;
  cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device);
  context.memoryPools = pools != 0;
  if (context.memoryPools) {
    // The default pool gives its memory back to the driver at every synchronize, and
    // every call synchronizes: each step's scratch would be mapped afresh (a sparse
    // update's dozen buffers cost more than its kernels). Keep it, as PyTorch's caching
    // allocator does; releaseIdleDeviceMemory trims it once the device's executor idles.
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  }
  return contexts->emplace(device, context).first->second;
}

void bindThreadToDevice(int device) {
  onExecutorThread = true;
  try {
    useDevice(device);
  } catch (const Error&) {
    // Reported again, with its reason, by the first operation that needs the device.
  }
}

cudaStream_t streamForThisThread(DeviceContext& context) {
  return onExecutorThread ? context.compute : context.transfer;
}

void* allocate(int device, size_t bytes) {
  DeviceContext& context = useDevice(device);
  void* pointer = nullptr;
  const size_t size = bytes == 0 ? 256 : bytes;
  if (context.memoryPools) {
    cudaStream_t stream = streamForThisThread(context);
    check(cudaMallocAsync(&pointer, size, stream), "cudaMallocAsync");
    // On the executor the memory is used in the same stream's order; from the JS thread
    // (transfer stream) it may next be used on the compute stream, so wait for it.
    if (!onExecutorThread) check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  } else {
    check(cudaMalloc(&pointer, size), "cudaMalloc");
  }
  return pointer;
}

void releaseIdleDeviceMemory(int device) noexcept {
  try {
    DeviceContext& context = useDevice(device);
    check(cudaStreamSynchronize(context.compute), "cudaStreamSynchronize");
    releaseHostStaging(device);
    if (!context.memoryPools) return;
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
  } catch (...) {
  }
}

void release(int device, void* pointer) noexcept {
  try {
    DeviceContext& context = useDevice(device);
    // Every use of the buffer was queued on `compute` before its last reference went,
    // so freeing in that stream's order is safe and does not block.
    if (context.memoryPools) cudaFreeAsync(pointer, context.compute);
    else cudaFree(pointer);
  } catch (...) {
  }
}

static void copy(int device, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = streamForThisThread(context);
  if (onExecutorThread) {
    // The executor's copies into the device are used by its later work, in stream order:
    // nothing needs to wait for them (a step's feeds and ids, a device-to-device copy).
    if (kind == cudaMemcpyDeviceToDevice) {
      check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
      return;
    }
    if (kind == cudaMemcpyHostToDevice && copyToDeviceInOrder(device, stream, dst, src, bytes)) return;
  } else if (kind != cudaMemcpyHostToDevice) {
    // Another thread reading device memory (the CPU executor copying a GPU tensor to the
    // host): after everything the device's executor has issued, which its tasks no longer
    // wait for (a lookup, an update, a staged copy), as a marker on that executor promises.
    // (Copies into the device from the JS thread fill new tensors: they wait for nothing.)
    static std::mutex ordering;
    std::lock_guard<std::mutex> lock(ordering);
    check(cudaEventRecord(context.computeIssued, context.compute), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream, context.computeIssued, 0), "cudaStreamWaitEvent");
  }
  check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void copyToDevice(int device, void* dst, const void* src, size_t bytes) {
  copy(device, dst, src, bytes, cudaMemcpyHostToDevice);
}

void copyToHost(int device, void* dst, const void* src, size_t bytes) {
  copy(device, dst, src, bytes, cudaMemcpyDeviceToHost);
}

void copyDeviceToDevice(int device, void* dst, const void* src, size_t bytes) {
  copy(device, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

}  // namespace cuda
}  // namespace hb
