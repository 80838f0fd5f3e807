// A span of bytes on the host or on a CUDA device. Owned buffers free themselves;
// wrapped host buffers (a JS typed array viewed without a copy) call their release
// function, which the binding arranges to run on the JS thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "native/core/device.h"

namespace hb {

class Buffer {
 public:
  // Uninitialised memory; throws hb::Error if the allocation fails.
  static std::shared_ptr<Buffer> allocate(Device device, size_t bytes);
  // A host block of at least `bytes` from the blocks kept for reuse (its pages already
  // mapped), or null when none of that size is free: nothing is allocated.
  static std::shared_ptr<Buffer> reuseHost(size_t bytes);
  // Whether a host block of `bytes` would be kept in the block cache if it were freed now
  // (false where HB_HOST_CACHE_MB is 0 or the cache is full).
  static bool hostCacheHasRoom(size_t bytes);
  // Views `data` without copying; `release` runs when the last reference goes.
  static std::shared_ptr<Buffer> wrapHost(void* data, size_t bytes, std::function<void()> release);
  // Views memory on `device` (a dynamic table's rows on a GPU); `release` as for wrapHost.
  static std::shared_ptr<Buffer> wrap(void* data, size_t bytes, Device device, std::function<void()> release);

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool owned() const { return !release_; }

 private:
  Buffer(void* data, size_t bytes, Device device, std::function<void()> release)
      : data_(data), bytes_(bytes), device_(device), release_(std::move(release)) {}

  void* data_;
  size_t bytes_;
  Device device_;
  std::function<void()> release_;
};

// Frees the host blocks kept for reuse (see buffer.cc). The host executor calls it
// when it has been idle for a while.
void releaseIdleHostMemory();

// Copies between any two devices. Must run on the executor of the device doing the
// work (the CUDA side of a transfer), or on the JS thread for synchronous creation.
void copyBytes(void* dst, Device dstDevice, const void* src, Device srcDevice, size_t bytes);

// Maps the whole pages inside host memory [data, data + bytes) for writing in one call,
// before a loop writes all of it: cheaper than one page fault per 4 KiB (first writes to
// a fresh table run ~35% faster on a VM here). Pages already mapped cost nothing; a kernel
// without MADV_POPULATE_WRITE (Linux < 5.14) leaves the faults to the loop.
void populateForWrite(void* data, size_t bytes);

}  // namespace hb
