// optimizer.applyGradients and hb.nn.embeddingLookupSparseGrad.
#include <cmath>
#include <cstring>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/lookup_arguments.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/train/embedding_backward.h"
#include "native/train/optimizer_apply.h"

namespace hb {
namespace binding {

namespace {

float hyperField(const Napi::Object& spec, const char* key, float fallback) {
  return finiteFloatField(spec, key, fallback, "optimizer");
}

OptimizerHyper parseHyper(const Napi::Value& value) {
  if (!value.IsObject()) throw Napi::TypeError::New(value.Env(), "optimizer: hyperparameters must be an object");
  Napi::Object spec = value.As<Napi::Object>();
  OptimizerHyper h;
  const double kind = numberArgument(spec.Get("kind"), "optimizer kind");
  HB_CHECK(kind >= 0 && kind <= 5 && std::floor(kind) == kind, "optimizer: unknown kind ", kind);
  h.kind = OptimizerKind(int32_t(kind));
  h.learningRate = hyperField(spec, "learningRate", 0.0f);
  h.momentum = hyperField(spec, "momentum", 0.0f);
  h.nesterov = spec.Get("nesterov").ToBoolean();
  h.beta1 = hyperField(spec, "beta1", 0.9f);
  h.beta2 = hyperField(spec, "beta2", 0.999f);
  h.epsilon = hyperField(spec, "epsilon", 1e-8f);
  h.lazy = spec.Get("lazy").ToBoolean();
  h.learningRatePower = hyperField(spec, "learningRatePower", -0.5f);
  h.l1 = hyperField(spec, "l1", 0.0f);
  h.l2 = hyperField(spec, "l2", 0.0f);
  h.l2Shrinkage = hyperField(spec, "l2Shrinkage", 0.0f);
  if (h.kind == OptimizerKind::Adam) {
    // TF's ApplyAdam: alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t), in float.
    const float beta1Power = hyperField(spec, "beta1Power", h.beta1);
    const float beta2Power = hyperField(spec, "beta2Power", h.beta2);
    h.alpha = divRn(mulRn(h.learningRate, sqrtf(subRn(1.0f, beta2Power))), subRn(1.0f, beta1Power));
  }
  return h;
}

// optimizerApply(hyper, variable, name, slot0 | null, slot1 | null, grad | null,
//                values | null, indices | null, checkOnly) -> Promise<void> | undefined
// checkOnly: run every check and queue nothing (applyGradients checks all its pairs
// before it queues any).
Napi::Value optimizerApply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  OptimizerApplyRequest r;
  r.hyper = parseHyper(info[0]);
  r.var = TensorHandle::unwrap(info[1], "applyGradients: variable");
  r.name = stringArgument(info[2], "applyGradients: name");
  r.hasSlot0 = !info[3].IsNull();
  if (r.hasSlot0) r.slot0 = TensorHandle::unwrap(info[3], "applyGradients: slot");
  r.hasSlot1 = !info[4].IsNull();
  if (r.hasSlot1) r.slot1 = TensorHandle::unwrap(info[4], "applyGradients: slot");
  r.sparse = info[5].IsNull();
  if (!r.sparse) {
    r.grad = TensorHandle::unwrap(info[5], "applyGradients: gradient");
  } else {
    r.values = TensorHandle::unwrap(info[6], "applyGradients: IndexedSlices values");
    HB_CHECK(r.values.device() == r.var.device(), "applyGradients(", r.name, "): the gradient is on ",
             r.values.device().str(), " but the variable is on ", r.var.device().str());
    r.indices = copyTypedArray(info[7], "applyGradients: IndexedSlices indices");
  }
  checkOptimizerApply(r);
  if (info[8].ToBoolean()) return env.Undefined();
  return schedule(env, r.var.device(), makeTask(
      [r] { runOptimizerApply(r); },
      [r](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

// embeddingLookupSparseGrad(table, name, values, rowSplits, weights | null, combiner,
//                           outputGrad, maxNorm = 0) -> Promise<{ indices: BigInt64Array, values }>
Napi::Value embeddingLookupSparseGrad(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SparseLookupRequest request = readLookupArguments(info, "embeddingLookupSparseGrad");
  if (!info[7].IsUndefined()) request.maxNorm = float(numberArgument(info[7], "embeddingLookupSparseGrad: maxNorm"));
  const Tensor outGrad = TensorHandle::unwrap(info[6], "embeddingLookupSparseGrad: outputGrad");
  checkLookupBackward(request, outGrad);
  auto out = std::make_shared<LookupGradient>();
  return schedule(env, request.table.device(), makeTask(
      [request, outGrad, out] { *out = runLookupBackward(request, outGrad); },
      [request, outGrad, out](Napi::Env env) -> Napi::Value {
        Napi::Object result = Napi::Object::New(env);
        auto indices = Napi::BigInt64Array::New(env, size_t(out->indices.size()));
        if (out->indices.size()) std::memcpy(indices.Data(), out->indices.buffer->data(), out->indices.bytes());
        result.Set("indices", indices);
        result.Set("values", TensorHandle::wrap(env, out->values));
        return result;
      }));
}

}  // namespace

void exportTrain(Napi::Env env, Napi::Object exports) {
  exports.Set("optimizerApply", Napi::Function::New(env, guarded<optimizerApply>, "optimizerApply"));
  exports.Set("embeddingLookupSparseGrad",
              Napi::Function::New(env, guarded<embeddingLookupSparseGrad>, "embeddingLookupSparseGrad"));
}

}  // namespace binding
}  // namespace hb
