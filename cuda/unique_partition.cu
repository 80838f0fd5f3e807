// unique and partitionByOwner on the GPU, with the CPU kernels' exact output order:
// CUB's radix sort is stable, so sorting (id, position) pairs keeps each id's first
// position at the head of its run.
#include <cub/cub.cuh>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "cuda/device_scratch.h"
#include "cuda/element_launch.h"
#include "cuda/radix_sort.h"
#include "native/kernels/unique_partition.h"

namespace hb {
namespace cuda {

namespace {

__global__ void iota(int32_t* out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = int32_t(i);
}

__global__ void decrement(int32_t* values, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) values[i] -= 1;
}

template <typename Id>
__global__ void markRunHeads(const Id* sorted, int64_t n, int32_t* heads) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < n) heads[j] = (j == 0 || sorted[j] != sorted[j - 1]) ? 1 : 0;
}

template <typename Id>
__global__ void describeRuns(const Id* sortedIds, const int32_t* sortedPositions, const int32_t* heads,
                             const int32_t* runOf, int64_t n, int32_t* firstPosition, Id* runId) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < n && heads[j]) {
    firstPosition[runOf[j]] = sortedPositions[j];
    runId[runOf[j]] = sortedIds[j];
  }
}

template <typename Id>
__global__ void emitUnique(const int32_t* runOrder, const Id* runId, int64_t runs, int32_t* rankOfRun, Id* uniqueIds) {
  const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < runs) {
    rankOfRun[runOrder[k]] = int32_t(k);
    uniqueIds[k] = runId[runOrder[k]];
  }
}

__global__ void emitInverse(const int32_t* sortedPositions, const int32_t* runOf, const int32_t* rankOfRun, int64_t n,
                            int32_t* inverse) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < n) inverse[sortedPositions[j]] = rankOfRun[runOf[j]];
}

template <typename Id>
int64_t uniqueTyped(int device, const Id* ids, int64_t n, Id* uniqueIds, int32_t* inverse) {
  if (n == 0) return 0;
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = context.compute;
  Scratch positions(device, n * sizeof(int32_t)), sortedPositions(device, n * sizeof(int32_t));
  Scratch sortedIds(device, n * sizeof(Id)), heads(device, n * sizeof(int32_t)), runOf(device, n * sizeof(int32_t));
  launchKernel(iota, elementBlocks(n), kElementThreads, 0, stream, positions.as<int32_t>(), n);
  sortPairs(device, stream, ids, sortedIds.as<Id>(), positions.as<int32_t>(), sortedPositions.as<int32_t>(), n,
            int(sizeof(Id) * 8));
  launchKernel(markRunHeads<Id>, elementBlocks(n), kElementThreads, 0, stream, sortedIds.as<Id>(), n, heads.as<int32_t>());
  size_t scanBytes = 0;
  check(cub::DeviceScan::InclusiveSum(nullptr, scanBytes, heads.as<int32_t>(), runOf.as<int32_t>(), int(n), stream),
        "cub::DeviceScan::InclusiveSum");
  {
    Scratch temp(device, scanBytes);
    check(cub::DeviceScan::InclusiveSum(temp.as<void>(), scanBytes, heads.as<int32_t>(), runOf.as<int32_t>(), int(n),
                                        stream),
          "cub::DeviceScan::InclusiveSum");
  }
  int32_t runs = 0;
  check(cudaMemcpyAsync(&runs, runOf.as<int32_t>() + n - 1, sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "unique");
  // runOf counted heads from 1; make it 0-based.
  launchKernel(decrement, elementBlocks(n), kElementThreads, 0, stream, runOf.as<int32_t>(), n);
  Scratch firstPosition(device, runs * sizeof(int32_t)), runId(device, runs * sizeof(Id));
  launchKernel(describeRuns<Id>, elementBlocks(n), kElementThreads, 0, stream, sortedIds.as<Id>(), sortedPositions.as<int32_t>(), heads.as<int32_t>(),
                                                     runOf.as<int32_t>(), n, firstPosition.as<int32_t>(), runId.as<Id>());
  Scratch runIndex(device, runs * sizeof(int32_t)), sortedFirst(device, runs * sizeof(int32_t)),
      runOrder(device, runs * sizeof(int32_t)), rankOfRun(device, runs * sizeof(int32_t));
  launchKernel(iota, elementBlocks(runs), kElementThreads, 0, stream, runIndex.as<int32_t>(), runs);
  sortPairs(device, stream, firstPosition.as<int32_t>(), sortedFirst.as<int32_t>(), runIndex.as<int32_t>(),
            runOrder.as<int32_t>(), runs, 32);
  launchKernel(emitUnique<Id>, elementBlocks(runs), kElementThreads, 0, stream, runOrder.as<int32_t>(), runId.as<Id>(), runs,
                                                      rankOfRun.as<int32_t>(), uniqueIds);
  launchKernel(emitInverse, elementBlocks(n), kElementThreads, 0, stream, sortedPositions.as<int32_t>(), runOf.as<int32_t>(),
                                                    rankOfRun.as<int32_t>(), n, inverse);
  check(cudaGetLastError(), "unique kernels");
  check(cudaStreamSynchronize(stream), "unique");
  return runs;
}

template <typename Id>
__global__ void ownersOf(const Id* ids, int64_t n, int32_t worldSize, int32_t* owners, int32_t* sizes) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    owners[i] = ownerOf(ids[i], worldSize);
    atomicAdd(&sizes[owners[i]], 1);  // integer counts: order-independent
  }
}

template <typename Id>
__global__ void gatherByOwner(const Id* ids, const int32_t* permutation, int64_t n, Id* outIds, int32_t* restore) {
  const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < n) {
    outIds[k] = ids[permutation[k]];
    restore[permutation[k]] = int32_t(k);
  }
}

template <typename Id>
void partitionTyped(int device, const Id* ids, int64_t n, int32_t worldSize, Id* outIds, int32_t* sizes, int32_t* restore) {
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = context.compute;
  check(cudaMemsetAsync(sizes, 0, size_t(worldSize) * sizeof(int32_t), stream), "cudaMemsetAsync");
  if (n > 0) {
    Scratch owners(device, n * sizeof(int32_t)), sortedOwners(device, n * sizeof(int32_t));
    Scratch positions(device, n * sizeof(int32_t)), permutation(device, n * sizeof(int32_t));
    launchKernel(ownersOf<Id>, elementBlocks(n), kElementThreads, 0, stream, ids, n, worldSize, owners.as<int32_t>(), sizes);
    launchKernel(iota, elementBlocks(n), kElementThreads, 0, stream, positions.as<int32_t>(), n);
    int endBit = 1;
    while (endBit < 31 && (int64_t(1) << endBit) < worldSize) ++endBit;
    sortPairs(device, stream, owners.as<int32_t>(), sortedOwners.as<int32_t>(), positions.as<int32_t>(),
              permutation.as<int32_t>(), n, endBit);
    launchKernel(gatherByOwner<Id>, elementBlocks(n), kElementThreads, 0, stream, ids, permutation.as<int32_t>(), n, outIds, restore);
  }
  check(cudaGetLastError(), "partitionByOwner kernels");
  check(cudaStreamSynchronize(stream), "partitionByOwner");
}

}  // namespace

int64_t unique(int device, const void* ids, bool idsAreInt64, int64_t n, void* uniqueIds, int32_t* inverse) {
  if (idsAreInt64) return uniqueTyped(device, static_cast<const int64_t*>(ids), n, static_cast<int64_t*>(uniqueIds), inverse);
  return uniqueTyped(device, static_cast<const int32_t*>(ids), n, static_cast<int32_t*>(uniqueIds), inverse);
}

void partitionByOwner(int device, const void* ids, bool idsAreInt64, int64_t n, int32_t worldSize, void* outIds,
                      int32_t* sizes, int32_t* restore) {
  if (idsAreInt64) {
    partitionTyped(device, static_cast<const int64_t*>(ids), n, worldSize, static_cast<int64_t*>(outIds), sizes, restore);
  } else {
    partitionTyped(device, static_cast<const int32_t*>(ids), n, worldSize, static_cast<int32_t*>(outIds), sizes, restore);
  }
}

}  // namespace cuda
}  // namespace hb
