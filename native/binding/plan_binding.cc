// planCreate / planRun: a compiled graph (lib/graph/compile.ts) as a native plan, and
// one call per step that runs it on the executor of the plan's device.
#include <cmath>
#include <cstring>
#include <memory>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/optimizer_arguments.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/exec/plan.h"

namespace hb {
namespace binding {

namespace {

using PlanRef = std::shared_ptr<Plan>;

Napi::Array arrayField(const Napi::Object& o, const char* key, const char* owner) {
  Napi::Value v = o.Get(key);
  if (!v.IsArray()) throw Napi::TypeError::New(o.Env(), std::string(owner) + "." + key + " must be an array");
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
    HB_CHECK(std::floor(x) == x && x >= 0 && x < 2147483647.0, "plan: ", key, " must hold indices");
    out.push_back(int(x));
  }
  return out;
}

std::vector<int64_t> planShape(const Napi::Value& value) {
  if (!value.IsArray()) throw Napi::TypeError::New(value.Env(), "plan: a value's shape must be an array");
  Napi::Array a = value.As<Napi::Array>();
  std::vector<int64_t> shape;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const double x = numberArgument(a.Get(i), "plan: shape");
    HB_CHECK(std::floor(x) == x && x >= -1 && x < 9007199254740992.0, "plan: bad dimension ", x);
    shape.push_back(int64_t(x));
  }
  return shape;
}

PlanValue::Kind valueKind(const std::string& kind) {
  if (kind == "temp") return PlanValue::Kind::Temp;
  if (kind == "param") return PlanValue::Kind::Param;
  if (kind == "feed") return PlanValue::Kind::Feed;
  if (kind == "produced") return PlanValue::Kind::Produced;
  if (kind == "alias") return PlanValue::Kind::Alias;
  fail("plan: unknown value kind '", kind, "'");
}

PlanFeed::Kind feedKind(const std::string& kind) {
  if (kind == "dense") return PlanFeed::Kind::Dense;
  if (kind == "ids") return PlanFeed::Kind::Ids;
  if (kind == "rowSplits") return PlanFeed::Kind::RowSplits;
  if (kind == "weights") return PlanFeed::Kind::Weights;
  fail("plan: unknown feed kind '", kind, "'");
}

PlanStep parseStep(const Napi::Object& o) {
  PlanStep s;
  const std::string kind = stringArgument(o.Get("kind"), "plan step kind");
  s.name = stringArgument(o.Get("name"), "plan step name");
  if (kind == "kernel") {
    s.kind = PlanStep::Kind::Kernel;
    s.kernel = findKernel(stringArgument(o.Get("kernel"), "plan step kernel"));
    s.inputs = intList(o, "inputs");
    s.outputs = intList(o, "outputs");
    if (!o.Get("attrs").IsUndefined()) {
      Napi::Array a = arrayField(o, "attrs", "plan step");
      for (uint32_t i = 0; i < a.Length(); ++i) {
        const double x = numberArgument(a.Get(i), "plan step attrs");
        HB_CHECK(!std::isnan(x), s.name, ": attrs[", i, "] is NaN");
        s.attrs.push_back(x);
      }
    }
  } else if (kind == "lookup") {
    s.kind = PlanStep::Kind::Lookup;
    s.table = intField(o, "table", -1);
    s.ids = intField(o, "ids", -1);
    s.rowSplits = intField(o, "rowSplits", -1);
    s.weights = intField(o, "weights", -1);
    s.output = intField(o, "output", -1);
    const int combiner = intField(o, "combiner", 1);
    HB_CHECK(combiner >= 0 && combiner <= 2, s.name, ": combiner must be 0, 1 or 2");
    s.combiner = Combiner(combiner);
    const double maxNorm = o.Get("maxNorm").IsUndefined() ? 0.0 : numberArgument(o.Get("maxNorm"), "maxNorm");
    HB_CHECK(std::isfinite(maxNorm) && maxNorm >= 0, s.name, ": maxNorm must be a finite number >= 0");
    s.maxNorm = float(maxNorm);
  } else if (kind == "sparseApply" || kind == "denseApply") {
    s.kind = kind == "sparseApply" ? PlanStep::Kind::SparseApply : PlanStep::Kind::DenseApply;
    s.optimizer = intField(o, "optimizer", -1);
    s.variable = intField(o, "variable", -1);
    s.slots = intList(o, "slots");
    s.lookups = intList(o, "lookups");
    s.grads = intList(o, "grads");
  } else {
    fail("plan: unknown step kind '", kind, "'");
  }
  return s;
}

// planCreate({ device?, values, params, feeds, steps, storageCount }) -> an opaque plan;
// device: 'cpu' (default), 'cuda' or 'cuda:N'.
Napi::Value planCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "planCreate: the plan must be an object");
  Napi::Object spec = info[0].As<Napi::Object>();
  const Device device = spec.Get("device").IsUndefined()
                            ? Device::cpu()
                            : parseUsableDevice(stringArgument(spec.Get("device"), "plan: device"), "plan: device");
  std::vector<PlanValue> values;
  Napi::Array valueList = arrayField(spec, "values", "plan");
  for (uint32_t i = 0; i < valueList.Length(); ++i) {
    if (!valueList.Get(i).IsObject()) throw Napi::TypeError::New(env, "plan: values must be objects");
    Napi::Object o = valueList.Get(i).As<Napi::Object>();
    PlanValue v;
    v.kind = valueKind(stringArgument(o.Get("kind"), "plan value kind"));
    v.dtype = parseDType(stringArgument(o.Get("dtype"), "plan value dtype"), "plan value dtype");
    v.shape = planShape(o.Get("shape"));
    v.index = intField(o, "index", -1);
    values.push_back(v);
  }
  std::vector<Tensor> params;
  Napi::Array paramList = arrayField(spec, "params", "plan");
  for (uint32_t i = 0; i < paramList.Length(); ++i) params.push_back(TensorHandle::unwrap(paramList.Get(i), "plan: params[i]"));
  std::vector<PlanFeed> feeds;
  Napi::Array feedList = arrayField(spec, "feeds", "plan");
  for (uint32_t i = 0; i < feedList.Length(); ++i) {
    if (!feedList.Get(i).IsObject()) throw Napi::TypeError::New(env, "plan: feeds must be objects");
    Napi::Object o = feedList.Get(i).As<Napi::Object>();
    feeds.push_back(PlanFeed{stringArgument(o.Get("name"), "plan feed name"),
                             feedKind(stringArgument(o.Get("kind"), "plan feed kind"))});
  }
  std::vector<PlanStep> steps;
  Napi::Array stepList = arrayField(spec, "steps", "plan");
  for (uint32_t i = 0; i < stepList.Length(); ++i) {
    if (!stepList.Get(i).IsObject()) throw Napi::TypeError::New(env, "plan: steps must be objects");
    steps.push_back(parseStep(stepList.Get(i).As<Napi::Object>()));
  }
  auto plan = std::make_shared<Plan>(device, std::move(values), std::move(params), std::move(feeds), std::move(steps),
                                     intField(spec, "storageCount", 0));
  return Napi::External<PlanRef>::New(env, new PlanRef(plan), [](Napi::Env, PlanRef* ref) { delete ref; });
}

PlanRef unwrapPlan(const Napi::Value& value) {
  if (!value.IsExternal()) throw Napi::TypeError::New(value.Env(), "planRun: the first argument must be a plan");
  return *value.As<Napi::External<PlanRef>>().Data();
}

Napi::Value typedArrayOf(Napi::Env env, const Tensor& t) {
  const size_t n = size_t(t.size());
  auto fill = [&](auto array) {
    if (t.bytes()) std::memcpy(array.Data(), t.buffer->data(), t.bytes());
    return array;
  };
  switch (t.dtype) {
    case DType::Float32: return fill(Napi::Float32Array::New(env, n));
    case DType::Float64: return fill(Napi::Float64Array::New(env, n));
    case DType::Int32: return fill(Napi::Int32Array::New(env, n));
    case DType::Int64: return fill(Napi::BigInt64Array::New(env, n));
  }
  return env.Undefined();
}

// planRun(plan, batchSize, feeds: TypedArray[], hypers: object[], fetch: number[])
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
  plan->checkFeeds(int64_t(batch), feeds);
  auto result = std::make_shared<Plan::RunResult>();
  return schedule(env, plan->device(), makeTask(
      [plan, feeds, hypers, fetch, batch, result] { *result = plan->run(int64_t(batch), feeds, hypers, fetch); },
      [result](Napi::Env env) -> Napi::Value {
        Napi::Object out = Napi::Object::New(env);
        Napi::Array outputs = Napi::Array::New(env, result->fetched.size());
        for (size_t i = 0; i < result->fetched.size(); ++i) outputs.Set(uint32_t(i), typedArrayOf(env, result->fetched[i]));
        out.Set("outputs", outputs);
        out.Set("nativeMs", Napi::Number::New(env, result->nativeMs));
        return out;
      }));
}

}  // namespace

void exportPlan(Napi::Env env, Napi::Object exports) {
  exports.Set("planCreate", Napi::Function::New(env, guarded<planCreate>, "planCreate"));
  exports.Set("planRun", Napi::Function::New(env, guarded<planRun>, "planRun"));
}

}  // namespace binding
}  // namespace hb
