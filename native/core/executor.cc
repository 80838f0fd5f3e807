#include "native/core/executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "cuda/cuda_backend.h"
#include "native/core/buffer.h"
#include "native/core/spin_wait.h"

namespace hb {

namespace {

class Executor;

// The executor whose thread this is (nullptr on other threads): work it asks to run on
// itself and wait for runs inline instead of waiting behind itself for ever.
thread_local Executor* currentExecutor = nullptr;

class Executor {
 public:
  Executor(const std::string& name, Device device) : name_(name), thread_([this, device] { loop(device); }) {
    // Lives until the process ends (see executorFor), so the thread is never joined.
    thread_.detach();
  }

  void submit(std::function<void()> work) {
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_one();
  }

  bool isCurrentThread() const { return currentExecutor == this; }

  // See noteHostBlockCached.
  void armIdleRelease() {
    if (!idleReleased_.load(std::memory_order_relaxed)) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      armIdleRelease_ = true;
    }
    wake_.notify_one();
  }

  // On this executor's thread, inside the running work (see finishRunningWork).
  void finishRunning() {
    if (runningFinished_) return;
    runningFinished_ = true;
    outstanding_.fetch_sub(1, std::memory_order_release);
  }

  // Nothing queued and nothing running; what the last work wrote is visible to the caller.
  bool idle() const { return outstanding_.load(std::memory_order_acquire) == 0; }

 private:
  void loop(Device device) {
    currentExecutor = this;
    if (device.isCuda()) cuda::bindThreadToDevice(device.index);
    // The host executor empties the host block cache once it has had nothing to do for
    // a while, and a device's executor its memory pool: the caches are for back-to-back
    // steps, not for a process that has finished.
    const bool ownsHostCache = name_ == "cpu";
    const bool ownsDevicePool = device.isCuda() && name_ == device.str();
    bool idleReleased = true;
    for (;;) {
      std::function<void()> work;
      // A device's executor polls a little before it sleeps: the next small op's round
      // trip then costs a few microseconds instead of a wake-up (native/core/spin_wait.h).
      if (ownsHostCache || ownsDevicePool) {
        pollFor(spinBeforeSleep(), [this] { return outstanding_.load(std::memory_order_relaxed) > 0; });
      }
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (armIdleRelease_) {
          armIdleRelease_ = false;
          idleReleased = false;
          idleReleased_.store(false, std::memory_order_relaxed);
        }
        if ((ownsHostCache || ownsDevicePool) && !idleReleased) {
          if (!wake_.wait_for(lock, std::chrono::seconds(2), [&] { return !queue_.empty(); })) {
            // Said before the cache is emptied: a block cached while it empties arms the
            // release again rather than staying there.
            idleReleased = true;
            if (ownsHostCache) idleReleased_.store(true, std::memory_order_relaxed);
            lock.unlock();
            if (ownsHostCache) releaseIdleHostMemory();
            if (ownsDevicePool) cuda::releaseIdleDeviceMemory(device.index);
            continue;
          }
        } else {
          wake_.wait(lock, [&] { return !queue_.empty() || armIdleRelease_; });
          if (queue_.empty()) continue;  // armed again: count idle time from here
        }
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      runningFinished_ = false;
      work();
      work = nullptr;  // its captures go before it counts as done (unless it said so itself)
      if (!runningFinished_) outstanding_.fetch_sub(1, std::memory_order_release);
      idleReleased = false;
      idleReleased_.store(false, std::memory_order_relaxed);
    }
  }

  std::string name_;  // the queue's name: 'cpu', 'cuda:N', or a named queue's
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int64_t> outstanding_{0};  // submitted and not yet finished
  bool runningFinished_ = false;         // the running work has counted itself done; this thread only
  bool armIdleRelease_ = false;          // under mutex_: noteHostBlockCached since the cache was emptied
  std::atomic<bool> idleReleased_{true};  // the host cache was emptied and no work has run since
  std::thread thread_;
};

Executor& executorNamed(const std::string& name, Device device) {
  static std::mutex mutex;
  // Leaked on purpose: worker threads may still be parked when the process exits.
  static auto* executors = new std::map<std::string, Executor*>();
  std::lock_guard<std::mutex> lock(mutex);
  Executor*& executor = (*executors)[name];
  if (executor == nullptr) executor = new Executor(name, device);
  return *executor;
}

Executor& executorFor(Device device) { return executorNamed(device.str(), device); }

}  // namespace

void finishRunningWork() {
  if (currentExecutor != nullptr) currentExecutor->finishRunning();
}

void submitToDevice(Device device, std::function<void()> work) {
  executorFor(device).submit(std::move(work));
}

void submitToQueue(const std::string& queue, Device device, std::function<void()> work) {
  executorNamed("queue:" + queue + "@" + device.str(), device).submit(std::move(work));
}

void noteHostBlockCached() {
  static Executor& host = executorFor(Device::cpu());
  host.armIdleRelease();
}

bool deviceIsIdle(Device device) {
  if (!device.isCuda()) {
    static const Executor& host = executorFor(Device::cpu());  // no lookup on the read path
    return host.idle();
  }
  return executorFor(device).idle();
}

void runOnDeviceAndWait(Device device, const std::function<void()>& work) {
  // A compiled step's collective on a GPU's own thread stages through this: run it
  // here, where it would have run anyway, in order.
  if (executorFor(device).isCurrentThread()) {
    work();
    return;
  }
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  submitToDevice(device, [&work, &done] {
    try {
      work();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  finished.get();
}

std::shared_future<void> queueMarker(Device device) {
  auto reached = std::make_shared<std::promise<void>>();
  std::shared_future<void> marker = reached->get_future().share();
  submitToDevice(device, [reached] { reached->set_value(); });
  return marker;
}

}  // namespace hb
