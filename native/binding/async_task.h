// Long native work runs on the device's executor thread and settles a JS promise on
// the JS thread when done: the event loop keeps turning meanwhile.
//
// A task holds every buffer it reads or writes until it has settled, and is destroyed
// on the JS thread, so buffers that view JS typed arrays are released where N-API
// allows it.
#pragma once

#include <napi.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "native/core/device.h"

namespace hb {
namespace binding {

class AsyncTask {
 public:
  virtual ~AsyncTask() = default;
  // On the executor thread. An exception rejects the promise with its message.
  virtual void run() = 0;
  // On the JS thread after run() returned: the value the promise resolves to.
  virtual Napi::Value resolve(Napi::Env env) = 0;
};

// Called once per environment when the addon loads.
void initAsyncTasks(Napi::Env env);

Napi::Promise schedule(Napi::Env env, Device device, std::unique_ptr<AsyncTask> task);
// The same on a named queue of its own (native/core/executor.h's submitToQueue).
Napi::Promise scheduleOnQueue(Napi::Env env, const std::string& queue, Device device, std::unique_ptr<AsyncTask> task);

// Runs the task here, on the JS thread, and returns its promise already settled: for host
// work so small that schedule()'s two thread hops (to the executor and back) would cost
// more than it does. Only where canSettleNow(env, device) holds, so the work comes after
// everything queued before it and the promise settles after every earlier one of this
// environment. The caller bounds the work: the JS thread waits for it, and for a parallel
// loop another queue (a checkpoint's "io") may be running on the pool.
Napi::Promise settleNow(Napi::Env env, std::unique_ptr<AsyncTask> task);
// True when `device` is the host, nothing is queued or running on its executor, no task
// of this environment is still waiting to settle, and the JS thread has not run 2 ms of
// such work since the event loop last turned (then the next op is queued, so that a loop
// of small awaited ops still lets timers and I/O in). Calls that the loop brings in one
// by one (a server's requests) never reach that.
bool canSettleNow(Napi::Env env, Device device);

// Calls run on the JS thread (settleNow, inline reads) since the event loop last turned:
// a step that may run there too goes through the worker after so many in a row.
int jsThreadCallsSinceLoopTurned(Napi::Env env);

// Charges the time from its construction to its destruction to the JS thread's work
// that canSettleNow bounds: for work run on the JS thread outside settleNow (an inline
// read).
class JsThreadWork {
 public:
  explicit JsThreadWork(Napi::Env env);
  ~JsThreadWork();
  JsThreadWork(const JsThreadWork&) = delete;
  JsThreadWork& operator=(const JsThreadWork&) = delete;

 private:
  Napi::Env env_;
  std::chrono::steady_clock::time_point start_;
};

// A task made of two callables; state they share lives in their captures.
template <typename Run, typename Resolve>
class LambdaTask : public AsyncTask {
 public:
  LambdaTask(Run run, Resolve resolve) : run_(std::move(run)), resolve_(std::move(resolve)) {}
  void run() override { run_(); }
  Napi::Value resolve(Napi::Env env) override { return resolve_(env); }

 private:
  Run run_;
  Resolve resolve_;
};

template <typename Run, typename Resolve>
std::unique_ptr<AsyncTask> makeTask(Run run, Resolve resolve) {
  return std::make_unique<LambdaTask<Run, Resolve>>(std::move(run), std::move(resolve));
}

}  // namespace binding
}  // namespace hb
