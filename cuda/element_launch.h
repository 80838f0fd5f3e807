// The launch shape of the one-thread-per-element kernels, for the .cu files only.
#pragma once

#include <cstdint>

namespace hb {
namespace cuda {

constexpr int kElementThreads = 256;

// Blocks that cover n elements (n <= 2^31 * 256, the grid's limit).
inline unsigned elementBlocks(int64_t n) { return unsigned((n + kElementThreads - 1) / kElementThreads); }

__device__ inline int64_t elementIndex() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

}  // namespace cuda
}  // namespace hb
