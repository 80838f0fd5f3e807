// hb.nn.embeddingLookupSparse.
#include <algorithm>

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

// Lookups whose gathered rows and output together hold up to this many floats (16 MiB:
// 16384 one-id bags of dim 64, 4096 bags of 20 ids of dim 16; empty bags count too) run
// on the JS thread when the host queue is idle: the hops to the executor and back, and
// the JS thread's wake-up, cost 15-25 us whatever the size. Measured on a 2-vCPU EPYC VM
// (Zen 4), 1M-row tables, median to the settled promise, queued against here: 4096 bags
// x 20 ids of dim 16, 92-100 against 71 us; 16384 one-id bags of dim 64, 110 against
// 93 us; 4096 x 20 of dim 64 (5.5M floats, queued), 377-390 against 363-365 us. The JS
// thread waits up to ~0.5 ms here, and canSettleNow bounds how long it goes on so.
constexpr int64_t kInlineLookupFloats = int64_t(1) << 22;
// A row narrower than a cache line still costs one random line to read: each gathered row
// counts as at least 16 floats. And at most 2^17 ids: the kernel splits its work by bag,
// so one huge bag runs on one thread.
constexpr int64_t kFloatsPerLine = 16;
constexpr int64_t kInlineLookupIds = int64_t(1) << 17;

// embeddingLookupSparse(table, name, values, rowSplits, weights | null, combiner, maxNorm)
Napi::Value embeddingLookupSparse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SparseLookupRequest request = readLookupArguments(info, "embeddingLookupSparse", IdArrays::Borrowed);
  request.maxNorm = float(numberArgument(info[6], "embeddingLookupSparse: maxNorm"));
  checkLookupShapes(request);
  auto out = std::make_shared<Tensor>();
  const Device device = request.table.device();
  // A small lookup on an idle host queue runs here: the hops to the executor and back
  // cost more than its work (see kInlineLookupFloats). It reads the id arrays where they
  // are; a queued one reads copies (JS may change the arrays meanwhile), which for 4096
  // bags of 20 int64 ids is 640 KiB more to write per call.
  const int64_t batch = request.rowSplits.size() - 1;
  const int64_t ids = request.ids.size();
  const int64_t floats = (ids + batch) * std::max<int64_t>(request.table.shape[1], kFloatsPerLine);
  const bool here = ids <= kInlineLookupIds && floats <= kInlineLookupFloats && canSettleNow(env, device);
  if (!here) ownLookupIds(&request);
  auto task = makeTask([request, out] { *out = runSparseLookup(request); },
                       [out](Napi::Env env) -> Napi::Value { return TensorHandle::wrap(env, *out); });
  return here ? settleNow(env, std::move(task)) : schedule(env, device, std::move(task));
}

}  // namespace

void exportEmbedding(Napi::Env env, Napi::Object exports) {
  exports.Set("embeddingLookupSparse", Napi::Function::New(env, guarded<embeddingLookupSparse>, "embeddingLookupSparse"));
}

}  // namespace binding
}  // namespace hb
