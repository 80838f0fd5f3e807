// planCreate / planRun: a compiled graph (lib/graph/compile.ts) as a native plan, and
// one call per step that runs it on the executor of the plan's device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/kernel_attrs.h"
#include "native/binding/optimizer_arguments.h"
#include "native/binding/tensor_handle.h"
#include "native/core/executor.h"
#include "native/core/status.h"
#include "native/distribute/process_group.h"
#include "native/distribute/world.h"
#include "native/exec/plan.h"

namespace hb {
namespace binding {

namespace {

using PlanRef = std::shared_ptr<Plan>;

Napi::Array arrayField(const Napi::Object& o, const char* key, const char* owner) {
  Napi::Value v = o.Get(key);
  if (!v.IsArray()) failWith(ErrorCode::Type, owner, ".", key, " must be an array");
  return v.As<Napi::Array>();
}

int intField(const Napi::Object& o, const char* key, int fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  const double x = numberArgument(v, key);
  HB_CHECK(std::floor(x) == x && x >= -1 && x < 2147483647.0, "plan: ", key, " must be an integer, got ", x);
  return int(x);
}

std::vector<int> intList(const Napi::Object& o, const char* key) {
  std::vector<int> out;
  if (o.Get(key).IsUndefined()) return out;
  Napi::Array a = arrayField(o, key, "plan step");
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const double x = numberArgument(a.Get(i), key);
    HB_CHECK(std::floor(x) == x && x >= -1 && x < 2147483647.0, "plan: ", key, " must hold value ids (-1: absent)");
    out.push_back(int(x));
  }
  return out;
}

std::vector<int64_t> planShape(const Napi::Value& value, const char* what) {
  if (!value.IsArray()) failWith(ErrorCode::Type, what, ": a shape must be an array");
  Napi::Array a = value.As<Napi::Array>();
  std::vector<int64_t> shape;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const double x = numberArgument(a.Get(i), what);
    HB_CHECK(std::floor(x) == x && x >= double(kDynamicDim) && x < 9007199254740992.0, what, ": bad dimension ", x);
    shape.push_back(int64_t(x));
  }
  return shape;
}

PlanValue::Kind valueKind(const std::string& kind) {
  if (kind == "temp") return PlanValue::Kind::Temp;
  if (kind == "param") return PlanValue::Kind::Param;
  if (kind == "feed") return PlanValue::Kind::Feed;
  if (kind == "alias") return PlanValue::Kind::Alias;
  if (kind == "dynamic") return PlanValue::Kind::Dynamic;
  fail("plan: unknown value kind '", kind, "'");
}

Napi::Object objectAt(const Napi::Array& list, uint32_t i, const char* what) {
  if (!list.Get(i).IsObject()) failWith(ErrorCode::Type, "plan: ", what, "[", i, "] must be an object");
  return list.Get(i).As<Napi::Object>();
}

// { name, dtype, shape } of a parameter (fixed shape) or a feed (batch / dynamic dims).
PlanTensorSpec namedTensorSpec(const Napi::Object& o, const std::string& what, bool runTimeDims) {
  PlanTensorSpec t;
  t.name = stringArgument(o.Get("name"), (what + " name").c_str());
  t.dtype = parseDType(stringArgument(o.Get("dtype"), (what + " dtype").c_str()), (what + " dtype").c_str());
  t.shape = runTimeDims ? planShape(o.Get("shape"), (what + " shape").c_str()) : shapeArgument(o.Get("shape"), (what + " shape").c_str());
  return t;
}

PlanStep parseStep(const Napi::Object& o) {
  PlanStep s;
  s.name = stringArgument(o.Get("name"), "plan step name");
  s.kernel = &findKernel(stringArgument(o.Get("kernel"), "plan step kernel"));
  s.inputs = intList(o, "inputs");
  s.outputs = intList(o, "outputs");
  readKernelAttrs(*s.kernel, o.Get("attrs"), s.name, &s.attrs, &s.listAttrs);
  // Optional (plans exported before profiles had it run as forward steps).
  const Napi::Value phase = o.Get("phase");
  if (!phase.IsUndefined()) {
    const std::string name = stringArgument(phase, ("plan step " + s.name + " phase").c_str());
    const int32_t found = int32_t(std::find(kStepPhaseNames, kStepPhaseNames + kStepPhaseCount, name) - kStepPhaseNames);
    HB_CHECK_CODE(found < int32_t(StepPhase::Exchange), InvalidArgument, "plan step ", s.name,
                  ": phase must be 'forward', 'backward' or 'update', got '", name, "'");
    s.phase = StepPhase(found);
  }
  return s;
}

// planCreate(spec, params) -> an opaque plan. spec is lib/graph/plan_spec.ts's PlanSpec
// (plain data: { version, device, values, params, feeds, steps, storageCount }); params
// are the tensors bound to spec.params, in order.
Napi::Value planCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) failWith(ErrorCode::Type, "planCreate: the plan must be an object");
  Napi::Object spec = info[0].As<Napi::Object>();
  const double version = spec.Get("version").IsNumber() ? spec.Get("version").As<Napi::Number>().DoubleValue() : -1;
  HB_CHECK(version == kKernelRegistryVersion, "planCreate: the plan is in format ", version,
           " but this addon runs format ", kKernelRegistryVersion, "; rebuild the addon or recompile the plan");
  const Device device = spec.Get("device").IsUndefined()
                            ? Device::cpu()
                            : parseUsableDevice(stringArgument(spec.Get("device"), "plan: device"), "plan: device");
  std::vector<PlanValue> values;
  Napi::Array valueList = arrayField(spec, "values", "plan");
  for (uint32_t i = 0; i < valueList.Length(); ++i) {
    Napi::Object o = objectAt(valueList, i, "values");
    PlanValue v;
    v.kind = valueKind(stringArgument(o.Get("kind"), "plan value kind"));
    v.dtype = parseDType(stringArgument(o.Get("dtype"), "plan value dtype"), "plan value dtype");
    v.shape = planShape(o.Get("shape"), "plan value shape");
    v.index = intField(o, "index", -1);
    values.push_back(v);
  }
  std::vector<PlanParam> paramSpecs;
  Napi::Array paramSpecList = arrayField(spec, "params", "plan");
  for (uint32_t i = 0; i < paramSpecList.Length(); ++i) {
    paramSpecs.push_back(namedTensorSpec(objectAt(paramSpecList, i, "params"), "plan param", false));
  }
  std::vector<Tensor> params;
  if (!info[1].IsUndefined()) {
    if (!info[1].IsArray()) failWith(ErrorCode::Type, "planCreate: params must be an array of tensors");
    Napi::Array paramList = info[1].As<Napi::Array>();
    for (uint32_t i = 0; i < paramList.Length(); ++i) {
      const std::string what = "planCreate: params[" + std::to_string(i) + "]";
      params.push_back(TensorHandle::unwrap(paramList.Get(i), what.c_str()));
    }
  }
  std::vector<PlanFeed> feeds;
  Napi::Array feedList = arrayField(spec, "feeds", "plan");
  for (uint32_t i = 0; i < feedList.Length(); ++i) feeds.push_back(namedTensorSpec(objectAt(feedList, i, "feeds"), "plan feed", true));
  std::vector<PlanStep> steps;
  Napi::Array stepList = arrayField(spec, "steps", "plan");
  for (uint32_t i = 0; i < stepList.Length(); ++i) steps.push_back(parseStep(objectAt(stepList, i, "steps")));
  auto plan = std::make_shared<Plan>(device, std::move(values), std::move(paramSpecs), std::move(params),
                                     std::move(feeds), std::move(steps), intField(spec, "storageCount", 0));
  return Napi::External<PlanRef>::New(env, new PlanRef(plan), [](Napi::Env, PlanRef* ref) { delete ref; });
}

PlanRef unwrapPlan(const Napi::Value& value) {
  if (!value.IsExternal()) throw Napi::TypeError::New(value.Env(), "planRun: the first argument must be a plan");
  return *value.As<Napi::External<PlanRef>>().Data();
}

Napi::Value typedArrayOf(Napi::Env env, const Tensor& t) {
  Napi::TypedArray array = newTypedArray(env, t.dtype, size_t(t.size()));
  if (t.bytes()) std::memcpy(static_cast<char*>(array.ArrayBuffer().Data()) + array.ByteOffset(), t.buffer->data(), t.bytes());
  return array;
}

// A step whose last run, with no smaller a batch and no more values fed, took up to this
// much native time may run on the JS thread: a batch-1 serving request's kernels take
// ~40 us, against ~100 us for the trip to the worker and back and the JS thread's wake-up
// (2-vCPU EPYC VM).
constexpr double kStepOnJsThreadMs = 0.25;
// Then after so many calls in a row on the JS thread without the event loop turning, one
// goes through the worker anyway, so a loop of them over input already in memory (an
// evaluation, a predict loop) still lets the loop turn every few milliseconds; requests
// that each come in through the loop (a server's) never need to.
constexpr int kStepsOnJsThreadInARow = 16;

// Only a host plan with nothing queued, no earlier promise waiting, no exchange with other
// ranks (its run would wait on them) and no optimizer (training loops turn the event loop
// between steps: timers, signals, input).
bool runsOnJsThread(Napi::Env env, Plan& plan, int64_t batch, int64_t fedValues) {
  if (plan.device().isCuda() || plan.hasExchanges() || plan.optimizerCount() > 0) return false;
  const Plan::RecentRuns& last = plan.recentRuns();
  if (last.batch < 0 || batch > last.batch || fedValues > last.fedValues || last.nativeMs > kStepOnJsThreadMs ||
      jsThreadCallsSinceLoopTurned(env) >= kStepsOnJsThreadInARow) {
    return false;
  }
  return canSettleNow(env, plan.device());
}

// planRun(plan, batchSize, feeds: TypedArray[], hypers: object[], fetch: number[], globalStep?)
//   -> Promise<{ outputs: TypedArray[], nativeMs }>
Napi::Value planRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PlanRef plan = unwrapPlan(info[0]);
  const double batch = numberArgument(info[1], "planRun: batchSize");
  HB_CHECK(std::floor(batch) == batch && batch >= 0 && batch < 2147483647.0, "planRun: batchSize must be an integer >= 0");
  if (!info[2].IsArray() || !info[3].IsArray() || !info[4].IsArray()) {
    throw Napi::TypeError::New(env, "planRun: feeds, hypers and fetch must be arrays");
  }
  Napi::Array hyperList = info[3].As<Napi::Array>();
  std::vector<OptimizerHyper> hypers;
  for (uint32_t i = 0; i < hyperList.Length(); ++i) hypers.push_back(parseHyper(hyperList.Get(i)));
  std::vector<int> fetch;
  Napi::Array fetchList = info[4].As<Napi::Array>();
  for (uint32_t i = 0; i < fetchList.Length(); ++i) {
    const double id = numberArgument(fetchList.Get(i), "planRun: fetch");
    HB_CHECK(std::floor(id) == id && id >= 0 && id < double(plan->values().size()), "planRun: fetch[", i,
             "] must name a value of the plan, got ", id);
    fetch.push_back(int(id));
  }
  // Copies, made now: JS may reuse or detach its arrays while the step is queued.
  Napi::Array feedList = info[2].As<Napi::Array>();
  std::vector<Tensor> feeds;
  for (uint32_t i = 0; i < feedList.Length(); ++i) feeds.push_back(copyTypedArray(feedList.Get(i), "planRun: feeds[i]"));
  try {
    plan->checkFeeds(int64_t(batch), feeds);
  } catch (const std::exception& e) {
    // Alone, the error goes up here and now.
    const std::shared_ptr<distribute::ProcessGroup> group = distribute::worldGroup();
    if (!group || group->worldSize() == 1) throw;
    // In a job the other ranks will wait in this step's first exchange: tell them there,
    // and reject only once they have heard it (the process may end with this error; see
    // planTellPeersOfFailure).
    const std::string why = e.what();
    return schedule(env, plan->device(), makeTask(
        [plan, why, error = std::current_exception()] {
          plan->tellPeersOfFailure(0, why);
          std::rethrow_exception(error);
        },
        [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
  }
  int64_t globalStep = -1;
  if (info.Length() > 5 && !info[5].IsUndefined()) {
    const double step = numberArgument(info[5], "planRun: globalStep");
    HB_CHECK(std::floor(step) == step && step >= 0 && step < 9007199254740992.0, "planRun: globalStep must be an integer >= 0, got ", step);
    globalStep = int64_t(step);
  }
  auto result = std::make_shared<Plan::RunResult>();
  int64_t fedValues = 0;
  for (const Tensor& feed : feeds) fedValues += feed.size();
  const bool onJsThread = runsOnJsThread(env, *plan, int64_t(batch), fedValues);
  auto resolveOutputs = [plan, result, batch, fedValues, onJsThread](Napi::Env env) -> Napi::Value {
    Plan::RecentRuns& recent = plan->recentRuns();
    recent = {int64_t(batch), fedValues, result->nativeMs};
    Napi::Object out = Napi::Object::New(env);
    Napi::Array outputs = Napi::Array::New(env, result->fetched.size());
    for (size_t i = 0; i < result->fetched.size(); ++i) outputs.Set(uint32_t(i), typedArrayOf(env, result->fetched[i]));
    out.Set("outputs", outputs);
    out.Set("nativeMs", Napi::Number::New(env, result->nativeMs));
    return out;
  };
  if (onJsThread) {
    return settleNow(env, makeTask(
        [plan, feeds, hypers, fetch, batch, result, globalStep] {
          *result = plan->run(int64_t(batch), feeds, hypers, fetch, globalStep);
        },
        resolveOutputs));
  }
  // A GPU plan that reads and updates tables in host memory (embDevice: 'cpu', dynamic
  // tables) waits for work queued on the CPU's executor (their initial fill, a copy), as
  // a task on one device waits for another device's queued writes before reading them.
  std::shared_future<void> hostReady;
  if (plan->readsHostParameters()) hostReady = queueMarker(Device::cpu());
  return schedule(env, plan->device(), makeTask(
      [plan, feeds, hypers, fetch, batch, result, globalStep, hostReady] {
        if (hostReady.valid()) hostReady.wait();
        *result = plan->run(int64_t(batch), feeds, hypers, fetch, globalStep);
      },
      resolveOutputs));
}

// planTellPeersOfFailure(plan, why) -> Promise<void>: this rank will not run the step it
// was preparing (its batch failed before planRun); the other ranks, waiting in the step's
// first exchange, fail with `why` instead of waiting for the timeout. The promise settles
// once this rank's side of the exchange that tells them has completed (or failed): a
// caller that throws and lets its process end after awaiting it no longer closes its
// connections with the news still queued (a peer then reported that the rank had gone,
// not why).
Napi::Value planTellPeersOfFailure(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  PlanRef plan = unwrapPlan(info[0]);
  const std::string why = stringArgument(info[1], "planTellPeersOfFailure: why");
  return schedule(env, plan->device(), makeTask([plan, why] { plan->tellPeersOfFailure(0, why); },
                                                [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

// profileStart() -> false when a profile is already on.
Napi::Value profileStart(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), startStepProfile());
}

// profileStop() -> { planRuns, planMs, kernels: [{ kernel, phase, calls, ms, besideOthers }] }
Napi::Value profileStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const StepProfile profile = stopStepProfile();
  Napi::Object out = Napi::Object::New(env);
  out.Set("planRuns", Napi::Number::New(env, double(profile.planRuns)));
  out.Set("planMs", Napi::Number::New(env, profile.planMs));
  Napi::Array kernels = Napi::Array::New(env, profile.kernels.size());
  for (size_t i = 0; i < profile.kernels.size(); ++i) {
    const KernelTime& time = profile.kernels[i];
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("kernel", time.kernel);
    entry.Set("phase", kStepPhaseNames[int32_t(time.phase)]);
    entry.Set("calls", Napi::Number::New(env, double(time.calls)));
    entry.Set("ms", Napi::Number::New(env, time.ms));
    entry.Set("besideOthers", Napi::Number::New(env, double(time.besideOthers)));
    kernels.Set(uint32_t(i), entry);
  }
  out.Set("kernels", kernels);
  return out;
}

}  // namespace

void exportPlan(Napi::Env env, Napi::Object exports) {
  exports.Set("planCreate", Napi::Function::New(env, guarded<planCreate>, "planCreate"));
  exports.Set("planRun", Napi::Function::New(env, guarded<planRun>, "planRun"));
  exports.Set("profileStart", Napi::Function::New(env, guarded<profileStart>, "profileStart"));
  exports.Set("profileStop", Napi::Function::New(env, guarded<profileStop>, "profileStop"));
  exports.Set("planTellPeersOfFailure", Napi::Function::New(env, guarded<planTellPeersOfFailure>, "planTellPeersOfFailure"));
}

}  // namespace binding
}  // namespace hb
