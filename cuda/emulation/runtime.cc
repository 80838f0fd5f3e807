// The CUDA runtime calls of cuda/emulation/include/cuda_runtime.h over host memory: one
// device whose memory is the process's heap, streams that queue their work until the host
// waits for them (runtime_state.h's enqueue), and errors as the runtime reports them. Device memory
// is tracked allocation by allocation, so a copy or memset that runs past an allocation,
// a free of a pointer that is not one, and a double free are errors here as on a GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda/emulation/emulation_options.h"
#include "cuda/emulation/runtime_state.h"
#include "native/core/thread_pool.h"

struct CUstream_st {
  unsigned flags = 0;
  std::recursive_mutex turn;
  std::string failure;  // a kernel's failure, reported by the next synchronisation of this stream
  std::mutex queueMutex;
  std::deque<std::function<void()>> queue;  // work issued and not run yet, in issue order
};
struct CUevent_st {
  unsigned flags = 0;
  cudaStream_t stream = nullptr;     // where it was last recorded
  std::atomic<uint64_t> recorded{0};  // records issued
  std::atomic<uint64_t> reached{0};   // records its stream has run
  std::atomic<uint64_t> toldNotReady{0};  // the record cudaEventQuery last said was not ready
};

namespace hb {
namespace cuda_emulation {

namespace {

constexpr int kDevices = 1;
constexpr size_t kAlignment = 256;  // cudaMalloc's guarantee

size_t deviceCapacity() {
  static const size_t capacity = [] {
    const char* text = std::getenv("HB_CUDA_EMULATE_MEMORY_MIB");
    const unsigned long long mib = text ? std::strtoull(text, nullptr, 10) : 0;
    return size_t(mib > 0 ? mib : 16384) << 20;
  }();
  return capacity;
}

struct Mapping {
  size_t bytes;
  CUmemGenericAllocationHandle handle;
};
struct PhysicalMemory {
  size_t bytes;
  int mappings = 0;
  bool released = false;
};

struct Memory {
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations;  // start -> bytes
  // Virtual memory management: reserved ranges (start -> bytes), the memory made by
  // cuMemCreate, and what is mapped where. A mapping is also in `allocations`, merged
  // with the mapping that ends where it starts, so copies may span mappings as on a GPU.
  std::map<uintptr_t, size_t> reservations;
  std::map<CUmemGenericAllocationHandle, PhysicalMemory> physical;
  std::map<uintptr_t, Mapping> mappings;
  CUmemGenericAllocationHandle nextHandle = 1;
  size_t used = 0;
  std::map<uintptr_t, size_t> pinned;  // page-locked host memory (cudaHostAlloc): start -> bytes
  std::set<CUstream_st*> streams;
  std::set<const CUevent_st*> events;
  std::string nullStreamFailure;  // as CUstream_st::failure, for the null stream
};

Memory& memory() {
  static Memory* state = new Memory();  // lives as long as the process
  return *state;
}

std::atomic<uint64_t> hostWaits{0};

thread_local int currentDevice = 0;
thread_local cudaError_t lastError = cudaSuccess;
thread_local std::string lastMessage;  // what cudaGetErrorString says for lastMessageCode
thread_local cudaError_t lastMessageCode = cudaSuccess;

// Records an error for cudaGetLastError and its message for cudaGetErrorString (an empty
// message: the generic text for the code).
cudaError_t remember(cudaError_t error, const std::string& message = std::string()) {
  if (error == cudaSuccess) return error;
  lastError = error;
  lastMessage = message;
  lastMessageCode = error;
  return error;
}

std::string& failureOf(Memory& m, cudaStream_t stream) {
  return stream == nullptr ? m.nullStreamFailure : stream->failure;
}

// The failure of a kernel that ran on `stream` since its last synchronisation, or on any
// stream when `everyStream` (cudaDeviceSynchronize, the synchronous cudaMemcpy).
cudaError_t takeKernelFailure(cudaStream_t stream, bool everyStream = false) {
  std::string failure;
  {
    Memory& m = memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    if (everyStream) {
      for (CUstream_st* s : m.streams) {
        std::string& f = s->failure;
        if (failure.empty() && !f.empty()) failure = f;
        f.clear();
      }
    }
    std::string& own = failureOf(m, stream);
    if (failure.empty()) failure = own;
    own.clear();
  }
  return failure.empty() ? cudaSuccess : remember(cudaErrorLaunchFailure, failure);
}

bool insideAllocation(const Memory& m, uintptr_t start, size_t bytes) {
  auto after = m.allocations.upper_bound(start);
  if (after == m.allocations.begin()) return false;
  const auto& [base, size] = *std::prev(after);
  return start >= base && start - base <= size && bytes <= size - (start - base);
}

bool deviceRange(const void* pointer, size_t bytes) {
  if (bytes == 0) return true;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  return insideAllocation(m, reinterpret_cast<uintptr_t>(pointer), bytes);
}

cudaError_t invalid(const std::string& message) { return remember(cudaErrorInvalidValue, message); }

cudaError_t allocate(void** pointer, size_t bytes) {
  if (pointer == nullptr) return invalid("cudaMalloc: null output pointer");
  *pointer = nullptr;
  const size_t size = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  Memory& m = memory();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (m.used + size > deviceCapacity()) return remember(cudaErrorMemoryAllocation);
    m.used += size;
  }
  void* block = std::aligned_alloc(kAlignment, size);
  if (block == nullptr) {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.used -= size;
    return remember(cudaErrorMemoryAllocation);
  }
  // Fresh device memory holds whatever was there; poisoned, a read before the first
  // write gives NaN / -1 instead of a plausible zero.
  if (emulationOptions().poison) std::memset(block, 0xff, size);
  std::lock_guard<std::mutex> lock(m.mutex);
  m.allocations.emplace(reinterpret_cast<uintptr_t>(block), bytes);
  *pointer = block;
  return cudaSuccess;
}

// `remembering`: a bad pointer is this thread's last error (a call's); else the caller
// reports it (a queued free, run by whichever thread waits).
cudaError_t release(void* pointer, bool remembering = true) {
  if (pointer == nullptr) return cudaSuccess;
  Memory& m = memory();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto found = m.allocations.find(reinterpret_cast<uintptr_t>(pointer));
    if (found == m.allocations.end()) {
      if (!remembering) return cudaErrorInvalidDevicePointer;
      return remember(cudaErrorInvalidDevicePointer,
                      "cudaFree of a pointer that is not a live device allocation (a double free?)");
    }
    m.used -= (std::max<size_t>(found->second, 1) + kAlignment - 1) / kAlignment * kAlignment;
    m.allocations.erase(found);
  }
  std::free(pointer);
  return cudaSuccess;
}

bool pinnedRange(const void* pointer, size_t bytes) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  auto after = m.pinned.upper_bound(start);
  if (after == m.pinned.begin()) return false;
  const auto& [base, size] = *std::prev(after);
  return start >= base && start - base <= size && bytes <= size - (start - base);
}

// cudaMemcpyDefault as the direction the pointers say (device memory or not).
cudaMemcpyKind directionOf(const void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDefault) return kind;
  const bool dstDevice = deviceRange(dst, bytes), srcDevice = deviceRange(src, bytes);
  return dstDevice ? (srcDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                   : (srcDevice ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

cudaError_t checkCopy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return invalid("cudaMemcpy with a null pointer");
  const bool dstDevice = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool srcDevice = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return invalid("cudaMemcpy: unknown kind");
  if (dstDevice && !deviceRange(dst, bytes)) {
    return invalid("cudaMemcpy: the destination range [" + std::to_string(bytes) + " bytes] is not inside one device allocation");
  }
  if (srcDevice && !deviceRange(src, bytes)) {
    return invalid("cudaMemcpy: the source range [" + std::to_string(bytes) + " bytes] is not inside one device allocation");
  }
  return cudaSuccess;
}

cudaError_t copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (cudaError_t bad = checkCopy(dst, src, bytes, kind)) return bad;
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t checkStream(cudaStream_t stream) {
  if (!isStream(stream)) {
    return remember(cudaErrorInvalidResourceHandle, "a stream that does not exist (destroyed, or never created)");
  }
  return cudaSuccess;
}

}  // namespace

void setLaunchError(cudaError_t error, const std::string& message) { remember(error, message); }

namespace {

constexpr size_t kMostQueued = 1024;  // about what a GPU's launch queue holds

void drainStream(cudaStream_t stream) {
  StreamTurn inOrder(stream);
  for (;;) {
    std::function<void()> work;
    {
      std::lock_guard<std::mutex> lock(stream->queueMutex);
      if (stream->queue.empty()) return;
      work = std::move(stream->queue.front());
      stream->queue.pop_front();
    }
    work();
  }
}

}  // namespace

void enqueue(cudaStream_t stream, std::function<void()> work) {
  if (stream == nullptr) {
    StreamTurn inOrder(stream);
    work();
    return;
  }
  if (!emulationOptions().deferred) {
    StreamTurn inOrder(stream);
    drainStream(stream);  // work queued before deferral was switched off comes first
    work();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(stream->queueMutex);
    stream->queue.push_back(std::move(work));
    if (stream->queue.size() < kMostQueued) return;
  }
  // A full queue blocks the host until the device catches up, as a GPU's launch queue
  // does: here, by running it (not counted as a wait: nothing asked for it).
  drainStream(stream);
}

void drain(cudaStream_t stream) {
  if (stream != nullptr) {
    drainStream(stream);
    return;
  }
  std::vector<CUstream_st*> all;
  {
    Memory& m = memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    all.assign(m.streams.begin(), m.streams.end());
  }
  for (CUstream_st* s : all) drainStream(s);
}

uint64_t hostWaitCount() { return hostWaits.load(); }

void reportKernelFailure(cudaStream_t stream, const std::string& message) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  std::string& failure = failureOf(m, stream);
  if (failure.empty()) failure = message;
}

bool isStream(cudaStream_t stream) {
  if (stream == nullptr) return true;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.streams.count(stream) != 0;
}

bool isDeviceRange(const void* pointer, size_t bytes) { return deviceRange(pointer, bytes); }

namespace {
std::recursive_mutex& turnOf(cudaStream_t stream) {
  static std::recursive_mutex nullStream;
  return stream == nullptr ? nullStream : stream->turn;
}
}  // namespace

StreamTurn::StreamTurn(cudaStream_t stream) : mutex_(&turnOf(stream)) { mutex_->lock(); }
StreamTurn::~StreamTurn() { mutex_->unlock(); }

}  // namespace cuda_emulation
}  // namespace hb

using namespace hb::cuda_emulation;

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return remember(cudaErrorInvalidValue);
  *count = kDevices;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
  if (properties == nullptr) return remember(cudaErrorInvalidValue);
  if (device < 0 || device >= kDevices) return remember(cudaErrorInvalidDevice);
  cudaDeviceProp p{};
  std::snprintf(p.name, sizeof p.name, "hb-ts emulated CUDA device (kernels on %d host threads)", hb::threadPoolSize());
  p.totalGlobalMem = deviceCapacity();
  p.sharedMemPerBlock = 48 * 1024;
  p.warpSize = 32;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.multiProcessorCount = hb::threadPoolSize();
  p.major = 0;
  p.minor = 0;
  *properties = p;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  if (value == nullptr) return remember(cudaErrorInvalidValue);
  if (device < 0 || device >= kDevices) return remember(cudaErrorInvalidDevice);
  switch (attribute) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *value = 32; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = hb::threadPoolSize(); return cudaSuccess;
    case cudaDevAttrMemoryPoolsSupported: *value = 1; return cudaSuccess;
  }
  return remember(cudaErrorInvalidValue);
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices) return remember(cudaErrorInvalidDevice);
  currentDevice = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return remember(cudaErrorInvalidValue);
  *device = currentDevice;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* freeBytes, size_t* totalBytes) {
  if (freeBytes == nullptr || totalBytes == nullptr) return remember(cudaErrorInvalidValue);
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  *totalBytes = deviceCapacity();
  *freeBytes = deviceCapacity() - m.used;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  ++hostWaits;
  drain(nullptr);
  return takeKernelFailure(nullptr, true);
}

// A refused launch or call on this thread; a kernel's failure while running is its
// stream's, reported by that stream's next synchronisation.
cudaError_t cudaGetLastError() {
  const cudaError_t error = lastError;
  lastError = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError() { return lastError; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
  }
  return "cudaErrorUnknown";
}

// The emulation knows more than the code: the message of the last error on this thread.
const char* cudaGetErrorString(cudaError_t error) {
  if (error == cudaSuccess) return "no error";
  if (error == lastMessageCode && !lastMessage.empty()) return lastMessage.c_str();
  if (error == cudaErrorMemoryAllocation) return "out of memory (emulated device; HB_CUDA_EMULATE_MEMORY_MIB sets its size)";
  return cudaGetErrorName(error);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr) return remember(cudaErrorInvalidValue);
  *stream = new CUstream_st();
  (*stream)->flags = flags;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.streams.insert(*stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr) return remember(cudaErrorInvalidResourceHandle);
  if (cudaError_t bad = checkStream(stream)) return bad;
  drain(stream);  // the project never destroys a stream in use
  {
    Memory& m = memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    if (m.streams.erase(stream) == 0) return remember(cudaErrorInvalidResourceHandle);
  }
  // Kept, not deleted: drain(nullptr) on another thread may hold it in its list of every
  // stream (the project destroys streams only in self-tests: a few bytes each).
  static std::mutex retiredMutex;
  static auto* retired = new std::vector<std::unique_ptr<CUstream_st>>();
  std::lock_guard<std::mutex> lock(retiredMutex);
  retired->emplace_back(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  ++hostWaits;
  drain(stream);
  return takeKernelFailure(stream);
}

// The emulated device finishes a stream's work when asked whether it has (code may poll).
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (stream != nullptr) drain(stream);
  return takeKernelFailure(stream);
}

namespace {
bool isEvent(cudaEvent_t event) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  return m.events.count(event) != 0;
}
}  // namespace

// The stream runs the event's stream's work first (all of it: a wait that comes later than
// a GPU's, which keeps the order).
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (!isEvent(event)) return remember(cudaErrorInvalidResourceHandle);
  if (event->stream != nullptr && event->stream != stream) drain(event->stream);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr) return remember(cudaErrorInvalidValue);
  *event = new CUevent_st{flags};
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.events.insert(*event);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!isEvent(event)) return remember(cudaErrorInvalidResourceHandle);
  if (event->stream != nullptr) drain(event->stream);  // its queued record refers to it
  {
    Memory& m = memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    if (m.events.erase(event) == 0) return remember(cudaErrorInvalidResourceHandle);
  }
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (!isEvent(event)) return remember(cudaErrorInvalidResourceHandle);
  // A record on another stream than the last one: that one's records come first.
  if (event->stream != nullptr && event->stream != stream) drain(event->stream);
  event->stream = stream;
  const uint64_t record = event->recorded.fetch_add(1) + 1;
  enqueue(stream, [event, record] {
    uint64_t reached = event->reached.load();
    while (reached < record && !event->reached.compare_exchange_weak(reached, record)) {
    }
  });
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!isEvent(event)) return remember(cudaErrorInvalidResourceHandle);
  ++hostWaits;
  if (event->stream == nullptr) return cudaSuccess;
  drain(event->stream);
  return takeKernelFailure(event->stream);
}

// Not ready the first time a record is asked about before its stream ran, so code meets
// both answers; asked again, the device has caught up (its stream runs), so a loop that
// polls ends, as on a GPU.
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!isEvent(event)) return remember(cudaErrorInvalidResourceHandle);
  const uint64_t record = event->recorded.load();
  if (event->reached.load() >= record) return cudaSuccess;
  if (event->toldNotReady.exchange(record) != record) return cudaErrorNotReady;
  if (event->stream != nullptr) drain(event->stream);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** pointer, size_t bytes) { return allocate(pointer, bytes); }
// cudaFree waits for the device first, as the runtime's does.
cudaError_t cudaFree(void* pointer) {
  ++hostWaits;
  drain(nullptr);
  return release(pointer);
}

cudaError_t cudaHostAlloc(void** pointer, size_t bytes, unsigned) {
  if (pointer == nullptr) return invalid("cudaHostAlloc: null output pointer");
  void* block = std::aligned_alloc(kAlignment, (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment);
  if (block == nullptr) return remember(cudaErrorMemoryAllocation);
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.pinned.emplace(reinterpret_cast<uintptr_t>(block), bytes);
  *pointer = block;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) { return cudaHostAlloc(pointer, bytes, 0); }

// As cudaFree: waits for the device first.
cudaError_t cudaFreeHost(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  ++hostWaits;
  drain(nullptr);
  {
    Memory& m = memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    if (m.pinned.erase(reinterpret_cast<uintptr_t>(pointer)) == 0) {
      return remember(cudaErrorInvalidValue, "cudaFreeHost of a pointer that cudaHostAlloc did not return (a double free?)");
    }
  }
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** pointer, size_t bytes, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  return allocate(pointer, bytes);
}

cudaError_t cudaFreeAsync(void* pointer, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (pointer == nullptr) return cudaSuccess;
  if (!deviceRange(pointer, 1)) {
    return remember(cudaErrorInvalidDevicePointer, "cudaFree of a pointer that is not a live device allocation (a double free?)");
  }
  enqueue(stream, [pointer, stream] {
    if (release(pointer, false) != cudaSuccess) reportKernelFailure(stream, "cudaFreeAsync of a pointer freed before it ran (a double free?)");
  });
  return cudaSuccess;
}

// The emulated device frees at once and keeps no pool: its pool calls only check their
// arguments.
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (!pool || device < 0 || device >= count) return remember(cudaErrorInvalidValue);
  static int handle = 0;
  *pool = reinterpret_cast<cudaMemPool_t>(&handle);
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr, void* value) {
  return pool && value ? cudaSuccess : remember(cudaErrorInvalidValue);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t) { return pool ? cudaSuccess : remember(cudaErrorInvalidValue); }

// On the legacy null stream, which does not wait for the project's (non-blocking) streams.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  ++hostWaits;
  if (cudaError_t failed = takeKernelFailure(nullptr, true)) return failed;
  return copy(dst, src, bytes, directionOf(dst, src, bytes, kind));
}

namespace {

// Issues an asynchronous copy of `height` rows of `width` bytes (checked by the caller). As
// the runtime's, one with a pageable host side waits for its stream and is done when the
// call returns (the runtime stages it through its own page-locked buffer); others are
// queued, and check their ranges again when they run: memory freed (or unpinned) in
// between is a use after free on a GPU.
cudaError_t issueCopy(cudaStream_t stream, void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                      size_t height, cudaMemcpyKind kind, const char* call) {
  const bool dstDevice = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool srcDevice = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const size_t dstSpan = dstPitch * (height - 1) + width, srcSpan = srcPitch * (height - 1) + width;
  auto rows = [=] {
    for (size_t row = 0; row < height; ++row) {
      std::memmove(static_cast<char*>(dst) + row * dstPitch, static_cast<const char*>(src) + row * srcPitch, width);
    }
  };
  const bool atOnce = kind == cudaMemcpyHostToHost || (!dstDevice && !pinnedRange(dst, dstSpan)) ||
                      (!srcDevice && !pinnedRange(src, srcSpan));
  if (atOnce) {
    if (kind != cudaMemcpyHostToHost) {
      ++hostWaits;
      drain(stream);
    }
    rows();
    return cudaSuccess;
  }
  enqueue(stream, [=] {
    const bool dstLive = dstDevice ? deviceRange(dst, dstSpan) : pinnedRange(dst, dstSpan);
    const bool srcLive = srcDevice ? deviceRange(src, srcSpan) : pinnedRange(src, srcSpan);
    if (!dstLive || !srcLive) {
      reportKernelFailure(stream, std::string(call) + ": the " + (dstLive ? "source" : "destination") +
                                      " was freed before the copy ran (stream order)");
      return;
    }
    rows();
  });
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  kind = directionOf(dst, src, bytes, kind);
  if (cudaError_t bad = checkCopy(dst, src, bytes, kind)) return bad;
  if (bytes == 0) return cudaSuccess;
  return issueCopy(stream, dst, bytes, src, bytes, bytes, 1, kind, "cudaMemcpyAsync");
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > dstPitch || width > srcPitch) return invalid("cudaMemcpy2D: width is larger than a pitch");
  // Each side's rows must lie in one allocation when that side is device memory.
  const bool dstDevice = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool srcDevice = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (dstDevice && !deviceRange(dst, dstPitch * (height - 1) + width)) {
    return invalid("cudaMemcpy2D: the destination rows are not inside one device allocation");
  }
  if (srcDevice && !deviceRange(src, srcPitch * (height - 1) + width)) {
    return invalid("cudaMemcpy2D: the source rows are not inside one device allocation");
  }
  return issueCopy(stream, dst, dstPitch, src, srcPitch, width, height, kind, "cudaMemcpy2DAsync");
}

cudaError_t cudaMemset(void* pointer, int value, size_t bytes) { return cudaMemsetAsync(pointer, value, bytes, nullptr); }

cudaError_t cudaMemsetAsync(void* pointer, int value, size_t bytes, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (!deviceRange(pointer, bytes)) return invalid("cudaMemset: the range is not inside one device allocation");
  if (bytes == 0) return cudaSuccess;
  enqueue(stream, [=] {
    if (!deviceRange(pointer, bytes)) {
      reportKernelFailure(stream, "cudaMemsetAsync: the memory was freed before the memset ran (stream order)");
      return;
    }
    std::memset(pointer, value, bytes);
  });
  return cudaSuccess;
}

cudaError_t cudaMemset2DAsync(void* pointer, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  if (cudaError_t bad = checkStream(stream)) return bad;
  if (height == 0 || width == 0) return cudaSuccess;
  if (width > pitch) return invalid("cudaMemset2D: width is larger than the pitch");
  if (!deviceRange(pointer, pitch * (height - 1) + width)) {
    return invalid("cudaMemset2D: the rows are not inside one device allocation");
  }
  enqueue(stream, [=] {
    if (!deviceRange(pointer, pitch * (height - 1) + width)) {
      reportKernelFailure(stream, "cudaMemset2DAsync: the memory was freed before the memset ran (stream order)");
      return;
    }
    for (size_t row = 0; row < height; ++row) std::memset(static_cast<char*>(pointer) + row * pitch, value, width);
  });
  return cudaSuccess;
}

// ---- Virtual memory management (the driver entry points cuda/device_space.cu asks for) ----
// Reserved ranges are host address space with no access; mapping one makes its pages
// readable and writable (poisoned when asked, as fresh device memory holds garbage), so
// a kernel that runs past the mapped rows faults here as on a GPU.
namespace {

constexpr size_t kGranularity = size_t(2) << 20;

uintptr_t address(CUdeviceptr p) { return uintptr_t(p); }

CUresult emulatedGranularity(size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags) {
  if (!granularity || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      prop->location.id < 0 || prop->location.id >= kDevices) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult emulatedAddressReserve(CUdeviceptr* ptr, size_t bytes, size_t alignment, CUdeviceptr fixed, unsigned long long flags) {
  if (!ptr || bytes == 0 || bytes % kGranularity != 0 || fixed != 0 || flags != 0 || (alignment != 0 && alignment > kGranularity)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.reservations[reinterpret_cast<uintptr_t>(p)] = bytes;
  *ptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
  return CUDA_SUCCESS;
}

CUresult emulatedAddressFree(CUdeviceptr ptr, size_t bytes) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto found = m.reservations.find(address(ptr));
  if (found == m.reservations.end() || found->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  // Freed with mappings still in it: refused, as the driver does.
  auto inside = m.mappings.lower_bound(address(ptr));
  if (inside != m.mappings.end() && inside->first < address(ptr) + bytes) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(address(ptr)), bytes);
  m.reservations.erase(found);
  return CUDA_SUCCESS;
}

CUresult emulatedCreate(CUmemGenericAllocationHandle* handle, size_t bytes, const CUmemAllocationProp* prop, unsigned long long flags) {
  size_t g = 0;
  if (!handle || flags != 0 || emulatedGranularity(&g, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || bytes == 0 ||
      bytes % kGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.used + bytes > deviceCapacity()) return CUDA_ERROR_OUT_OF_MEMORY;
  m.used += bytes;
  *handle = m.nextHandle++;
  m.physical[*handle] = PhysicalMemory{bytes};
  return CUDA_SUCCESS;
}

// Called with the lock held: the memory goes once it is released and mapped nowhere.
void freeIfUnused(Memory& m, CUmemGenericAllocationHandle handle) {
  auto found = m.physical.find(handle);
  if (found == m.physical.end() || !found->second.released || found->second.mappings > 0) return;
  m.used -= found->second.bytes;
  m.physical.erase(found);
}

CUresult emulatedRelease(CUmemGenericAllocationHandle handle) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto found = m.physical.find(handle);
  if (found == m.physical.end() || found->second.released) return CUDA_ERROR_INVALID_VALUE;
  found->second.released = true;
  freeIfUnused(m, handle);
  return CUDA_SUCCESS;
}

bool insideReservation(const Memory& m, uintptr_t start, size_t bytes) {
  auto after = m.reservations.upper_bound(start);
  if (after == m.reservations.begin()) return false;
  const auto& [base, size] = *std::prev(after);
  return start >= base && bytes <= size && start - base <= size - bytes;
}

CUresult emulatedMap(CUdeviceptr ptr, size_t bytes, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto found = m.physical.find(handle);
  const uintptr_t at = address(ptr);
  if (found == m.physical.end() || found->second.released || offset != 0 || flags != 0 || bytes != found->second.bytes ||
      !insideReservation(m, at, bytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto next = m.mappings.lower_bound(at);
  if (next != m.mappings.end() && next->first < at + bytes) return CUDA_ERROR_INVALID_VALUE;
  if (next != m.mappings.begin() && std::prev(next)->first + std::prev(next)->second.bytes > at) return CUDA_ERROR_INVALID_VALUE;
  void* p = reinterpret_cast<void*>(at);
  if (mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (emulationOptions().poison) std::memset(p, 0xff, bytes);
  m.mappings[at] = Mapping{bytes, handle};
  ++found->second.mappings;
  // One device range with the mapping ending where this one starts.
  auto before = m.allocations.upper_bound(at);
  if (before != m.allocations.begin() && std::prev(before)->first + std::prev(before)->second == at &&
      insideReservation(m, std::prev(before)->first, 1)) {
    std::prev(before)->second += bytes;
  } else {
    m.allocations[at] = bytes;
  }
  return CUDA_SUCCESS;
}

CUresult emulatedUnmap(CUdeviceptr ptr, size_t bytes) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const uintptr_t at = address(ptr);
  auto found = m.mappings.find(at);
  // Only a whole mapping, as the driver asks.
  if (found == m.mappings.end() || found->second.bytes != bytes) return CUDA_ERROR_INVALID_VALUE;
  const CUmemGenericAllocationHandle handle = found->second.handle;
  m.mappings.erase(found);
  // Cut [at, at + bytes) out of the device range holding it.
  auto range = std::prev(m.allocations.upper_bound(at));
  const uintptr_t start = range->first;
  const size_t size = range->second;
  m.allocations.erase(range);
  if (start < at) m.allocations[start] = at - start;
  if (at + bytes < start + size) m.allocations[at + bytes] = start + size - (at + bytes);
  void* p = reinterpret_cast<void*>(at);
  madvise(p, bytes, MADV_DONTNEED);
  mprotect(p, bytes, PROT_NONE);
  --m.physical[handle].mappings;
  freeIfUnused(m, handle);
  return CUDA_SUCCESS;
}

CUresult emulatedSetAccess(CUdeviceptr ptr, size_t bytes, const CUmemAccessDesc* desc, size_t count) {
  if (!desc || count != 1 || desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc->location.id < 0 ||
      desc->location.id >= kDevices || desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return isDeviceRange(reinterpret_cast<const void*>(address(ptr)), bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* status) {
  if (!symbol || !function || flags != cudaEnableDefault) return remember(cudaErrorInvalidValue);
  const std::map<std::string, void*> known{
      {"cuMemGetAllocationGranularity", reinterpret_cast<void*>(&emulatedGranularity)},
      {"cuMemAddressReserve", reinterpret_cast<void*>(&emulatedAddressReserve)},
      {"cuMemAddressFree", reinterpret_cast<void*>(&emulatedAddressFree)},
      {"cuMemCreate", reinterpret_cast<void*>(&emulatedCreate)},
      {"cuMemRelease", reinterpret_cast<void*>(&emulatedRelease)},
      {"cuMemMap", reinterpret_cast<void*>(&emulatedMap)},
      {"cuMemUnmap", reinterpret_cast<void*>(&emulatedUnmap)},
      {"cuMemSetAccess", reinterpret_cast<void*>(&emulatedSetAccess)},
  };
  auto found = known.find(symbol);
  *function = found == known.end() ? nullptr : found->second;
  if (status) *status = found == known.end() ? cudaDriverEntryPointSymbolNotFound : cudaDriverEntryPointSuccess;
  return cudaSuccess;
}
