// The device side of the emulated CUDA (included by cuda/emulation/include/cuda_runtime.h):
// built-in variables, __syncthreads, warp intrinsics and atomics, over the block
// scheduler of block_scheduler.cc. Each emulated thread runs on a fiber; the threads
// of a block share one host thread, blocks run on the thread pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

namespace hb {
namespace cuda_emulation {

// The calling emulated thread's coordinates (valid inside a kernel only).
const uint3& threadIndex();
const uint3& blockIndex();
const dim3& blockDimension();
const dim3& gridDimension();
// The block's dynamic shared memory (the launch's sharedBytes).
void* dynamicShared();

void syncThreads();

enum class WarpOpKind : int32_t { Sync, Shuffle, Vote };
struct WarpResult {
  uint64_t value = 0;   // Shuffle: the source lane's value
  unsigned ballot = 0;  // Vote: the lanes of the mask whose predicate was true
};
// Waits until every lane of `mask` reached a warp intrinsic with the same mask, then
// returns this lane's result. `sourceLane` is the lane whose value a shuffle reads.
WarpResult warpOp(WarpOpKind kind, unsigned mask, uint64_t value, int sourceLane, bool predicate);
// The warp's lanes that exist and have not exited.
unsigned activeMask();
unsigned laneId();

// Queues a launch on `stream` (runtime_state.h's enqueue) that runs body once per thread
// of every block; a bad configuration is what cudaGetLastError reports, a failure while
// running what the stream's next synchronisation does. Blocks run concurrently on the
// thread pool, or one by one in a seeded order (setSchedule).
cudaError_t launch(dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream, std::function<void()> body);

}  // namespace cuda_emulation
}  // namespace hb

#define threadIdx (::hb::cuda_emulation::threadIndex())
#define blockIdx (::hb::cuda_emulation::blockIndex())
#define blockDim (::hb::cuda_emulation::blockDimension())
#define gridDim (::hb::cuda_emulation::gridDimension())
constexpr int warpSize = 32;

inline void __syncthreads() { ::hb::cuda_emulation::syncThreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::hb::cuda_emulation::warpOp(::hb::cuda_emulation::WarpOpKind::Sync, mask, 0, 0, false);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned __activemask() { return ::hb::cuda_emulation::activeMask(); }

namespace hb {
namespace cuda_emulation {
template <typename T>
T shuffleFrom(unsigned mask, T value, int sourceLane) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "warp shuffles move values of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  const WarpResult result = warpOp(WarpOpKind::Shuffle, mask, bits, sourceLane, false);
  T out;
  std::memcpy(&out, &result.value, sizeof(T));
  return out;
}
inline int widthStart(int width) { return int(laneId()) & ~(width - 1); }
}  // namespace cuda_emulation
}  // namespace hb

template <typename T>
T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  const int start = ::hb::cuda_emulation::widthStart(width);
  return ::hb::cuda_emulation::shuffleFrom(mask, var, start + (srcLane & (width - 1)));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  const int lane = int(::hb::cuda_emulation::laneId());
  const int source = lane - int(delta);
  return ::hb::cuda_emulation::shuffleFrom(mask, var, source < ::hb::cuda_emulation::widthStart(width) ? lane : source);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  const int lane = int(::hb::cuda_emulation::laneId());
  const int source = lane + int(delta);
  return ::hb::cuda_emulation::shuffleFrom(mask, var,
                                           source >= ::hb::cuda_emulation::widthStart(width) + width ? lane : source);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  const int lane = int(::hb::cuda_emulation::laneId());
  const int source = lane ^ laneMask;
  return ::hb::cuda_emulation::shuffleFrom(mask, var,
                                           source >= ::hb::cuda_emulation::widthStart(width) + width ? lane : source);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ::hb::cuda_emulation::warpOp(::hb::cuda_emulation::WarpOpKind::Vote, mask, 0, 0, predicate != 0).ballot;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  const unsigned votes = __ballot_sync(mask, predicate);
  return (votes & mask & __activemask()) == (mask & __activemask());
}

// ---- Atomics: real host atomics, since blocks run on several host threads ----
#define HB_EMULATED_ATOMIC_INTEGER(T)                                                            \
  inline T atomicAdd(T* address, T value) { return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST); } \
  inline T atomicSub(T* address, T value) { return __atomic_fetch_sub(address, value, __ATOMIC_SEQ_CST); } \
  inline T atomicAnd(T* address, T value) { return __atomic_fetch_and(address, value, __ATOMIC_SEQ_CST); } \
  inline T atomicOr(T* address, T value) { return __atomic_fetch_or(address, value, __ATOMIC_SEQ_CST); }   \
  inline T atomicXor(T* address, T value) { return __atomic_fetch_xor(address, value, __ATOMIC_SEQ_CST); } \
  inline T atomicExch(T* address, T value) { return __atomic_exchange_n(address, value, __ATOMIC_SEQ_CST); } \
  inline T atomicCAS(T* address, T compare, T value) {                                         \
    __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return compare;                                                                              \
  }                                                                                              \
  inline T atomicMin(T* address, T value) {                                                      \
    T seen = __atomic_load_n(address, __ATOMIC_SEQ_CST);                                         \
    while (value < seen &&                                                                       \
           !__atomic_compare_exchange_n(address, &seen, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) { \
    }                                                                                            \
    return seen;                                                                                 \
  }                                                                                              \
  inline T atomicMax(T* address, T value) {                                                      \
    T seen = __atomic_load_n(address, __ATOMIC_SEQ_CST);                                         \
    while (value > seen &&                                                                       \
           !__atomic_compare_exchange_n(address, &seen, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) { \
    }                                                                                            \
    return seen;                                                                                 \
  }
HB_EMULATED_ATOMIC_INTEGER(int)
HB_EMULATED_ATOMIC_INTEGER(unsigned)
HB_EMULATED_ATOMIC_INTEGER(long long)
HB_EMULATED_ATOMIC_INTEGER(unsigned long long)
#undef HB_EMULATED_ATOMIC_INTEGER

// Floating-point adds by compare-and-swap of the bits, as a GPU without native float
// atomics would; the order of concurrent adds is the schedule's, as on a GPU.
template <typename F, typename Bits>
inline F hbEmulatedAtomicAddFloat(F* address, F value) {
  Bits* bits = reinterpret_cast<Bits*>(address);
  Bits seen = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
  for (;;) {
    F old;
    std::memcpy(&old, &seen, sizeof(F));
    const F sum = old + value;
    Bits next;
    std::memcpy(&next, &sum, sizeof(F));
    if (__atomic_compare_exchange_n(bits, &seen, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return old;
  }
}
inline float atomicAdd(float* address, float value) { return hbEmulatedAtomicAddFloat<float, uint32_t>(address, value); }
inline double atomicAdd(double* address, double value) { return hbEmulatedAtomicAddFloat<double, uint64_t>(address, value); }
inline float atomicExch(float* address, float value) {
  float old;
  uint32_t next;
  std::memcpy(&next, &value, 4);
  const uint32_t was = __atomic_exchange_n(reinterpret_cast<uint32_t*>(address), next, __ATOMIC_SEQ_CST);
  std::memcpy(&old, &was, 4);
  return old;
}
