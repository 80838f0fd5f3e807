// hb.nn.embeddingLookupSparse.
#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/lookup_arguments.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/embedding/embedding_lookup.h"

namespace hb {
namespace binding {

namespace {

// Lookups whose gathered rows and output together hold up to this many floats (4096
// one-id bags of dim 64: 1 MiB gathered, 1 MiB out; empty bags count too) run on the JS
// thread when the host queue is idle. Measured on a 2-vCPU EPYC VM, one-id bags from a
// 1M-row table, median time to the settled promise: 4096 bags of dim 16, 49-50 us here
// against 111-143 us queued; of dim 64, 69-105 against 93-136 us in one run and alike
// within the VM's noise in another; of dim 128, alike (~400 us). From 16384 bags on the
// two were alike, and 20 ids a bag ran slower here.
constexpr int64_t kInlineLookupFloats = int64_t(1) << 19;

// embeddingLookupSparse(table, name, values, rowSplits, weights | null, combiner, maxNorm)
Napi::Value embeddingLookupSparse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SparseLookupRequest request = readLookupArguments(info, "embeddingLookupSparse");
  request.maxNorm = float(numberArgument(info[6], "embeddingLookupSparse: maxNorm"));
  checkLookupShapes(request);
  auto out = std::make_shared<Tensor>();
  const Device device = request.table.device();
  auto task = makeTask([request, out] { *out = runSparseLookup(request); },
                       [request, out](Napi::Env env) -> Napi::Value { return TensorHandle::wrap(env, *out); });
  // A small lookup on an idle host queue runs here: the hops to the executor and back
  // cost more than its work (see kInlineLookupFloats).
  const int64_t batch = request.rowSplits.size() - 1;
  if ((request.ids.size() + batch) * request.table.shape[1] <= kInlineLookupFloats && canSettleNow(env, device)) {
    return settleNow(env, std::move(task));
  }
  return schedule(env, device, std::move(task));
}

}  // namespace

void exportEmbedding(Napi::Env env, Napi::Object exports) {
  exports.Set("embeddingLookupSparse", Napi::Function::New(env, guarded<embeddingLookupSparse>, "embeddingLookupSparse"));
}

}  // namespace binding
}  // namespace hb
