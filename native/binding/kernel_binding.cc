// kernelRun: one plan kernel, eagerly, on the executor of its tensors' device. Tests check
// each kernel against a reference (and the CUDA kernels against the CPU's) through it,
// and eager graph ops can use it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/exec/plan_kernel.h"

namespace hb {
namespace binding {

namespace {

// kernelRun(kernel, inputs: Tensor[], outputs: Array<number[] | Tensor>, attrs: number[], name?)
//   -> Promise<Tensor[]>. An output given as a shape is a new float32 tensor of zeros on the
//   inputs' device; one given as a tensor is written in place (accumulators).
Napi::Value kernelRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string kernel = stringArgument(info[0], "kernelRun: kernel");
  const KernelEntry entry = findKernel(kernel);
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
    const std::string what = "kernelRun: inputs[" + std::to_string(i) + "]";
    args->in.push_back(TensorHandle::unwrap(inputs.Get(i), what.c_str()));
  }
  const Device device = args->in.empty() ? currentDevice() : args->in.front().device();
  for (uint32_t i = 0; i < outputs.Length(); ++i) {
    Napi::Value o = outputs.Get(i);
    if (o.IsArray()) {
      std::vector<int64_t> shape = shapeArgument(o, "kernelRun: output shape");
      const int64_t size = shapeSize(shape, "kernelRun: output shape");
      Tensor zeros{Buffer::allocate(Device::cpu(), std::max<size_t>(size_t(size) * sizeof(float), 1)), DType::Float32, shape};
      if (size) std::memset(zeros.buffer->data(), 0, zeros.bytes());
      args->out.push_back(onDevice(zeros, device));
    } else {
      const std::string what = "kernelRun: outputs[" + std::to_string(i) + "]";
      args->out.push_back(TensorHandle::unwrap(o, what.c_str()));
    }
  }
  // Every tensor on one device, checked here so a mixed call fails before it is queued.
  kernelDevice(*args, kernel.c_str());
  return schedule(env, device, makeTask(
      [entry, args, device] {
        runKernel(entry, *args);
        // A fault in the kernel shows here, naming it, not in a later unrelated call.
        if (device.isCuda()) cuda::synchronize(device.index, args->name.c_str());
      },
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
