// The device-wide CUB primitives cuda/*.cu call, for the emulated CUDA build: the same
// signatures and two-phase temporary-storage protocol (a first call with null storage
// asks how many bytes), computed on the host over the emulated device's memory with
// CUB's documented results (a stable LSD radix sort on bits [beginBit, endBit), signed
// keys ordered as numbers; scans; run-length encoding), queued on the stream as a GPU
// queues CUB's kernels. Each checks its ranges are device memory, as a kernel reading past
// an allocation on a GPU would fault.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/emulation/runtime_state.h"

namespace cub {

namespace emulated {

constexpr size_t kTempBytes = 256;

// An invalid call, with the message cudaGetErrorString will give.
inline cudaError_t refuse(const char* call, const char* why) {
  hb::cuda_emulation::setLaunchError(cudaErrorInvalidValue, std::string(call) + ": " + why);
  return cudaErrorInvalidValue;
}

// The first call sizes the temporary storage; the second must pass at least that much.
inline bool sizing(const char* call, void* temp, size_t& bytes, cudaError_t* status) {
  if (temp == nullptr) {
    bytes = kTempBytes;
    *status = cudaSuccess;
    return true;
  }
  if (bytes < kTempBytes || !hb::cuda_emulation::isDeviceRange(temp, kTempBytes)) {
    *status = refuse(call, "the temporary storage is smaller than the first call asked for, or not device memory");
    return true;
  }
  return false;
}

inline bool device(const void* pointer, size_t bytes) { return hb::cuda_emulation::isDeviceRange(pointer, bytes); }

// The radix sort's view of a key: unsigned, with the sign bit flipped for signed types.
template <typename K>
uint64_t radixBits(K key) {
  using U = std::make_unsigned_t<K>;
  U bits = static_cast<U>(key);
  if (std::is_signed<K>::value) bits ^= U(1) << (sizeof(K) * 8 - 1);
  return uint64_t(bits);
}

}  // namespace emulated

struct DeviceRadixSort {
  template <typename K, typename V>
  static cudaError_t SortPairs(void* temp, size_t& bytes, const K* keysIn, K* keysOut, const V* valuesIn, V* valuesOut,
                               int n, int beginBit = 0, int endBit = int(sizeof(K) * 8), cudaStream_t stream = nullptr) {
    cudaError_t status;
    constexpr const char* kCall = "cub::DeviceRadixSort::SortPairs";
    if (emulated::sizing(kCall, temp, bytes, &status)) return status;
    if (!hb::cuda_emulation::isStream(stream) || n < 0 || beginBit < 0 || endBit > int(sizeof(K) * 8) ||
        beginBit > endBit) {
      return emulated::refuse(kCall, "a bad stream, count or bit range");
    }
    const size_t count = size_t(n);
    if (!emulated::device(keysIn, count * sizeof(K)) || !emulated::device(keysOut, count * sizeof(K)) ||
        !emulated::device(valuesIn, count * sizeof(V)) || !emulated::device(valuesOut, count * sizeof(V))) {
      return emulated::refuse(kCall, "a key or value array is not inside one device allocation");
    }
    hb::cuda_emulation::enqueue(stream, [=] {
      const int width = endBit - beginBit;
      const uint64_t mask = width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
      std::vector<uint64_t> digits(count);
      for (size_t i = 0; i < count; ++i) digits[i] = (emulated::radixBits(keysIn[i]) >> beginBit) & mask;
      std::vector<size_t> order(count);
      std::iota(order.begin(), order.end(), size_t(0));
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return digits[a] < digits[b]; });
      std::vector<K> keys(count);
      std::vector<V> values(count);
      for (size_t i = 0; i < count; ++i) {
        keys[i] = keysIn[order[i]];
        values[i] = valuesIn[order[i]];
      }
      std::copy(keys.begin(), keys.end(), keysOut);
      std::copy(values.begin(), values.end(), valuesOut);
    });
    return cudaSuccess;
  }
};

struct DeviceScan {
  template <typename In, typename Out>
  static cudaError_t InclusiveSum(void* temp, size_t& bytes, const In* in, Out* out, int n, cudaStream_t stream = nullptr) {
    return scan(temp, bytes, in, out, n, stream, true);
  }
  template <typename In, typename Out>
  static cudaError_t ExclusiveSum(void* temp, size_t& bytes, const In* in, Out* out, int n, cudaStream_t stream = nullptr) {
    return scan(temp, bytes, in, out, n, stream, false);
  }

 private:
  template <typename In, typename Out>
  static cudaError_t scan(void* temp, size_t& bytes, const In* in, Out* out, int n, cudaStream_t stream, bool inclusive) {
    cudaError_t status;
    constexpr const char* kCall = "cub::DeviceScan";
    if (emulated::sizing(kCall, temp, bytes, &status)) return status;
    if (!hb::cuda_emulation::isStream(stream) || n < 0 || !emulated::device(in, size_t(n) * sizeof(In)) ||
        !emulated::device(out, size_t(n) * sizeof(Out))) {
      return emulated::refuse(kCall, "a bad stream or count, or an array not inside one device allocation");
    }
    hb::cuda_emulation::enqueue(stream, [=] {
      Out sum = Out();
      for (int i = 0; i < n; ++i) {
        const Out x = Out(in[i]);  // read before writing: in and out may be the same array
        if (inclusive) sum = sum + x;
        out[i] = sum;
        if (!inclusive) sum = sum + x;
      }
    });
    return cudaSuccess;
  }
};

struct DeviceRunLengthEncode {
  template <typename In, typename UniqueOut, typename CountOut, typename RunsOut>
  static cudaError_t Encode(void* temp, size_t& bytes, const In* in, UniqueOut* uniqueOut, CountOut* countsOut,
                            RunsOut* numRunsOut, int n, cudaStream_t stream = nullptr) {
    cudaError_t status;
    constexpr const char* kCall = "cub::DeviceRunLengthEncode::Encode";
    if (emulated::sizing(kCall, temp, bytes, &status)) return status;
    if (!hb::cuda_emulation::isStream(stream) || n < 0 || !emulated::device(in, size_t(n) * sizeof(In)) ||
        !emulated::device(numRunsOut, sizeof(RunsOut))) {
      return emulated::refuse(kCall, "a bad stream or count, or an array not inside one device allocation");
    }
    // The runs are counted when the input is there: outputs too small for them fail the
    // stream, as writing past them would on a GPU.
    hb::cuda_emulation::enqueue(stream, [=] {
      int runs = 0;
      for (int i = 0; i < n; ++i) {
        if (i == 0 || !(in[i] == in[i - 1])) ++runs;
      }
      if (!emulated::device(uniqueOut, size_t(runs) * sizeof(UniqueOut)) ||
          !emulated::device(countsOut, size_t(runs) * sizeof(CountOut))) {
        hb::cuda_emulation::reportKernelFailure(stream, std::string(kCall) + ": the runs do not fit the output arrays' device allocations");
        return;
      }
      int run = -1;
      for (int i = 0; i < n; ++i) {
        if (i == 0 || !(in[i] == in[i - 1])) {
          ++run;
          uniqueOut[run] = UniqueOut(in[i]);
          countsOut[run] = CountOut(0);
        }
        countsOut[run] = countsOut[run] + CountOut(1);
      }
      *numRunsOut = RunsOut(runs);
    });
    return cudaSuccess;
  }
};

}  // namespace cub
