#include "cuda/emulation/self_test.h"

#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>

#include "cuda/cuda_backend.h"
#include "cuda/emulation/runtime_state.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/wire_cast.h"

namespace hb {
namespace cuda_emulation {

namespace {

constexpr int kWarpValues = 8;

// Per thread: the intrinsics' results, for the test to recompute from CUDA's definitions.
__global__ void warpIntrinsics(double* out) {
  const int tid = int(threadIdx.x);
  const int v = int(blockIdx.x) * 100 + tid;
  const unsigned all = __activemask();
  double* mine = out + (int64_t(blockIdx.x) * blockDim.x + tid) * kWarpValues;
  mine[0] = __shfl_sync(all, v, 5);
  mine[1] = __shfl_up_sync(all, v, 1);
  mine[2] = __shfl_down_sync(all, v, 3);
  mine[3] = __shfl_xor_sync(all, v, 1);
  mine[4] = __shfl_sync(all, v, 3, 8);
  mine[5] = double(__ballot_sync(all, v % 3 == 0));
  mine[6] = __all_sync(all, v >= 0) + 2 * __any_sync(all, v % 100 == 7);
  int sum = v;  // a butterfly: every lane of a full warp ends with the warp's sum
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(all, sum, offset);
  mine[7] = sum;
}

// A tree sum through shared memory: the textbook case for __syncthreads.
template <bool kBarriers>
__global__ void blockSum(const float* in, float* out) {
  float* partial = hb::cuda::dynamicSharedMemory<float>();
  const unsigned tid = threadIdx.x;
  partial[tid] = in[blockIdx.x * blockDim.x + tid];
  if (kBarriers) __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    if (kBarriers) __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = partial[0];
}

__global__ void divergentBarrier(int* out) {
  if (threadIdx.x < 10) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void warpMaskWithExitedLanes(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, int(threadIdx.x), 0);
}

__global__ void atomics(unsigned long long* count, int* maximum, float* halves) {
  atomicAdd(count, 1ull);
  atomicMax(maximum, int(blockIdx.x * blockDim.x + threadIdx.x));
  atomicAdd(halves, 0.5f);
}

__global__ void nothing(int*) {}

__global__ void storeValue(int* out, int value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = value;
}

// A stream of the project's kind (cuda_runtime.cu's compute and transfer streams).
struct OwnStream {
  OwnStream() { cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); }
  ~OwnStream() { cudaStreamDestroy(stream); }
  cudaStream_t stream = nullptr;
};

std::string errorText(cudaError_t status) {
  if (status == cudaSuccess) return std::string();
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

// Device memory for a self-test, freed however it ends.
template <typename T>
struct DeviceArray {
  explicit DeviceArray(size_t n) : count(n) {
    if (cudaMalloc(&data, n * sizeof(T)) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
    cudaMemset(data, 0, n * sizeof(T));
  }
  ~DeviceArray() { cudaFree(data); }
  std::vector<double> read() const {
    std::vector<T> host(count);
    cudaMemcpy(host.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost);
    return std::vector<double>(host.begin(), host.end());
  }
  T* data = nullptr;
  size_t count;
};

SelfTestResult finish(std::vector<double> values) {
  SelfTestResult result;
  result.error = errorText(cudaDeviceSynchronize());
  if (result.error.empty()) result.error = errorText(cudaGetLastError());
  result.values = std::move(values);
  return result;
}

}  // namespace

SelfTestResult runSelfTest(const std::string& name) {
  cudaGetLastError();
  if (name == "warp_intrinsics") {
    // Two blocks of 48 threads: one full warp and one of 16 lanes each.
    DeviceArray<double> out(2 * 48 * kWarpValues);
    hb::cuda::launchKernel(warpIntrinsics, 2, 48, 0, nullptr, out.data);
    SelfTestResult r = finish({});
    std::vector<double> host(out.count);
    cudaMemcpy(host.data(), out.data, out.count * sizeof(double), cudaMemcpyDeviceToHost);
    r.values = host;
    return r;
  }
  if (name == "block_sum" || name == "block_sum_without_barriers") {
    const int blocks = 3, threads = 256;
    std::vector<float> input(size_t(blocks * threads));
    for (size_t i = 0; i < input.size(); ++i) input[i] = float(i % 97);
    DeviceArray<float> in(input.size()), out(static_cast<size_t>(blocks));
    cudaMemcpy(in.data, input.data(), input.size() * sizeof(float), cudaMemcpyHostToDevice);
    if (name == "block_sum") {
      hb::cuda::launchKernel(blockSum<true>, blocks, threads, threads * sizeof(float), nullptr, in.data, out.data);
    } else {
      hb::cuda::launchKernel(blockSum<false>, blocks, threads, threads * sizeof(float), nullptr, in.data, out.data);
    }
    SelfTestResult r = finish({});
    r.values = out.read();
    return r;
  }
  if (name == "divergent_barrier") {
    DeviceArray<int> out(64);
    hb::cuda::launchKernel(divergentBarrier, 1, 64, 0, nullptr, out.data);
    return finish({});
  }
  if (name == "warp_mask_with_exited_lanes") {
    DeviceArray<int> out(32);
    hb::cuda::launchKernel(warpMaskWithExitedLanes, 1, 32, 0, nullptr, out.data);
    return finish({});
  }
  if (name == "atomics") {
    DeviceArray<unsigned long long> count(1);
    DeviceArray<int> maximum(1);
    DeviceArray<float> halves(1);
    hb::cuda::launchKernel(atomics, 64, 128, 0, nullptr, count.data, maximum.data, halves.data);
    SelfTestResult r = finish({});
    r.values = {count.read()[0], maximum.read()[0], halves.read()[0]};
    return r;
  }
  if (name == "wire_cast") {
    // cuda/wire_cast.cu runs on a GPU only under NCCL (Gloo packs on the host): here it
    // meets the CPU kernel on every float16 / bfloat16 edge. values: the mismatches of
    // pack (float16, bfloat16) and unpack (float16, bfloat16), then the count checked.
    std::vector<float> input;
    for (uint32_t bits = 0; bits < (1u << 16); ++bits) {
      // every bfloat16 pattern, and neighbours that round each way or tie
      for (uint32_t low : {0u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
        const uint32_t word = (bits << 16) | low;
        float f;
        std::memcpy(&f, &word, 4);
        input.push_back(f);
      }
    }
    const int64_t n = int64_t(input.size());
    DeviceArray<float> in(input.size()), back(input.size());
    DeviceArray<uint16_t> packed(input.size());
    cudaMemcpy(in.data, input.data(), input.size() * 4, cudaMemcpyHostToDevice);
    std::vector<double> mismatches;
    for (bool bfloat : {false, true}) {
      std::vector<uint16_t> want(input.size()), got(input.size());
      packWireCpu(input.data(), want.data(), n, bfloat);
      hb::cuda::packWire(0, in.data, packed.data, n, bfloat);
      cudaMemcpy(got.data(), packed.data, got.size() * 2, cudaMemcpyDeviceToHost);
      double bad = 0;
      for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
      mismatches.push_back(bad);
    }
    for (bool bfloat : {false, true}) {
      std::vector<uint16_t> words(1u << 16);
      for (uint32_t w = 0; w < words.size(); ++w) words[w] = uint16_t(w);
      std::vector<float> want(words.size()), got(words.size());
      unpackWireCpu(words.data(), want.data(), int64_t(words.size()), bfloat);
      cudaMemcpy(packed.data, words.data(), words.size() * 2, cudaMemcpyHostToDevice);
      hb::cuda::unpackWire(0, packed.data, back.data, int64_t(words.size()), bfloat);
      cudaMemcpy(got.data(), back.data, got.size() * 4, cudaMemcpyDeviceToHost);
      double bad = 0;
      for (size_t i = 0; i < got.size(); ++i) bad += std::memcmp(&got[i], &want[i], 4) != 0;
      mismatches.push_back(bad);
    }
    mismatches.push_back(double(n));
    return finish(mismatches);
  }
  // Emulated device memory is host memory: these tests look at it directly to see when
  // queued work ran.
  if (name == "deferred_stream") {
    // values: the kernel's result before and after the stream was waited for; whether its
    // event was not ready before and after; the host waits that one wait counted.
    OwnStream own;
    DeviceArray<int> out(1);
    cudaEvent_t event = nullptr;
    cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    hb::cuda::launchKernel(storeValue, 1, 32, 0, own.stream, out.data, 7);
    cudaEventRecord(event, own.stream);
    const double before = *out.data;
    const double notReadyBefore = cudaEventQuery(event) == cudaErrorNotReady;
    const uint64_t waits = hostWaitCount();
    cudaStreamSynchronize(own.stream);
    const double waited = double(hostWaitCount() - waits);
    const double after = *out.data;
    const double notReadyAfter = cudaEventQuery(event) == cudaErrorNotReady;
    cudaEventDestroy(event);
    return finish({before, after, notReadyBefore, notReadyAfter, waited});
  }
  if (name == "host_copies") {
    // values: a copy from page-locked memory changed after the call (read when the copy
    // runs), one from pageable memory changed the same way (read at the call), and a copy
    // into pageable memory of a queued kernel's result (done when the call returns).
    OwnStream own;
    DeviceArray<int> device(3);
    int* pinned = nullptr;
    cudaHostAlloc(reinterpret_cast<void**>(&pinned), sizeof(int), cudaHostAllocDefault);
    *pinned = 1;
    int pageable = 1;
    // (The pageable copy first: it waits for the stream, which would run the other.)
    cudaMemcpyAsync(device.data + 1, &pageable, sizeof(int), cudaMemcpyHostToDevice, own.stream);
    cudaMemcpyAsync(device.data, pinned, sizeof(int), cudaMemcpyHostToDevice, own.stream);
    *pinned = 2;
    pageable = 2;
    hb::cuda::launchKernel(storeValue, 1, 32, 0, own.stream, device.data + 2, 5);
    int back = 0;
    cudaMemcpyAsync(&back, device.data + 2, sizeof(int), cudaMemcpyDeviceToHost, own.stream);
    const double copiedBack = back;
    cudaStreamSynchronize(own.stream);
    cudaFreeHost(pinned);
    return finish({double(device.data[0]), double(device.data[1]), copiedBack});
  }
  if (name == "free_before_copy") {
    // A copy queued on one stream from memory another stream frees first: the copy's
    // stream reports it, as a GPU would fault.
    OwnStream a, b;
    DeviceArray<int> dst(1);
    void* src = nullptr;
    cudaMalloc(&src, sizeof(int));
    cudaMemcpyAsync(dst.data, src, sizeof(int), cudaMemcpyDeviceToDevice, a.stream);
    cudaFreeAsync(src, b.stream);
    cudaStreamSynchronize(b.stream);
    SelfTestResult r;
    r.error = errorText(cudaStreamSynchronize(a.stream));
    cudaGetLastError();
    return r;
  }
  if (name == "oversized_block") {
    DeviceArray<int> out(1);
    hb::cuda::launchKernel(nothing, 1, 2048, 0, nullptr, out.data);
    return finish({});
  }
  if (name == "copy_past_allocation") {
    DeviceArray<float> device(100);
    std::vector<float> host(101);
    SelfTestResult r;
    r.error = errorText(cudaMemcpy(host.data(), device.data, 101 * sizeof(float), cudaMemcpyDeviceToHost));
    cudaGetLastError();
    return r;
  }
  if (name == "double_free") {
    void* pointer = nullptr;
    cudaMalloc(&pointer, 64);
    cudaFree(pointer);
    SelfTestResult r;
    r.error = errorText(cudaFree(pointer));
    cudaGetLastError();
    return r;
  }
  throw std::invalid_argument("no emulation self-test named '" + name + "'");
}

}  // namespace cuda_emulation
}  // namespace hb
