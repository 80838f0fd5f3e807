// Dynamic embedding tables (native/embedding/dynamic_table.h) for lib/embedding/dynamic_table.ts:
// made, given slots, read out (snapshot) and put back (restore) as host tensors; every
// operation that touches rows is queued on the executor of the rows' device, behind the
// steps that use the table.
#include <cmath>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/embedding/dynamic_table.h"

namespace hb {
namespace binding {

namespace {

int64_t integerField(const Napi::Object& spec, const char* key, double fallback, double min, double max) {
  const Napi::Value v = spec.Get(key);
  const double x = v.IsUndefined() ? fallback : numberArgument(v, key);
  HB_CHECK(std::floor(x) == x && x >= min && x <= max, "dynamic table: ", key, " must be an integer in [", min, ", ", max,
           "], got ", x);
  return int64_t(x);
}

int64_t tableId(const Napi::Value& value) {
  const double id = numberArgument(value, "table");
  HB_CHECK(std::floor(id) == id && id >= 1, "dynamic table: bad id ", id);
  return int64_t(id);
}

// dynamicTableCreate({ name, dim, init, capacityRows?, admitMinCount, evictAfterSteps, maxRows, device? })
//   -> { id, handle: int64 [1] tensor naming it in plans, values: [capacity, dim] tensor on `device`
//   ('cpu' unless given: the rows' pool; the index is always in host memory) }
Napi::Value dynamicTableCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "dynamicTableCreate: spec must be an object");
  Napi::Object spec = info[0].As<Napi::Object>();
  DynamicTableConfig c;
  c.name = stringArgument(spec.Get("name"), "name");
  c.dim = integerField(spec, "dim", 0, 1, 1 << 20);
  if (!spec.Get("init").IsObject()) throw Napi::TypeError::New(env, "dynamicTableCreate: init must be an initializer spec");
  c.init = fillSpecArgument(spec.Get("init").As<Napi::Object>(), {1, c.dim});
  c.admitMinCount = integerField(spec, "admitMinCount", 1, 1, 1e15);
  c.evictAfterSteps = integerField(spec, "evictAfterSteps", 0, 0, 1e15);
  c.maxRows = integerField(spec, "maxRows", 0, 0, 1e15);
  c.capacityRows = integerField(spec, "capacityRows", double(defaultDynamicCapacity(c.dim)), 1, 1e15);
  const Napi::Value device = spec.Get("device");
  c.device = device.IsUndefined() ? Device::cpu() : parseUsableDevice(stringArgument(device, "device"), "dynamicTableCreate: device");
  auto table = std::make_shared<DynamicTable>(c);
  const int64_t id = registerDynamicTable(table);
  // The handle's memory holds the table: it lives while JS or a plan holds the handle.
  auto* idCell = new int64_t(id);
  Tensor handle{Buffer::wrapHost(idCell, 8, [idCell, table]() { delete idCell; }), DType::Int64, {1}};
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", Napi::Number::New(env, double(id)));
  out.Set("handle", TensorHandle::wrap(env, handle));
  out.Set("values", TensorHandle::wrap(env, table->values()));
  out.Set("capacityRows", Napi::Number::New(env, double(table->config().capacityRows)));
  return out;
}

// dynamicTableAddSlot(id, initial, perRow) -> tensor. Synchronous: an optimizer makes its
// slots while the model is built, before any step runs.
Napi::Value dynamicTableAddSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto table = findDynamicTable(tableId(info[0]), "dynamicTableAddSlot");
  const double initial = numberArgument(info[1], "initial");
  HB_CHECK(std::isfinite(initial), "dynamicTableAddSlot: initial must be finite");
  const bool perRow = info[2].ToBoolean();
  return TensorHandle::wrap(env, table->addSlot(float(initial), perRow));
}

Napi::Value dynamicTableStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DynamicTableStats s = findDynamicTable(tableId(info[0]), "dynamicTableStats")->stats();
  Napi::Object out = Napi::Object::New(env);
  auto set = [&](const char* key, int64_t v) { out.Set(key, Napi::Number::New(env, double(v))); };
  set("rows", s.rows);
  set("pending", s.pending);
  set("capacityRows", s.capacityRows);
  set("admitted", s.admitted);
  set("evicted", s.evicted);
  set("hits", s.hits);
  set("misses", s.misses);
  set("rowBytes", s.rowBytes);
  set("slotRowBytes", s.slotRowBytes);
  set("residentBytes", s.residentBytes);
  set("indexBytes", s.indexBytes);
  set("freeRows", s.freeRows);
  return out;
}

// dynamicTableSnapshot(id, changesOnly) -> Promise<{ ids, values, slots, meta, pendingIds, pendingMeta, removedIds }>
Napi::Value dynamicTableSnapshot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto table = findDynamicTable(tableId(info[0]), "dynamicTableSnapshot");
  const bool changesOnly = info[1].ToBoolean();
  auto snap = std::make_shared<DynamicTableSnapshot>();
  return schedule(env, table->config().device, makeTask([table, changesOnly, snap] { *snap = table->snapshot(changesOnly); },
                                               [snap](Napi::Env env) -> Napi::Value {
                                                 Napi::Object out = Napi::Object::New(env);
                                                 out.Set("ids", TensorHandle::wrap(env, snap->ids));
                                                 out.Set("values", TensorHandle::wrap(env, snap->values));
                                                 Napi::Array slots = Napi::Array::New(env, snap->slots.size());
                                                 for (size_t k = 0; k < snap->slots.size(); ++k) slots.Set(uint32_t(k), TensorHandle::wrap(env, snap->slots[k]));
                                                 out.Set("slots", slots);
                                                 out.Set("meta", TensorHandle::wrap(env, snap->meta));
                                                 out.Set("pendingIds", TensorHandle::wrap(env, snap->pendingIds));
                                                 out.Set("pendingMeta", TensorHandle::wrap(env, snap->pendingMeta));
                                                 out.Set("removedIds", TensorHandle::wrap(env, snap->removedIds));
                                                 return out;
                                               }));
}

// dynamicTableMarkSaved(id, step) -> Promise<void>
Napi::Value dynamicTableMarkSaved(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto table = findDynamicTable(tableId(info[0]), "dynamicTableMarkSaved");
  const double step = numberArgument(info[1], "step");
  HB_CHECK(std::floor(step) == step && step >= 0, "dynamicTableMarkSaved: step must be an integer >= 0");
  return schedule(env, table->config().device, makeTask([table, step] { table->markSaved(int64_t(step)); },
                                               [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

Tensor optionalTensor(const Napi::Object& o, const char* key) {
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined() || v.IsNull()) return Tensor{};
  return TensorHandle::unwrap(v, key);
}

// dynamicTableRestore(id, saved, replace, worldSize, rank) -> Promise<void>
Napi::Value dynamicTableRestore(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto table = findDynamicTable(tableId(info[0]), "dynamicTableRestore");
  if (!info[1].IsObject()) throw Napi::TypeError::New(env, "dynamicTableRestore: saved must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  DynamicTableSnapshot saved;
  saved.ids = optionalTensor(o, "ids");
  saved.values = optionalTensor(o, "values");
  saved.meta = optionalTensor(o, "meta");
  saved.pendingIds = optionalTensor(o, "pendingIds");
  saved.pendingMeta = optionalTensor(o, "pendingMeta");
  saved.removedIds = optionalTensor(o, "removedIds");
  if (o.Get("slots").IsArray()) {
    Napi::Array slots = o.Get("slots").As<Napi::Array>();
    for (uint32_t k = 0; k < slots.Length(); ++k) {
      const Napi::Value v = slots.Get(k);
      saved.slots.push_back(v.IsUndefined() || v.IsNull() ? Tensor{} : TensorHandle::unwrap(v, "slots[k]"));
    }
  }
  std::vector<const Tensor*> given{&saved.ids, &saved.values, &saved.meta, &saved.pendingIds, &saved.pendingMeta, &saved.removedIds};
  for (const Tensor& slot : saved.slots) given.push_back(&slot);
  for (const Tensor* t : given) {
    HB_CHECK_CODE(!t->buffer || !t->device().isCuda(), Device, "dynamicTableRestore: tensors must be in host memory");
  }
  const bool replace = info[2].ToBoolean();
  const int64_t worldSize = int64_t(numberArgument(info[3], "worldSize"));
  const int64_t rank = int64_t(numberArgument(info[4], "rank"));
  const std::string who = "restore of dynamic table '" + table->config().name + "'";
  return schedule(env, table->config().device, makeTask([table, saved, replace, worldSize, rank, who] { table->restore(saved, replace, worldSize, rank, who); },
                                               [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

Napi::Value dynamicTableRelease(const Napi::CallbackInfo& info) {
  releaseDynamicTable(tableId(info[0]));
  return info.Env().Undefined();
}

}  // namespace

void exportDynamicTable(Napi::Env env, Napi::Object exports) {
  exports.Set("dynamicTableCreate", Napi::Function::New(env, guarded<dynamicTableCreate>, "dynamicTableCreate"));
  exports.Set("dynamicTableAddSlot", Napi::Function::New(env, guarded<dynamicTableAddSlot>, "dynamicTableAddSlot"));
  exports.Set("dynamicTableStats", Napi::Function::New(env, guarded<dynamicTableStats>, "dynamicTableStats"));
  exports.Set("dynamicTableSnapshot", Napi::Function::New(env, guarded<dynamicTableSnapshot>, "dynamicTableSnapshot"));
  exports.Set("dynamicTableMarkSaved", Napi::Function::New(env, guarded<dynamicTableMarkSaved>, "dynamicTableMarkSaved"));
  exports.Set("dynamicTableRestore", Napi::Function::New(env, guarded<dynamicTableRestore>, "dynamicTableRestore"));
  exports.Set("dynamicTableRelease", Napi::Function::New(env, guarded<dynamicTableRelease>, "dynamicTableRelease"));
}

}  // namespace binding
}  // namespace hb
