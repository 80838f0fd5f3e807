// kernelRun: one plan kernel, eagerly, on the host executor. Tests check each kernel
// against a reference through it, and eager graph ops can use it.
#include <cmath>
#include <cstring>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/exec/plan_kernel.h"

namespace hb {
namespace binding {

namespace {

Tensor hostInput(const Napi::Value& value, const std::string& what) {
  const Tensor& t = TensorHandle::unwrap(value, what.c_str());
  HB_CHECK(!t.device().isCuda(), what, " is on ", t.device().str(), "; graph kernels run on the cpu");
  return t;
}

// kernelRun(kernel, inputs: Tensor[], outputs: Array<number[] | Tensor>, attrs: number[], name?)
//   -> Promise<Tensor[]>. An output given as a shape is a new float32 tensor of zeros; one
//   given as a tensor is written in place (accumulators).
Napi::Value kernelRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string kernel = stringArgument(info[0], "kernelRun: kernel");
  const KernelFn fn = findKernel(kernel);
  auto args = std::make_shared<KernelArgs>();
  args->name = info[4].IsString() ? info[4].As<Napi::String>().Utf8Value() : kernel;
  if (!info[1].IsArray() || !info[2].IsArray() || !info[3].IsArray()) {
    throw Napi::TypeError::New(env, "kernelRun: inputs, outputs and attrs must be arrays");
  }
  Napi::Array inputs = info[1].As<Napi::Array>();
  Napi::Array outputs = info[2].As<Napi::Array>();
  Napi::Array attrs = info[3].As<Napi::Array>();
  for (uint32_t i = 0; i < attrs.Length(); ++i) {
    const double x = numberArgument(attrs.Get(i), "kernelRun: attrs[i]");
    HB_CHECK(!std::isnan(x), args->name, ": attrs[", i, "] is NaN");
    args->attrs.push_back(x);
  }
  for (uint32_t i = 0; i < inputs.Length(); ++i) {
    args->in.push_back(hostInput(inputs.Get(i), "kernelRun: inputs[" + std::to_string(i) + "]"));
  }
  for (uint32_t i = 0; i < outputs.Length(); ++i) {
    Napi::Value o = outputs.Get(i);
    if (o.IsArray()) {
      std::vector<int64_t> shape = shapeArgument(o, "kernelRun: output shape");
      Tensor t{nullptr, DType::Float32, shape};
      const int64_t size = shapeSize(shape, "kernelRun: output shape");
      t.buffer = Buffer::allocate(Device::cpu(), size_t(size) * sizeof(float));
      if (size) std::memset(t.buffer->data(), 0, t.bytes());
      args->out.push_back(t);
    } else {
      args->out.push_back(hostInput(o, "kernelRun: outputs[" + std::to_string(i) + "]"));
    }
  }
  return schedule(env, Device::cpu(), makeTask(
      [fn, args] { fn(*args); },
      [args](Napi::Env env) -> Napi::Value {
        Napi::Array result = Napi::Array::New(env, args->out.size());
        for (size_t i = 0; i < args->out.size(); ++i) result.Set(uint32_t(i), TensorHandle::wrap(env, args->out[i]));
        return result;
      }));
}

}  // namespace

void exportKernel(Napi::Env env, Napi::Object exports) {
  exports.Set("kernelRun", Napi::Function::New(env, guarded<kernelRun>, "kernelRun"));
}

}  // namespace binding
}  // namespace hb
