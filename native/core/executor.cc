#include "native/core/executor.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "cuda/cuda_backend.h"

namespace hb {

namespace {

class Executor {
 public:
  explicit Executor(Device device) : thread_([this, device] { loop(device); }) {
    // Lives until the process ends (see executorFor), so the thread is never joined.
    thread_.detach();
  }

  void submit(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_one();
  }

 private:
  void loop(Device device) {
    if (device.isCuda()) cuda::bindThreadToDevice(device.index);
    for (;;) {
      std::function<void()> work;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return !queue_.empty(); });
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      work();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::thread thread_;
};

Executor& executorNamed(const std::string& name, Device device) {
  static std::mutex mutex;
  // Leaked on purpose: worker threads may still be parked when the process exits.
  static auto* executors = new std::map<std::string, Executor*>();
  std::lock_guard<std::mutex> lock(mutex);
  Executor*& executor = (*executors)[name];
  if (executor == nullptr) executor = new Executor(device);
  return *executor;
}

Executor& executorFor(Device device) { return executorNamed(device.str(), device); }

}  // namespace

void submitToDevice(Device device, std::function<void()> work) {
  executorFor(device).submit(std::move(work));
}

void submitToQueue(const std::string& queue, Device device, std::function<void()> work) {
  executorNamed("queue:" + queue + "@" + device.str(), device).submit(std::move(work));
}

void runOnDeviceAndWait(Device device, const std::function<void()>& work) {
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
