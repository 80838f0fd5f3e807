#include "native/binding/lookup_arguments.h"

#include <string>

#include "native/binding/arguments.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"

namespace hb {
namespace binding {

void readLookupIds(const Napi::Value& values, const Napi::Value& rowSplits, const Napi::Value& weights,
                   const Napi::Value& combiner, const char* op, SparseLookupRequest* request) {
  const std::string prefix = std::string(op) + ": ";
  auto named = [&](const char* what) { return prefix + what; };
  const double code = numberArgument(combiner, named("combiner").c_str());
  HB_CHECK(code == 0 || code == 1 || code == 2, op, "(", request->name, "): combiner must be 'sum', 'mean' or 'sqrtn'");
  request->combiner = Combiner(int32_t(code));
  request->ids = copyTypedArray(values, named("ids.values").c_str());
  request->rowSplits = copyTypedArray(rowSplits, named("ids.rowSplits").c_str());
  request->hasWeights = !weights.IsNull() && !weights.IsUndefined();
  if (request->hasWeights) request->weights = copyTypedArray(weights, named("ids.weights").c_str());
}

SparseLookupRequest readLookupArguments(const Napi::CallbackInfo& info, const char* op) {
  const std::string prefix = std::string(op) + ": ";
  SparseLookupRequest request;
  request.table = TensorHandle::unwrap(info[0], (prefix + "params").c_str());
  request.name = stringArgument(info[1], (prefix + "name").c_str());
  readLookupIds(info[2], info[3], info[4], info[5], op, &request);
  return request;
}

}  // namespace binding
}  // namespace hb
