#include "native/binding/lookup_arguments.h"

#include <string>

#include "native/binding/arguments.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/core/tensor.h"

namespace hb {
namespace binding {

Combiner combinerArgument(const Napi::Value& value, const char* op, const std::string& name) {
  const std::string text = value.IsString() ? value.As<Napi::String>().Utf8Value() : std::string();
  for (int32_t i = 0; i < kCombinerCount; ++i) {
    if (text == kCombinerNames[i]) return Combiner(i);
  }
  // An unknown name is a wrong value (TF's ValueError); only a non-string is a wrong type.
  failWith(value.IsString() ? ErrorCode::InvalidArgument : ErrorCode::Type, op, "(", name,
           "): combiner must be 'sum', 'mean' or 'sqrtn'");
}

void readLookupIds(const Napi::Value& values, const Napi::Value& rowSplits, const Napi::Value& weights,
                   const Napi::Value& combiner, const char* op, SparseLookupRequest* request, IdArrays how) {
  const std::string prefix = std::string(op) + ": ";
  auto named = [&](const char* what) { return prefix + what; };
  auto read = how == IdArrays::Borrowed ? borrowTypedArray : copyTypedArray;
  request->combiner = combinerArgument(combiner, op, request->name);
  request->ids = read(values, named("ids.values").c_str());
  request->rowSplits = read(rowSplits, named("ids.rowSplits").c_str());
  request->hasWeights = !weights.IsNull() && !weights.IsUndefined();
  if (request->hasWeights) request->weights = read(weights, named("ids.weights").c_str());
}

SparseLookupRequest readLookupArguments(const Napi::CallbackInfo& info, const char* op, IdArrays how) {
  const std::string prefix = std::string(op) + ": ";
  SparseLookupRequest request;
  request.table = TensorHandle::unwrap(info[0], (prefix + "params").c_str());
  request.name = stringArgument(info[1], (prefix + "name").c_str());
  readLookupIds(info[2], info[3], info[4], info[5], op, &request, how);
  return request;
}

void ownLookupIds(SparseLookupRequest* request) {
  request->ids = copyTensor(request->ids, Device::cpu());
  request->rowSplits = copyTensor(request->rowSplits, Device::cpu());
  if (request->hasWeights) request->weights = copyTensor(request->weights, Device::cpu());
}

}  // namespace binding
}  // namespace hb
