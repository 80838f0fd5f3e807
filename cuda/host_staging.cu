// Host-to-device copies in stream order that do not make the host wait. The runtime stages
// a copy from pageable memory through a page-locked buffer of its own, and first waits for
// the stream's earlier work ("a stream sync is performed before the copy is initiated"):
// each of a step's copies (a table's ids and row splits, a feed) drained the GPU and left
// it idle until the host queued more. Here the bytes are copied on the host into
// page-locked chunks of our own, and the device copies from there in the stream's order. A
// chunk takes copies one after another and records an event after each; it is written
// again only once that event has passed, so no copy the device has not made yet is
// overwritten.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"

namespace hb {
namespace cuda {

namespace {

constexpr size_t kChunkBytes = size_t(2) << 20;   // a chunk holds a step's small copies
constexpr size_t kMostStagedCopy = size_t(16) << 20;  // larger copies wait as before
constexpr size_t kMostPinnedBytes = size_t(64) << 20;  // page-locked memory per device
constexpr size_t kCopyAlignment = 256;

struct Chunk {
  char* host = nullptr;
  size_t bytes = 0;
  size_t used = 0;
  cudaEvent_t lastCopy = nullptr;  // recorded after the chunk's latest copy
};

struct Staging {
  std::mutex mutex;
  std::vector<Chunk> chunks;
  size_t current = 0;  // the chunk that takes the next copies (when there is one)
  size_t pinned = 0;   // bytes of every chunk
};

Staging& stagingOf(int device) {
  static std::mutex mutex;
  static auto* all = new std::map<int, Staging>();  // lives as long as the process
  std::lock_guard<std::mutex> lock(mutex);
  return (*all)[device];
}

// Whether the device has made every copy out of `chunk`.
bool copiedOut(const Chunk& chunk) {
  const cudaError_t state = cudaEventQuery(chunk.lastCopy);
  if (state == cudaErrorNotReady) return false;
  check(state, "cudaEventQuery (host staging)");
  return true;
}

void freeChunk(Chunk& chunk) {
  cudaEventDestroy(chunk.lastCopy);
  cudaFreeHost(chunk.host);
}

// A new chunk of at least `bytes`, or false where page-locked memory is refused.
bool addChunk(Staging& s, size_t bytes) {
  size_t size = kChunkBytes;
  while (size < bytes) size <<= 1;
  if (s.pinned + size > kMostPinnedBytes) return false;
  Chunk chunk;
  chunk.bytes = size;
  if (cudaHostAlloc(reinterpret_cast<void**>(&chunk.host), size, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (cudaEventCreateWithFlags(&chunk.lastCopy, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    cudaFreeHost(chunk.host);
    return false;
  }
  s.chunks.push_back(chunk);
  s.pinned += size;
  s.current = s.chunks.size() - 1;
  return true;
}

// Makes s.current a chunk with room for `bytes`: the current one, a chunk the device has
// copied out of (emptied), or a new one; after those, the stream is waited for and
// every chunk emptied. False when none can hold them.
bool roomFor(Staging& s, cudaStream_t stream, size_t bytes) {
  if (!s.chunks.empty() && s.chunks[s.current].used + bytes <= s.chunks[s.current].bytes) return true;
  for (size_t i = 0; i < s.chunks.size(); ++i) {
    Chunk& chunk = s.chunks[i];
    if (chunk.bytes >= bytes && (chunk.used == 0 || copiedOut(chunk))) {
      chunk.used = 0;
      s.current = i;
      return true;
    }
  }
  if (addChunk(s, bytes)) return true;
  check(cudaStreamSynchronize(stream), "host staging");
  for (Chunk& chunk : s.chunks) chunk.used = 0;
  for (size_t i = 0; i < s.chunks.size(); ++i) {
    if (s.chunks[i].bytes >= bytes) {
      s.current = i;
      return true;
    }
  }
  // Every chunk is smaller: they make way for one that is not.
  for (Chunk& chunk : s.chunks) freeChunk(chunk);
  s.chunks.clear();
  s.pinned = 0;
  return addChunk(s, bytes);
}

}  // namespace

bool copyToDeviceInOrder(int device, cudaStream_t stream, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return true;
  if (bytes > kMostStagedCopy) return false;
  Staging& s = stagingOf(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  const size_t slot = (bytes + kCopyAlignment - 1) / kCopyAlignment * kCopyAlignment;
  if (!roomFor(s, stream, slot)) return false;
  Chunk& chunk = s.chunks[s.current];
  char* staged = chunk.host + chunk.used;
  std::memcpy(staged, src, bytes);
  check(cudaMemcpyAsync(dst, staged, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (host staging)");
  check(cudaEventRecord(chunk.lastCopy, stream), "cudaEventRecord (host staging)");
  chunk.used += slot;
  return true;
}

void releaseHostStaging(int device) noexcept {
  Staging& s = stagingOf(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  for (Chunk& chunk : s.chunks) {
    // Freed only once copied out (the caller waited for the stream; one not yet, kept).
    if (chunk.used != 0 && cudaEventQuery(chunk.lastCopy) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
  }
  for (Chunk& chunk : s.chunks) freeChunk(chunk);
  s.chunks.clear();
  s.pinned = 0;
  s.current = 0;
}

}  // namespace cuda
}  // namespace hb
