#include "native/core/buffer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <string>

#include <sys/mman.h>
#include <unistd.h>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/cuda_backend.h"
#include "native/core/env_switch.h"
#include "native/core/executor.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"

namespace hb {

namespace {

constexpr size_t kHostAlignment = 64;

// Host blocks from this size on are mapped on their own, 2 MiB-aligned, and asked to be
// backed by 2 MiB pages (madvise(MADV_HUGEPAGE), which Linux's transparent huge pages
// honour in their 'madvise' and 'always' modes). An embedding table is read and written at
// random rows: with 4 KiB pages nearly every row costs a TLB miss and a page walk. On a
// 2-vCPU EPYC VM, 1M x 64 table: one-id lookups of 16384 bags 309 -> 274 us (dim 16: 125
// -> 102 us), medians of five alternating runs. Their own mapping, not malloc's: glibc
// serves blocks up to 32 MiB from its heap once it has seen such blocks freed, and advice
// given there would outlive the block, on whatever the heap puts in its place.
// HB_HUGE_PAGES=0 keeps them in 4 KiB pages, in 'always' mode too (MADV_NOHUGEPAGE): for
// machines where finding 2 MiB pages stalls more than the TLB misses cost.
constexpr size_t kHugePageBytes = size_t(2) << 20;

bool hugePagesWanted() {
  static const bool wanted = switchedOn("HB_HUGE_PAGES");
  return wanted;
}

// `size` bytes (a hostBlockSize) of uninitialised host memory, or null when out of memory;
// `huge`: whether a block of 2 MiB or more asks for 2 MiB pages.
void* allocateHostBlock(size_t size, bool huge = hugePagesWanted()) {
#if defined(__linux__)
  if (size >= kHugePageBytes) {
    // Sizes this large are powers of two: a 2 MiB-aligned span of `size` inside a
    // mapping one huge page longer, the ends unmapped.
    const size_t mapped = size + kHugePageBytes;
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    if (aligned > begin) ::munmap(p, aligned - begin);
    const uintptr_t end = begin + mapped;
    if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
    // A hint: where it is refused, the pages are as before.
    (void)::madvise(reinterpret_cast<void*>(aligned), size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
    return reinterpret_cast<void*>(aligned);
  }
#endif
  return std::aligned_alloc(kHostAlignment, size);
}

// Host blocks from this size up to a huge page are cut from 2 MiB-aligned mappings: one
// fault maps a whole 2 MiB page, where a block of 4 KiB pages faults once per page. Read
// results in a loop take new blocks until V8 collects the old arrays (their blocks then
// come back to the cache), so a 256 KiB result paid 64 faults: on a 2-vCPU EPYC VM, 92 us
// to touch 256 KiB of new 4 KiB pages against 53 us for a whole 2 MiB page; 20-call loops
// of 4096 one-id lookups of dim 16 read into new arrays, 121-171 -> 9-18 us per read
// (medians of 5 runs, one at 71; dim 64: 372-416 -> 118-133 us, one at 1622). The pieces
// not handed out wait in the block cache; each is unmapped on its own when freed (Linux
// splits the huge page). Whether the mapping asks for a 2 MiB page: HugePageChoice.
// HB_HUGE_PAGES=0 cuts them from 4 KiB pages.
constexpr size_t kCarvedBlockBytes = size_t(64) << 10;

bool carvedSize(size_t size) {
#if defined(__linux__)
  return size >= kCarvedBlockBytes && size < kHugePageBytes;
#else
  (void)size;
  return false;
#endif
}

void freeHostBlock(void* block, size_t size) {
#if defined(__linux__)
  if (size >= kHugePageBytes || carvedSize(size)) {
    ::munmap(block, size);
    return;
  }
#endif
  std::free(block);
}

// Large host blocks are kept for reuse instead of being returned to the OS: every
// training step allocates and frees buffers of similar sizes, and fresh pages cost a
// fault each (a few microseconds per 4 KiB on a VM), which dominated sparse steps.
// Blocks are rounded up to a power of two and cached up to HB_HOST_CACHE_MB in total
// (default: 1024, or an eighth of the machine's memory when that is less). The cache is
// emptied when the host executor has been idle for a while (releaseIdleHostMemory), so
// a process that has finished its work does not keep it.
class HostBlockCache {
 public:
  // From 4 KiB: a lookup's ids and row splits (a 4096-bag batch's are 32 and 16 KiB) are
  // copied into new blocks on every call, and glibc hands blocks that small back to the
  // OS when the heap's top grows, so each call faulted its pages in again (a 4096-bag
  // one-id lookup of dim 16 on a 2-vCPU EPYC VM: 59 -> 37 us once they were kept). The
  // power-of-two rounding costs up to 2x for blocks up to a few MiB, which the reuse repays.
  static constexpr size_t kMinCached = size_t(4) << 10;

  static size_t roundUp(size_t bytes) {
    size_t size = kMinCached;
    while (size < bytes) size <<= 1;
    return size;
  }

  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_.find(size);
    if (found == free_.end() || found->second.empty()) return nullptr;
    void* block = found->second.back();
    found->second.pop_back();
    cached_ -= size;
    return block;
  }

  void clear() {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [size, list] : blocks) {
      for (void* block : list) freeHostBlock(block, size);
    }
  }

  // Whether `bytes` more would fit now.
  bool hasRoom(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_ + bytes <= limit_;
  }

  // False when the cache is full: the caller frees the block.
  bool give(void* block, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + size > limit_) return false;
    free_[size].push_back(block);
    cached_ += size;
    return true;
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
  size_t limit_ = [] {
    const char* env = std::getenv("HB_HOST_CACHE_MB");
    if (env != nullptr) {
      const long mb = std::atol(env);
      return size_t(mb > 0 ? mb : 0) << 20;
    }
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long pageSize = ::sysconf(_SC_PAGESIZE);
    const size_t eighth = pages > 0 && pageSize > 0 ? size_t(pages) * size_t(pageSize) / 8 : SIZE_MAX;
    return std::min<size_t>(size_t(1024) << 20, eighth);
  }();
};

HostBlockCache& hostCache() {
  static auto* cache = new HostBlockCache();  // outlives every buffer
  return *cache;
}

size_t hostBlockSize(size_t bytes) {
  if (bytes >= HostBlockCache::kMinCached) return HostBlockCache::roundUp(bytes);
  // aligned_alloc wants a multiple of the alignment, and a non-null pointer is handy
  // for empty tensors too.
  return std::max(kHostAlignment, (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment);
}

// Whether a new mapping for blocks of at most 16 MiB (a 2 MiB one that blocks are cut
// from, or a block of 2-16 MiB of its own) asks for 2 MiB pages: only while such pages
// come cheap. A 2 MiB page's first touch is one fault (50-150 us on a 2-vCPU EPYC VM),
// but where the machine must first find or back the page it took 2-60 ms (a VM's host
// backing memory it had not yet given the guest; four worker threads whose results V8
// had not yet collected ran at half the speed they had with 4 KiB pages, whose 512 faults
// cost about 0.7 ms). So each such mapping's page is touched here and timed: after one
// slower than 0.5 ms the next 16 mappings take 4 KiB pages, twice as many after each slow
// one in a row (up to 1024), and 16 again once a 2 MiB page has come fast.
class HugePageChoice {
 public:
  bool huge() {
    if (!hugePagesWanted()) return false;
    int left = plainLeft_.load(std::memory_order_relaxed);
    while (left > 0 && !plainLeft_.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
    }
    return left <= 0;
  }

  // Touches the (first) 2 MiB page at `mapping` and notes what that cost.
  void touch(void* mapping) {
    const auto start = std::chrono::steady_clock::now();
    populateForWrite(mapping, kHugePageBytes);
    const auto took = std::chrono::steady_clock::now() - start;
    if (took <= std::chrono::microseconds(kSlowHugePageUs)) {
      plainAfterSlow_.store(kFirstPlainRun, std::memory_order_relaxed);
      return;
    }
    const int run = plainAfterSlow_.load(std::memory_order_relaxed);
    plainLeft_.store(run, std::memory_order_relaxed);
    plainAfterSlow_.store(std::min(run * 2, kLongestPlainRun), std::memory_order_relaxed);
  }

 private:
  static constexpr int64_t kSlowHugePageUs = 500;
  static constexpr int kFirstPlainRun = 16;
  static constexpr int kLongestPlainRun = 1024;
  std::atomic<int> plainLeft_{0};
  std::atomic<int> plainAfterSlow_{kFirstPlainRun};
};

HugePageChoice& hugePageChoice() {
  static auto* choice = new HugePageChoice();
  return *choice;
}

// Host blocks from 2 MiB up to this size ask for 2 MiB pages only while such pages come
// fast (HugePageChoice), as carved blocks do: they are a call's results and scratch, read
// and written in order, which 2 MiB pages only spare faults, and a block this small is
// 4096 pages of 4 KiB, about what a current core's second-level TLB covers. On this VM a
// fresh 2 MiB result in 2 MiB pages took about 5 ms when the host had not backed the
// memory yet, against 0.5 ms in 4 KiB pages (a lookup loop read with data({ dispose: true }),
// whose results are new blocks until V8 collects the arrays). Larger blocks are tables,
// read at random rows, where a TLB miss per row costs more: they always ask.
constexpr size_t kLargestTimedHugeBlockBytes = size_t(16) << 20;

// A block of `size` (2 MiB to kLargestTimedHugeBlockBytes) in a mapping of its own, in
// 2 MiB pages while they come fast; null when out of memory. Carved blocks' mappings too.
void* mapTimedHugeBlock(size_t size) {
  const bool huge = hugePageChoice().huge();
  void* block = allocateHostBlock(size, huge);
  if (block != nullptr && huge) hugePageChoice().touch(block);
  return block;
}

// A block of `size` (a carvedSize) cut from a new 2 MiB mapping, the mapping's other pieces
// given to the cache (or unmapped where it is full); null when out of memory.
void* carveHostBlocks(size_t size) {
  if (!hostCache().hasRoom(kHugePageBytes - size)) {
    // No room for the other pieces (HB_HOST_CACHE_MB=0, or a full cache): cutting a page
    // would unmap them one by one at once (a 64 KiB read: 16 -> 104 us). A mapping of
    // its own, which freeHostBlock unmaps as it would a piece.
    void* block = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return block == MAP_FAILED ? nullptr : block;
  }
  auto* mapping = static_cast<uint8_t*>(mapTimedHugeBlock(kHugePageBytes));
  if (mapping == nullptr) return nullptr;
  bool cached = false;
  for (size_t offset = size; offset < kHugePageBytes; offset += size) {
    if (hostCache().give(mapping + offset, size)) {
      cached = true;
    } else {
      freeHostBlock(mapping + offset, size);
    }
  }
  if (cached) noteHostBlockCached();
  return mapping;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(Device device, size_t bytes) {
  if (device.isCuda()) {
    void* data = cuda::allocate(device.index, bytes);
    return std::shared_ptr<Buffer>(new Buffer(data, bytes, device, nullptr));
  }
  HB_CHECK(bytes <= (size_t(1) << 48), "cannot allocate ", bytes, " bytes of host memory");
  if (std::shared_ptr<Buffer> reused = reuseHost(bytes)) return reused;
  const size_t size = hostBlockSize(bytes);
  void* data = carvedSize(size)                                                  ? carveHostBlocks(size)
               : size >= kHugePageBytes && size <= kLargestTimedHugeBlockBytes ? mapTimedHugeBlock(size)
                                                                                : allocateHostBlock(size);
  HB_CHECK(data != nullptr, "out of host memory allocating ", bytes, " bytes");
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, device, nullptr));
}

std::shared_ptr<Buffer> Buffer::reuseHost(size_t bytes) {
  const size_t rounded = hostBlockSize(bytes);
  void* data = rounded >= HostBlockCache::kMinCached ? hostCache().take(rounded) : nullptr;
  if (data == nullptr) return nullptr;
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, Device::cpu(), nullptr));
}

bool Buffer::hostCacheHasRoom(size_t bytes) {
  const size_t rounded = hostBlockSize(bytes);
  return rounded >= HostBlockCache::kMinCached && hostCache().hasRoom(rounded);
}

void releaseIdleHostMemory() { hostCache().clear(); }

std::shared_ptr<Buffer> Buffer::wrapHost(void* data, size_t bytes, std::function<void()> release) {
  return wrap(data, bytes, Device::cpu(), std::move(release));
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, size_t bytes, Device device, std::function<void()> release) {
  if (!release) release = [] {};
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, device, std::move(release)));
}

Buffer::~Buffer() {
  if (release_) {
    release_();
  } else if (device_.isCuda()) {
    cuda::release(device_.index, data_);
  } else {
    const size_t rounded = hostBlockSize(bytes_);
    if (rounded >= HostBlockCache::kMinCached && hostCache().give(data_, rounded)) {
      noteHostBlockCached();
    } else {
      freeHostBlock(data_, rounded);
    }
  }
}

void copyBytes(void* dst, Device dstDevice, const void* src, Device srcDevice, size_t bytes) {
  if (bytes == 0) return;
  if (dstDevice.isCuda() || srcDevice.isCuda()) {
    if (dstDevice.isCuda() && srcDevice.isCuda()) {
      HB_CHECK(dstDevice == srcDevice, "copies between two CUDA devices are not supported yet (",
               srcDevice.str(), " -> ", dstDevice.str(), ")");
      cuda::copyDeviceToDevice(dstDevice.index, dst, src, bytes);
    } else if (dstDevice.isCuda()) {
      cuda::copyToDevice(dstDevice.index, dst, src, bytes);
    } else {
      cuda::copyToHost(srcDevice.index, dst, src, bytes);
    }
    return;
  }
  // Large host copies are split over the pool: one core rarely saturates memory, and a
  // result that the pool's threads wrote sits in their caches. Pieces of 128 KiB, so a
  // read of 256 KiB (4096 one-id bags of dim 16) takes both threads: on a 2-vCPU Emerald
  // Rapids Xeon VM, lookup results read into an array, 256 KiB 16-17 -> 8 us, 1 MiB 67-78
  // -> 34-40 us; into a new array 31-38 -> 21 us and 100-126 -> 59-72 us; 2-16 MiB
  // unchanged (1 MiB pieces before). A copy never waits for the pool: where a kernel on
  // another thread has it (the JS thread copying a run's feeds while a table's fill runs:
  // 500 ms -> 0.03 ms for 512 KiB in a probe), this thread copies alone, as a copy of one
  // piece always did.
  constexpr size_t kChunk = size_t(1) << 17;
  const int64_t chunks = int64_t((bytes + kChunk - 1) / kChunk);
  parallelForIfFree(chunks, 1, [&](int64_t first, int64_t last) {
    const size_t begin = size_t(first) * kChunk;
    const size_t end = std::min(bytes, size_t(last) * kChunk);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  });
}

void populateForWrite(void* data, size_t bytes) {
#if defined(__linux__)
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack the name
#endif
  static const uintptr_t pageSize = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + pageSize - 1) / pageSize * pageSize;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / pageSize * pageSize;
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace hb
