// hb.distribute's native part: the process's one process group (the world) and the
// collectives on it. Everything runs on the group's own queue, in call order, and
// settles a promise; nothing blocks the event loop while peers catch up.
//
// A rank whose arguments are wrong still takes part in the collective's header
// exchange (announceFailure), so its peers fail at once with its reason instead of
// waiting for the timeout.
#include <memory>
#include <mutex>
#include <optional>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tensor_handle.h"
#include "native/core/executor.h"
#include "native/core/status.h"
#include "native/distribute/collectives.h"
#include "native/distribute/process_group.h"
#include "native/distribute/world.h"

namespace hb {
namespace binding {

namespace {

using distribute::CollectiveKind;
using distribute::ProcessGroup;

// The group itself is in native/distribute/world.h, where compiled steps find it too.
struct World {
  std::mutex mutex;
  bool starting = false;
  bool stopping = false;  // a shutdown is queued: no new group until it has run
  Device queueDevice;  // the device the group's queue thread is bound to
};

World& world() {
  static World* w = new World();  // leaked: the queue thread may outlive static destruction
  return *w;
}

std::shared_ptr<ProcessGroup> currentGroup(const char* what) {
  std::shared_ptr<ProcessGroup> group = distribute::worldGroup();
  HB_CHECK(group != nullptr, what, ": hb.distribute.init() has not been called (or shutdown() was)");
  return group;
}

Device queueDevice() {
  World& w = world();
  std::lock_guard<std::mutex> lock(w.mutex);
  return w.queueDevice;
}

int intField(const Napi::Object& spec, const char* key, const char* argument) {
  const double v = numberArgument(spec.Get(key), argument);
  HB_CHECK(v == double(int64_t(v)) && v >= -2147483648.0 && v <= 2147483647.0, argument, " must be an integer, got ", v);
  return int(v);
}

// distInit({ rank, worldSize, localRank, localWorldSize, masterAddr, masterPort,
// backend, device, timeoutMs }) -> Promise<void>
Napi::Value distInit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "distribute.init: options must be an object");
  Napi::Object spec = info[0].As<Napi::Object>();
  distribute::ProcessGroupConfig config;
  config.rank = intField(spec, "rank", "RANK");
  config.worldSize = intField(spec, "worldSize", "WORLD_SIZE");
  config.localRank = intField(spec, "localRank", "LOCAL_RANK");
  config.localWorldSize = intField(spec, "localWorldSize", "LOCAL_WORLD_SIZE");
  config.masterAddr = stringArgument(spec.Get("masterAddr"), "MASTER_ADDR");
  config.masterPort = intField(spec, "masterPort", "MASTER_PORT");
  config.backend = stringArgument(spec.Get("backend"), "backend");
  config.device = parseUsableDevice(stringArgument(spec.Get("device"), "device"), "device");
  const double timeout = numberArgument(spec.Get("timeoutMs"), "timeoutMs");
  HB_CHECK(timeout >= 1 && timeout <= 2147483647.0, "distribute.init: timeoutMs must be in 1..2^31-1, got ", timeout);
  config.timeout = std::chrono::milliseconds(int64_t(timeout));
  const Device bindTo = config.backend == "nccl" ? config.device : Device::cpu();
  {
    World& w = world();
    std::lock_guard<std::mutex> lock(w.mutex);
    HB_CHECK(distribute::worldGroup() == nullptr && !w.starting, "distribute.init: already initialized in this process; call shutdown() first");
    HB_CHECK(!w.stopping, "distribute.init: the previous group's shutdown() has not finished; await it first");
    w.starting = true;
    w.queueDevice = bindTo;
  }
  return scheduleOnQueue(env, distribute::processGroupQueue(), bindTo, makeTask(
      [config] {
        World& w = world();
        std::shared_ptr<ProcessGroup> group;
        try {
          group = std::make_shared<ProcessGroup>(config);
        } catch (...) {
          std::lock_guard<std::mutex> lock(w.mutex);
          w.starting = false;
          throw;
        }
        std::lock_guard<std::mutex> lock(w.mutex);
        distribute::setWorldGroup(group);
        w.starting = false;
      },
      [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

// distShutdown() -> Promise<void>; a no-op when not initialized. The group leaves the
// world at once (later collectives are refused), and is torn down on its queue after
// the collectives queued before this call.
Napi::Value distShutdown(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto group = std::make_shared<std::shared_ptr<ProcessGroup>>();
  Device device;
  {
    World& w = world();
    std::lock_guard<std::mutex> lock(w.mutex);
    *group = distribute::takeWorldGroup();
    device = w.queueDevice;
    if (*group) w.stopping = true;
  }
  return scheduleOnQueue(env, distribute::processGroupQueue(), device, makeTask(
      [group] {
        if (!*group) return;
        struct Stopped {
          ~Stopped() {
            World& w = world();
            std::lock_guard<std::mutex> lock(w.mutex);
            w.stopping = false;
          }
        } stopped;
        (*group)->shutdown();
      },
      [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

// Reads a collective's arguments; when they fail and a world of several processes is
// up, the failure is announced to the peers and this rank's promise rejects with it.
template <typename Parse, typename Run, typename Resolve>
Napi::Value collective(const Napi::CallbackInfo& info, CollectiveKind kind, Parse parse, Run run, Resolve resolve) {
  Napi::Env env = info.Env();
  const char* name = distribute::collectiveName(kind);
  std::shared_ptr<ProcessGroup> group = currentGroup(name);
  decltype(parse()) args;
  try {
    args = parse();
  } catch (const std::exception& e) {
    if (group->backend() == "local") throw;
    std::string why = e.what();
    ErrorCode code = ErrorCode::InvalidArgument;
    if (const auto* napi = dynamic_cast<const Napi::Error*>(&e)) {
      why = napi->Message();
      code = napi->Get("name").ToString().Utf8Value() == "TypeError" ? ErrorCode::Type : code;
    } else if (const auto* ours = dynamic_cast<const Error*>(&e)) {
      code = ours->code();
    }
    auto announced = std::make_shared<std::string>();
    return scheduleOnQueue(env, distribute::processGroupQueue(), queueDevice(), makeTask(
        [group, kind, why, announced] {
          try {
            distribute::announceFailure(*group, kind, why);
          } catch (const Error& e) {
            // Our own reason is what this rank reports, unless the exchange itself failed.
            if (e.code() == ErrorCode::Communication || e.code() == ErrorCode::Timeout) *announced = e.what();
          }
        },
        [why, code, announced, name](Napi::Env) -> Napi::Value {
          if (!announced->empty()) failWith(ErrorCode::Communication, *announced);
          failWith(code, name, ": ", why);
        }));
  }
  auto result = std::make_shared<decltype(run(*group, args))>();
  return scheduleOnQueue(env, distribute::processGroupQueue(), queueDevice(), makeTask(
      [group, args, result, run] { *result = run(*group, args); },
      [result, resolve](Napi::Env env) -> Napi::Value { return resolve(env, *result); }));
}

struct TensorArgs {
  Tensor tensor;
  std::shared_future<void> ready;  // everything queued on the tensor's device before this call
};

TensorArgs tensorArgs(const Napi::Value& value, const char* argument) {
  TensorArgs args;
  args.tensor = TensorHandle::unwrap(value, argument);
  args.ready = queueMarker(args.tensor.device());
  return args;
}

distribute::ReduceOp reduceOpArgument(const Napi::Value& value) {
  const std::string op = value.IsUndefined() ? "sum" : stringArgument(value, "op");
  if (op == "sum") return distribute::ReduceOp::Sum;
  if (op == "mean") return distribute::ReduceOp::Mean;
  if (op == "max") return distribute::ReduceOp::Max;
  if (op == "min") return distribute::ReduceOp::Min;
  fail("op must be 'sum', 'mean', 'max' or 'min', got '", op, "'");
}

Napi::Object rowsResult(Napi::Env env, const distribute::RowsResult& result, const char* countsKey) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("tensor", TensorHandle::wrap(env, result.tensor));
  Napi::Array counts = Napi::Array::New(env, result.rowsPerRank.size());
  for (size_t i = 0; i < result.rowsPerRank.size(); ++i) counts.Set(uint32_t(i), double(result.rowsPerRank[i]));
  out.Set(countsKey, counts);
  return out;
}

// distAllreduce(tensor, op) -> Promise<tensor>
Napi::Value distAllreduce(const Napi::CallbackInfo& info) {
  struct Args {
    TensorArgs in;
    distribute::ReduceOp op = distribute::ReduceOp::Sum;
  };
  return collective(
      info, CollectiveKind::Allreduce,
      [&] { return Args{tensorArgs(info[0], "allreduce: tensor"), reduceOpArgument(info[1])}; },
      [](ProcessGroup& g, const Args& a) {
        a.in.ready.wait();
        return distribute::allreduce(g, a.in.tensor, a.op);
      },
      [](Napi::Env env, const Tensor& t) -> Napi::Value { return TensorHandle::wrap(env, t); });
}

// distAllgather(tensor) -> Promise<{ tensor, rowsPerRank }>
Napi::Value distAllgather(const Napi::CallbackInfo& info) {
  return collective(
      info, CollectiveKind::Allgather, [&] { return tensorArgs(info[0], "allgather: tensor"); },
      [](ProcessGroup& g, const TensorArgs& a) {
        a.ready.wait();
        return distribute::allgather(g, a.tensor);
      },
      [](Napi::Env env, const distribute::RowsResult& r) -> Napi::Value { return rowsResult(env, r, "rowsPerRank"); });
}

// distAlltoallv(tensor, sendCounts, wireDtype?) -> Promise<{ tensor, recvCounts }>
Napi::Value distAlltoallv(const Napi::CallbackInfo& info) {
  struct Args {
    TensorArgs in;
    std::vector<int64_t> sendCounts;
    std::optional<DType> wire;
  };
  return collective(
      info, CollectiveKind::Alltoallv,
      [&] {
        Args a;
        a.sendCounts = shapeArgument(info[1], "sendCounts");
        if (!info[2].IsUndefined() && !info[2].IsNull()) {
          const DType wire = parseDType(stringArgument(info[2], "wireDtype"), "wireDtype");
          HB_CHECK_CODE(wire == DType::Float16 || wire == DType::BFloat16, Type,
                        "wireDtype must be 'float16' or 'bfloat16', got '", dtypeName(wire), "'");
          a.wire = wire;
        }
        a.in = tensorArgs(info[0], "alltoallv: tensor");
        return a;
      },
      [](ProcessGroup& g, const Args& a) {
        a.in.ready.wait();
        return distribute::alltoallv(g, a.in.tensor, a.sendCounts, a.wire);
      },
      [](Napi::Env env, const distribute::RowsResult& r) -> Napi::Value { return rowsResult(env, r, "recvCounts"); });
}

// distBroadcast(tensor, root) -> Promise<tensor>
Napi::Value distBroadcast(const Napi::CallbackInfo& info) {
  struct Args {
    TensorArgs in;
    int root = 0;
  };
  return collective(
      info, CollectiveKind::Broadcast,
      [&] {
        const double root = info[1].IsUndefined() ? 0.0 : numberArgument(info[1], "root");
        HB_CHECK(root == double(int(root)), "root must be an integer rank, got ", root);
        return Args{tensorArgs(info[0], "broadcast: tensor"), int(root)};
      },
      [](ProcessGroup& g, const Args& a) {
        a.in.ready.wait();
        return distribute::broadcast(g, a.in.tensor, a.root);
      },
      [](Napi::Env env, const Tensor& t) -> Napi::Value { return TensorHandle::wrap(env, t); });
}

// distBarrier() -> Promise<void>
Napi::Value distBarrier(const Napi::CallbackInfo& info) {
  return collective(
      info, CollectiveKind::Barrier, [] { return 0; },
      [](ProcessGroup& g, int) {
        distribute::barrier(g);
        return 0;
      },
      [](Napi::Env env, int) -> Napi::Value { return env.Undefined(); });
}

// distStats() -> { collectives, bytesSent, bytesReceived, seconds, transport[, whyNotSharedMemory] }
// of this rank's group.
Napi::Value distStats(const Napi::CallbackInfo& info) {
  const auto group = currentGroup("stats");
  const distribute::ExchangeStats stats = group->stats();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("transport", group->transport());
  if (group->transport() == "tcp") out.Set("whyNotSharedMemory", group->whyNotSharedMemory());
  out.Set("collectives", double(stats.collectives));
  out.Set("bytesSent", double(stats.bytesSent));
  out.Set("bytesReceived", double(stats.bytesReceived));
  out.Set("seconds", stats.seconds);
  return out;
}

}  // namespace

void exportDistribute(Napi::Env env, Napi::Object exports) {
  exports.Set("distInit", Napi::Function::New(env, guarded<distInit>, "distInit"));
  exports.Set("distShutdown", Napi::Function::New(env, guarded<distShutdown>, "distShutdown"));
  exports.Set("distAllreduce", Napi::Function::New(env, guarded<distAllreduce>, "distAllreduce"));
  exports.Set("distAllgather", Napi::Function::New(env, guarded<distAllgather>, "distAllgather"));
  exports.Set("distAlltoallv", Napi::Function::New(env, guarded<distAlltoallv>, "distAlltoallv"));
  exports.Set("distBroadcast", Napi::Function::New(env, guarded<distBroadcast>, "distBroadcast"));
  exports.Set("distBarrier", Napi::Function::New(env, guarded<distBarrier>, "distBarrier"));
  exports.Set("distStats", Napi::Function::New(env, guarded<distStats>, "distStats"));
}

}  // namespace binding
}  // namespace hb
