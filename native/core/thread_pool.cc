#include "native/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "native/core/spin_wait.h"

namespace hb {

namespace {

// Whether this thread is running a chunk of a parallelFor: a parallelFor inside it runs
// there whole (the pool is taken by the outer one; waiting for its turn would never end).
// The plan runs independent kernels side by side this way (Plan::run), each on one thread.
thread_local bool insideChunk = false;

class ThreadPool {
 public:
  explicit ThreadPool(int size) : size_(size), spin_(spinBeforeSleep()) {
    for (int i = 1; i < size; ++i) workers_.emplace_back([this] { workerLoop(); });
  }

  int size() const { return size_; }

  // waitForTurn false: where another call has the pool, body(0, n) runs on this thread.
  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body, bool waitForTurn) {
    if (n <= 0) return;
    grain = std::max<int64_t>(1, grain);
    const int64_t chunks = (n + grain - 1) / grain;
    if (chunks == 1 || size_ == 1 || insideChunk) {
      body(0, n);
      return;
    }
    std::unique_lock<std::mutex> turn(turnMutex_, std::defer_lock);
    if (waitForTurn) {
      turn.lock();
    } else if (!turn.try_lock()) {
      body(0, n);
      return;
    }
    // At most a few chunks per thread: fewer hand-offs, still some balancing (and a
    // helper that wakes late finds the caller has taken its share).
    const int64_t target = std::min<int64_t>(chunks, int64_t(size_) * 4);
    const int64_t chunk = (n + target - 1) / target;
    Job job;
    job.body = &body;
    job.n = n;
    job.chunk = chunk;
    job.chunks = (n + chunk - 1) / chunk;
    job.unfinished.store(job.chunks);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(job);
    // Every chunk done and no helper still inside the job (one may hold it after its
    // last chunk) before the job's memory goes.
    auto finished = [&] {
      return job.unfinished.load(std::memory_order_acquire) == 0 && busyWorkers_.load(std::memory_order_acquire) == 0;
    };
    pollFor(spin_, finished);
    {
      // Checked again under the mutex: a helper takes the job (busyWorkers_) under it, so
      // none can pick it up between this check and its withdrawal.
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, finished);
      job_ = nullptr;
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    const std::function<void(int64_t, int64_t)>* body = nullptr;
    int64_t n = 0;
    int64_t chunk = 1;
    int64_t chunks = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> unfinished{0};
    std::exception_ptr error;  // guarded by mutex_
  };

  void work(Job& job) {
    int64_t done = 0;
    std::exception_ptr error;
    insideChunk = true;
    for (;;) {
      const int64_t index = job.next.fetch_add(1);
      if (index >= job.chunks) break;
      const int64_t first = index * job.chunk;
      const int64_t last = std::min(job.n, first + job.chunk);
      try {
        (*job.body)(first, last);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      ++done;
    }
    insideChunk = false;
    if (error) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!job.error) job.error = error;
    }
    if (done > 0) job.unfinished.fetch_sub(done, std::memory_order_acq_rel);
  }

  void workerLoop() {
    uint64_t seen = 0;
    for (;;) {
      pollFor(spin_, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      Job* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen && job_ != nullptr; });
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;
        busyWorkers_.fetch_add(1, std::memory_order_relaxed);
      }
      work(*job);
      {
        // Under the mutex, so a caller between its check and its wait cannot miss it.
        std::lock_guard<std::mutex> lock(mutex_);
        busyWorkers_.fetch_sub(1, std::memory_order_release);
      }
      done_.notify_all();
    }
  }

  const int size_;
  const std::chrono::microseconds spin_;
  std::vector<std::thread> workers_;
  std::mutex turnMutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;                      // guarded by mutex_
  std::atomic<uint64_t> generation_{0};     // written under mutex_, polled without it
  std::atomic<int> busyWorkers_{0};         // written under mutex_, polled without it
};

int configuredSize() {
  if (const char* env = std::getenv("HB_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return std::min(n, 1024);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& pool() {
  // Never destroyed: its threads wait on a condition variable until the process ends,
  // and joining them from a static destructor would race the addon's unloading.
  static ThreadPool* instance = new ThreadPool(configuredSize());
  return *instance;
}

}  // namespace

void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  pool().run(n, grain, body, /*waitForTurn=*/true);
}

void parallelForIfFree(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  pool().run(n, grain, body, /*waitForTurn=*/false);
}

int threadPoolSize() { return pool().size(); }

}  // namespace hb
