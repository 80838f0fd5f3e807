// Runs a kernel launch on the host: every block on one host thread, its CUDA threads as
// fibers that run one at a time until they exit or stop at a barrier. __syncthreads
// releases the block's waiting threads once every thread that has not exited arrived;
// a warp intrinsic releases the lanes of its mask once all of them arrived with that
// mask, and computes every lane's result at that moment (so no lane can overwrite a
// value another still has to read). A block whose threads can no longer all proceed is
// a deadlock, reported as the launch's failure instead of hanging.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <vector>

#include "cuda/emulation/emulation_options.h"
#include "cuda/emulation/fiber.h"
#include "cuda/emulation/runtime_state.h"
#include "native/core/thread_pool.h"

namespace hb {
namespace cuda_emulation {

namespace {

constexpr int kWarp = 32;
constexpr size_t kMaxSharedBytes = 48 * 1024;  // without the opt-in attribute
constexpr size_t kFiberStackBytes = 256 * 1024;

enum class ThreadState { NotStarted, Running, Ready, AtBlockBarrier, AtWarpOp, Done };

struct WarpRequest {
  WarpOpKind kind = WarpOpKind::Sync;
  unsigned mask = 0;
  uint64_t value = 0;
  int sourceLane = 0;
  bool predicate = false;
};

struct Launch {
  dim3 grid, block;
  size_t sharedBytes = 0;
  const std::function<void()>* body = nullptr;
  bool poison = false;
  uint64_t seed = 0;
};

struct Block;

struct EmulatedThread {
  uint3 index{};
  int lane = 0;
  int warp = 0;
  Fiber* fiber = nullptr;
  ThreadState state = ThreadState::NotStarted;
  WarpRequest request;
  WarpResult result;
  Block* block = nullptr;
};

struct Block {
  uint3 index{};
  const Launch* launch = nullptr;
  std::vector<EmulatedThread> threads;
  std::vector<unsigned> warpExisting;  // lanes that exist in each warp (partial last warp)
  std::vector<unsigned> warpExited;
  std::vector<unsigned> warpArrived;
  unsigned char* shared = nullptr;
  std::string failure;
};

// Per host thread: the block it is running, its fibers and its shared memory.
struct Worker {
  std::vector<std::unique_ptr<Fiber>> fibers;
  std::vector<Fiber*> idle;
  alignas(16) unsigned char shared[kMaxSharedBytes];
  Block block;

  Fiber* takeFiber() {
    if (idle.empty()) {
      fibers.push_back(std::make_unique<Fiber>(kFiberStackBytes));
      return fibers.back().get();
    }
    Fiber* fiber = idle.back();
    idle.pop_back();
    return fiber;
  }
};

thread_local EmulatedThread* current = nullptr;
thread_local bool insideLaunch = false;

Worker& worker() {
  thread_local std::unique_ptr<Worker> mine(new Worker());
  return *mine;
}

std::mutex optionsMutex;
bool optionsRead = false;
EmulationOptions options;

std::atomic<uint64_t> launchCount{0}, blockCount{0}, threadCount{0};

void runThread(void* argument) {
  EmulatedThread* self = static_cast<EmulatedThread*>(argument);
  try {
    (*self->block->launch->body)();
  } catch (const std::exception& e) {
    if (self->block->failure.empty()) self->block->failure = std::string("a kernel thread threw: ") + e.what();
  } catch (...) {
    if (self->block->failure.empty()) self->block->failure = "a kernel thread threw";
  }
  self->state = ThreadState::Done;
}

std::string where(const Block& b) {
  std::ostringstream out;
  out << "block (" << b.index.x << "," << b.index.y << "," << b.index.z << ")";
  return out.str();
}

// Releases the lanes of `mask` in warp w if all of them arrived with that mask.
void tryReleaseWarp(Block& b, int w, unsigned mask, std::deque<int>& ready) {
  if ((b.warpArrived[w] & mask) != mask) return;
  const int first = w * kWarp;
  for (int lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    const EmulatedThread& t = b.threads[first + lane];
    if (t.request.mask != mask) return;  // a lane waits with another mask: not this group
  }
  unsigned ballot = 0;
  for (int lane = 0; lane < kWarp; ++lane) {
    if ((mask >> lane & 1u) && b.threads[first + lane].request.predicate) ballot |= 1u << lane;
  }
  for (int lane = 0; lane < kWarp; ++lane) {
    if (!(mask >> lane & 1u)) continue;
    EmulatedThread& t = b.threads[first + lane];
    const int source = t.request.sourceLane;
    if (t.request.kind != b.threads[first + __builtin_ctz(mask)].request.kind && b.failure.empty()) {
      b.failure = where(b) + ": lanes of warp " + std::to_string(w) + " met at different warp intrinsics";
    }
    if (source >= 0 && source < kWarp && (mask >> source & 1u)) {
      t.result.value = b.threads[first + source].request.value;
    } else {
      // Reading a lane outside the mask is undefined on a GPU.
      t.result.value = b.launch->poison ? ~uint64_t(0) : t.request.value;
    }
    t.result.ballot = ballot;
    t.state = ThreadState::Ready;
    ready.push_back(first + lane);
  }
  b.warpArrived[w] &= ~mask;
}

void runBlock(const Launch& launch, uint64_t linear) {
  Worker& self = worker();
  Block& b = self.block;
  const dim3 g = launch.grid, d = launch.block;
  b.index = uint3{unsigned(linear % g.x), unsigned(linear / g.x % g.y), unsigned(linear / (uint64_t(g.x) * g.y))};
  b.launch = &launch;
  b.failure.clear();
  b.shared = self.shared;
  if (launch.poison) std::memset(self.shared, 0xff, std::max<size_t>(launch.sharedBytes, 1));
  const int count = int(d.x * d.y * d.z);
  const int warps = (count + kWarp - 1) / kWarp;
  b.threads.assign(size_t(count), EmulatedThread());
  b.warpExisting.assign(size_t(warps), 0);
  b.warpExited.assign(size_t(warps), 0);
  b.warpArrived.assign(size_t(warps), 0);
  for (int t = 0; t < count; ++t) {
    EmulatedThread& th = b.threads[size_t(t)];
    th.index = uint3{unsigned(t) % d.x, unsigned(t) / d.x % d.y, unsigned(t) / (d.x * d.y)};
    th.lane = t % kWarp;
    th.warp = t / kWarp;
    th.block = &b;
    b.warpExisting[size_t(th.warp)] |= 1u << th.lane;
  }
  std::vector<int> order(static_cast<size_t>(count));
  for (int t = 0; t < count; ++t) order[size_t(t)] = t;
  if (launch.seed != 0) {
    std::mt19937_64 random(launch.seed * 0x9e3779b97f4a7c15ull + linear);
    std::shuffle(order.begin(), order.end(), random);
  }
  std::deque<int> ready(order.begin(), order.end());
  int exited = 0, atBarrier = 0;
  while (!ready.empty()) {
    EmulatedThread& th = b.threads[size_t(ready.front())];
    ready.pop_front();
    if (th.state == ThreadState::NotStarted) {
      th.fiber = self.takeFiber();
      th.fiber->start(&runThread, &th);
    }
    th.state = ThreadState::Running;
    current = &th;
    th.fiber->resume();
    current = nullptr;
    if (th.state == ThreadState::Done) {
      ++exited;
      b.warpExited[size_t(th.warp)] |= 1u << th.lane;
      self.idle.push_back(th.fiber);
      th.fiber = nullptr;
    } else if (th.state == ThreadState::AtBlockBarrier) {
      ++atBarrier;
    } else if (th.state == ThreadState::AtWarpOp) {
      b.warpArrived[size_t(th.warp)] |= 1u << th.lane;
      tryReleaseWarp(b, th.warp, th.request.mask, ready);
    }
    if (atBarrier > 0 && atBarrier == count - exited) {
      // CUDA allows __syncthreads in conditional code only where the whole block takes
      // the same branch; threads that returned first make it a different barrier count
      // from the rest, which hangs or misbehaves on some GPUs.
      if (exited > 0 && b.failure.empty()) {
        b.failure = where(b) + ": " + std::to_string(exited) + " of its " + std::to_string(count) +
                    " threads exited without reaching a __syncthreads the others wait at (a barrier in code not "
                    "every thread of the block reaches)";
      }
      for (int t : order) {
        if (b.threads[size_t(t)].state == ThreadState::AtBlockBarrier) {
          b.threads[size_t(t)].state = ThreadState::Ready;
          ready.push_back(t);
        }
      }
      atBarrier = 0;
    }
  }
  if (exited != count) {
    int atWarp = 0;
    for (EmulatedThread& th : b.threads) {
      if (th.state == ThreadState::AtWarpOp) ++atWarp;
      // Abandon the stopped threads; their fibers are started afresh next time.
      if (th.fiber) self.idle.push_back(th.fiber);
      th.fiber = nullptr;
    }
    if (b.failure.empty()) {
      b.failure = where(b) + " deadlocked: " + std::to_string(count - exited - atWarp) +
                  " thread(s) wait at __syncthreads and " + std::to_string(atWarp) +
                  " at a warp intrinsic, which the other threads never reach (a barrier in a branch that not every "
                  "thread takes, or a mask naming lanes that exited)";
    }
  }
  blockCount.fetch_add(1, std::memory_order_relaxed);
  threadCount.fetch_add(uint64_t(count), std::memory_order_relaxed);
}

}  // namespace

EmulationOptions emulationOptions() {
  std::lock_guard<std::mutex> lock(optionsMutex);
  if (!optionsRead) {
    optionsRead = true;
    if (const char* seed = std::getenv("HB_CUDA_EMULATE_SEED")) options.scheduleSeed = std::strtoull(seed, nullptr, 10);
    if (const char* poison = std::getenv("HB_CUDA_EMULATE_POISON")) options.poison = poison[0] == '1';
    if (const char* defer = std::getenv("HB_CUDA_EMULATE_DEFER")) options.deferred = defer[0] != '0';
  }
  return options;
}

void setEmulationOptions(const EmulationOptions& next) {
  std::lock_guard<std::mutex> lock(optionsMutex);
  optionsRead = true;
  options = next;
}

EmulationCounters emulationCounters() {
  return EmulationCounters{launchCount.load(), blockCount.load(), threadCount.load(), hostWaitCount()};
}

const uint3& threadIndex() { return current->index; }
const uint3& blockIndex() { return current->block->index; }
const dim3& blockDimension() { return current->block->launch->block; }
const dim3& gridDimension() { return current->block->launch->grid; }
// Null without dynamic shared memory, so a kernel launched without it faults here too.
void* dynamicShared() { return current->block->launch->sharedBytes == 0 ? nullptr : current->block->shared; }
unsigned laneId() { return unsigned(current->lane); }

unsigned activeMask() {
  const Block& b = *current->block;
  return b.warpExisting[size_t(current->warp)] & ~b.warpExited[size_t(current->warp)];
}

void syncThreads() {
  EmulatedThread* self = current;
  self->state = ThreadState::AtBlockBarrier;
  self->fiber->suspend();
}

WarpResult warpOp(WarpOpKind kind, unsigned mask, uint64_t value, int sourceLane, bool predicate) {
  EmulatedThread* self = current;
  Block& b = *self->block;
  // Lanes past the end of a partial warp do not exist; a full mask means the ones that do.
  mask &= b.warpExisting[size_t(self->warp)];
  if (!(mask >> self->lane & 1u)) {
    if (b.failure.empty()) {
      b.failure = where(b) + ": lane " + std::to_string(self->lane) + " of warp " + std::to_string(self->warp) +
                  " called a warp intrinsic with a mask that leaves it out";
    }
    mask |= 1u << self->lane;
  }
  self->request = WarpRequest{kind, mask, value, sourceLane, predicate};
  self->state = ThreadState::AtWarpOp;
  self->fiber->suspend();
  return self->result;
}

cudaError_t launch(dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream, std::function<void()> body) {
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  std::string refused;
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
    refused = "a block of " + std::to_string(block.x) + "x" + std::to_string(block.y) + "x" + std::to_string(block.z) +
              " threads (at most 1024, and x, y <= 1024, z <= 64)";
  } else if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
    refused = "a grid of " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) +
              " blocks (each at least 1; y, z <= 65535)";
  } else if (sharedBytes > kMaxSharedBytes) {
    refused = std::to_string(sharedBytes) + " bytes of dynamic shared memory (at most 48 KiB)";
  }
  if (!refused.empty()) {
    setLaunchError(cudaErrorInvalidConfiguration, "invalid launch configuration: " + refused);
    return cudaErrorInvalidConfiguration;
  }
  if (!isStream(stream)) {
    setLaunchError(cudaErrorInvalidResourceHandle, "kernel launched on a stream that does not exist");
    return cudaErrorInvalidResourceHandle;
  }
  if (insideLaunch) {
    // The launching kernel's launch fails: its thread's last error is read by nobody.
    reportKernelFailure(stream, "a kernel launched another kernel (dynamic parallelism is not emulated)");
    return cudaErrorNotSupported;
  }
  const EmulationOptions now = emulationOptions();
  Launch l;
  l.grid = grid;
  l.block = block;
  l.sharedBytes = sharedBytes;
  l.poison = now.poison;
  l.seed = now.scheduleSeed == 0 ? 0 : now.scheduleSeed + launchCount.load();
  launchCount.fetch_add(1, std::memory_order_relaxed);
  // Checked and numbered now, run when the stream gets to it, with the options of now.
  enqueue(stream, [l, stream, body = std::move(body)]() mutable {
    l.body = &body;
    const uint64_t blocks = uint64_t(l.grid.x) * l.grid.y * l.grid.z;
    std::mutex failureMutex;
    std::string failure;
    struct InsideLaunch {
      InsideLaunch() { insideLaunch = true; }
      ~InsideLaunch() { insideLaunch = false; }
    };
    auto runRange = [&](uint64_t first, uint64_t last, const std::vector<uint64_t>* order) {
      InsideLaunch inside;
      for (uint64_t i = first; i < last; ++i) {
        runBlock(l, order ? (*order)[i] : i);
        const std::string& f = worker().block.failure;
        if (!f.empty()) {
          std::lock_guard<std::mutex> lock(failureMutex);
          if (failure.empty()) failure = f;
        }
      }
    };
    if (l.seed != 0) {
      // One host thread, blocks in a seeded order: a result that depends on which block
      // ran first shows as a difference between seeds.
      std::vector<uint64_t> order(blocks);
      for (uint64_t i = 0; i < blocks; ++i) order[i] = i;
      std::mt19937_64 random(l.seed);
      std::shuffle(order.begin(), order.end(), random);
      runRange(0, blocks, &order);
    } else {
      parallelFor(int64_t(blocks), 1, [&](int64_t first, int64_t last) { runRange(uint64_t(first), uint64_t(last), nullptr); });
    }
    if (!failure.empty()) reportKernelFailure(stream, failure);
  });
  return cudaSuccess;
}

}  // namespace cuda_emulation
}  // namespace hb
