#include "native/binding/async_task.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "native/binding/addon_state.h"
#include "native/binding/arguments.h"
#include "native/binding/event_loop_clock.h"
#include "native/core/executor.h"

namespace hb {
namespace binding {

namespace {

struct PendingTask {
  std::unique_ptr<AsyncTask> task;
  Napi::Promise::Deferred deferred;
  bool failed = false;
  std::string error;
  ErrorCode code = ErrorCode::Internal;
};

void settle(Napi::Env env, Napi::Function, Completions* completions, PendingTask* raw);

// Runs the task's work, keeping what it threw for the JS thread.
void runCatching(PendingTask& pending) {
  try {
    pending.task->run();
  } catch (const Error& e) {
    pending.failed = true;
    pending.error = e.what();
    pending.code = e.code();
  } catch (const std::bad_alloc&) {
    pending.failed = true;
    pending.error = "out of memory";
    pending.code = ErrorCode::OutOfMemory;
  } catch (const std::exception& e) {
    pending.failed = true;
    pending.error = e.what();
  } catch (...) {
    pending.failed = true;
    pending.error = "unknown native error";
  }
}

// On the JS thread, after runCatching: rejects with what the work threw, or resolves to
// the task's value (rejecting with what making it threw).
void settleWith(Napi::Env env, PendingTask& pending) {
  if (pending.failed) {
    pending.deferred.Reject(jsError(env, pending.error, pending.code).Value());
    return;
  }
  try {
    pending.deferred.Resolve(pending.task->resolve(env));
  } catch (const Napi::Error& e) {
    ensureErrorCode(e);
    pending.deferred.Reject(e.Value());
  } catch (const Error& e) {
    pending.deferred.Reject(jsError(env, e.what(), e.code()).Value());
  } catch (const std::exception& e) {
    pending.deferred.Reject(jsError(env, e.what(), ErrorCode::Internal).Value());
  }
}

using CompletionFunction = Napi::TypedThreadSafeFunction<Completions, PendingTask, settle>;

}  // namespace

// One per environment.
struct Completions {
  // Executor threads outlive a worker thread's environment; once it is gone they must
  // not touch its thread-safe function (Node frees it).
  std::mutex mutex;
  bool alive = true;
  CompletionFunction function;
  // Tasks in flight. While > 0 the function is ref'ed so Node waits for them.
  int pending = 0;
  // Work done on the JS thread (settleNow, inline reads) since the event loop last
  // turned: milliseconds of it and how many calls (see kJsThreadMsBetweenTurns).
  double jsThreadMs = 0;
  int jsThreadCalls = 0;
  // The environment's event loop, and its clock when the work above was last counted.
  uv_loop_s* loop = nullptr;
  uint64_t loopTime = 0;
};

namespace {

// Work that canSettleNow lets run on the JS thread comes back without the event loop
// turning: a loop of awaited small ops would never let timers, I/O or signals in. Once
// this much has run there since the loop last turned, the next op is queued, and its
// settling turns the loop. Ops of a few microseconds hop once every 2 ms; a loop of 0.1 ms
// lookups every 20; a server whose requests each come in through the loop, never.
constexpr double kJsThreadMsBetweenTurns = 2.0;

// The event loop has turned since the JS thread's work was last counted (libuv's loop
// clock, in ms, moves only when the loop updates it at a turn; a queued task's settling
// is a turn too, counted in settle): counting starts over.
void noteLoopTurn(Completions& completions) {
  if (completions.loop == nullptr) return;
  const uint64_t now = uv_now(completions.loop);
  if (now == completions.loopTime) return;
  completions.loopTime = now;
  completions.jsThreadMs = 0;
  completions.jsThreadCalls = 0;
}

}  // namespace

JsThreadWork::JsThreadWork(Napi::Env env) : env_(env), start_(std::chrono::steady_clock::now()) {}

JsThreadWork::~JsThreadWork() {
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start_;
  Completions& completions = *addonState(env_).completions;
  completions.jsThreadMs += took.count();
  completions.jsThreadCalls++;
}

int jsThreadCallsSinceLoopTurned(Napi::Env env) {
  Completions& completions = *addonState(env).completions;
  noteLoopTurn(completions);
  return completions.jsThreadCalls;
}

namespace {

void settle(Napi::Env env, Napi::Function, Completions* completions, PendingTask* raw) {
  if (env == nullptr) {
    // The environment is being torn down: its references can no longer be released,
    // so the task is deliberately leaked rather than destroyed off the JS thread.
    return;
  }
  std::unique_ptr<PendingTask> pending(raw);
  // Nothing may escape a thread-safe function's callback. N-API calls fail (and
  // node-addon-api throws) while a worker thread is being terminated; then the promise
  // can no longer be settled anyway.
  try {
    if (--completions->pending == 0) completions->function.Unref(env);
    completions->jsThreadMs = 0;  // the event loop has turned to deliver this
    completions->jsThreadCalls = 0;
    settleWith(env, *pending);
  } catch (...) {
  }
}

}  // namespace

void initAsyncTasks(Napi::Env env) {
  auto* completions = new Completions();
  completions->function = CompletionFunction::New(env, "hb-ts native task", 0, 1, completions);
  completions->function.Unref(env);
  // Without it (never in Node), only a queued task's settling restarts the count.
  if (napi_get_uv_event_loop(env, &completions->loop) != napi_ok) completions->loop = nullptr;
  // Never freed: tasks still in flight on executor threads may name it after the
  // environment has gone. Registered after the function, so it runs before Node's own
  // cleanup of it.
  env.AddCleanupHook([completions] {
    std::lock_guard<std::mutex> lock(completions->mutex);
    completions->alive = false;
  });
  addonState(env).completions = completions;
}

namespace {

// finishesOnRun: a host queue's task, done once its work has run. (A GPU queue's work
// may leave kernels running on the device.)
template <typename Submit>
Napi::Promise scheduleWith(Napi::Env env, std::unique_ptr<AsyncTask> task, bool finishesOnRun, Submit submit) {
  Completions* completions = addonState(env).completions;
  auto* pending = new PendingTask{std::move(task), Napi::Promise::Deferred::New(env), false, std::string(), ErrorCode::Internal};
  Napi::Promise promise = pending->deferred.Promise();
  if (completions->pending++ == 0) completions->function.Ref(env);
  submit([pending, completions, finishesOnRun]() {
    runCatching(*pending);
    // What the task writes is written: the notice to the JS thread is all that is left.
    if (finishesOnRun) finishRunningWork();
    // The queue is unbounded, so this never blocks while holding the lock. When the
    // environment is gone the task is leaked: its references cannot be released.
    std::lock_guard<std::mutex> lock(completions->mutex);
    if (completions->alive) completions->function.BlockingCall(pending);
  });
  return promise;
}

}  // namespace

Napi::Promise schedule(Napi::Env env, Device device, std::unique_ptr<AsyncTask> task) {
  return scheduleWith(env, std::move(task), !device.isCuda(),
                      [device](std::function<void()> work) { submitToDevice(device, std::move(work)); });
}

Napi::Promise settleNow(Napi::Env env, std::unique_ptr<AsyncTask> task) {
  PendingTask pending{std::move(task), Napi::Promise::Deferred::New(env), false, std::string(), ErrorCode::Internal};
  JsThreadWork charged(env);
  runCatching(pending);
  settleWith(env, pending);
  return pending.deferred.Promise();
}

bool canSettleNow(Napi::Env env, Device device) {
  // A task whose work is done may still wait for its turn on the JS thread: settling a
  // later call now would resolve them out of call order.
  Completions& completions = *addonState(env).completions;
  noteLoopTurn(completions);
  return !device.isCuda() && completions.pending == 0 && completions.jsThreadMs < kJsThreadMsBetweenTurns &&
         deviceIsIdle(device);
}

Napi::Promise scheduleOnQueue(Napi::Env env, const std::string& queue, Device device, std::unique_ptr<AsyncTask> task) {
  return scheduleWith(env, std::move(task), !device.isCuda(),
                      [&queue, device](std::function<void()> work) { submitToQueue(queue, device, std::move(work)); });
}

}  // namespace binding
}  // namespace hb
