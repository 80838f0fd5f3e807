#include <napi.h>

#include "native/binding/addon_state.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tensor_handle.h"

namespace hb {
namespace binding {

Napi::Object init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData<AddonState>(new AddonState());
  initAsyncTasks(env);
  TensorHandle::define(env, exports);
  exportBackend(env, exports);
  exportCudaEmulation(env, exports);
  exportTensor(env, exports);
  exportEmbedding(env, exports);
  exportRowGather(env, exports);
  exportShuffleBuffer(env, exports);
  exportSyntheticRows(env, exports);
  exportStrings(env, exports);
  exportRouting(env, exports);
  exportTrain(env, exports);
  exportFeature(env, exports);
  exportKernel(env, exports);
  exportPlan(env, exports);
  exportRegistry(env, exports);
  exportIo(env, exports);
  exportDistribute(env, exports);
  exportDynamicTable(env, exports);
  return exports;
}

}  // namespace binding
}  // namespace hb

// NODE_API_MODULE pastes its second argument into a name, so it takes a plain one.
static Napi::Object initHbAddon(Napi::Env env, Napi::Object exports) { return hb::binding::init(env, exports); }

NODE_API_MODULE(hb, initHbAddon)
