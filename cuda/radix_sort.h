// cub's radix sort of (key, value) pairs with its temporary storage, as the unique and
// the lookup backward use it; for the .cu files only.
#pragma once

#include <cub/cub.cuh>

#include "cuda/cuda_context.h"
#include "cuda/device_scratch.h"

namespace hb {
namespace cuda {

// Stable: equal keys keep their input order (what keeps sums in a fixed order).
template <typename KeyIn, typename Value>
void sortPairs(int device, cudaStream_t stream, const KeyIn* keysIn, KeyIn* keysOut, const Value* valuesIn,
               Value* valuesOut, int64_t n, int endBit) {
  size_t bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keysIn, keysOut, valuesIn, valuesOut, int(n), 0, endBit, stream),
        "cub::DeviceRadixSort::SortPairs");
  Scratch temp(device, bytes);
  check(cub::DeviceRadixSort::SortPairs(temp.as<void>(), bytes, keysIn, keysOut, valuesIn, valuesOut, int(n), 0, endBit,
                                        stream),
        "cub::DeviceRadixSort::SortPairs");
}

}  // namespace cuda
}  // namespace hb
