// kernelRun: one registered kernel, eagerly, on the executor of its tensors' device.
// Tests check each kernel against a reference (and the CUDA kernels against the CPU's)
// through it, and eager ops (metrics on concrete arrays) use it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/kernel_attrs.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/exec/kernel_def.h"

namespace hb {
namespace binding {

namespace {

// kernelRun(kernel, inputs: Array<Tensor | null>, outputs: Array<number[] | Tensor | { dtype, shape? }>,
//           attrs: object, name?, device?) -> Promise<Tensor[]>
// An output given as a shape is a new float32 tensor of zeros on the run's device; one
// given as a tensor is written in place (accumulators); { dtype, shape } makes zeros of
// that dtype, and { dtype } alone an output the kernel sizes itself. A null input (or a
// trailing one left out) is an absent optional input. The run's device is the inputs',
// else `device`, else the host.
Napi::Value kernelRun(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string kernel = stringArgument(info[0], "kernelRun: kernel");
  const KernelDef& def = findKernel(kernel);
  auto args = std::make_shared<KernelArgs>();
  args->name = info[4].IsString() ? info[4].As<Napi::String>().Utf8Value() : kernel;
  if (!info[1].IsArray() || !info[2].IsArray()) failWith(ErrorCode::Type, "kernelRun: inputs and outputs must be arrays");
  Napi::Array inputs = info[1].As<Napi::Array>();
  Napi::Array outputs = info[2].As<Napi::Array>();
  readKernelAttrs(def, info[3], args->name, &args->attrs, &args->listAttrs);
  for (uint32_t i = 0; i < inputs.Length(); ++i) {
    if (inputs.Get(i).IsNull()) {
      args->in.push_back(Tensor{});
      continue;
    }
    const std::string what = "kernelRun: inputs[" + std::to_string(i) + "]";
    args->in.push_back(TensorHandle::unwrap(inputs.Get(i), what.c_str()));
  }
  // Trailing optional inputs may be left out.
  const size_t declared = def.repeatInputsFrom < 0 ? def.inputs.size() : args->in.size();
  while (args->in.size() < declared && def.inputs[args->in.size()].optional) args->in.push_back(Tensor{});
  Device device = info[5].IsString() ? parseUsableDevice(info[5].As<Napi::String>().Utf8Value(), "kernelRun: device")
                                     : Device::cpu();
  // The run's device: its inputs'. A kernel of placement Any reads some inputs (ids) on
  // the host wherever it runs, so those do not say where it runs.
  for (size_t i = 0; i < args->in.size(); ++i) {
    const TensorDef* d = tensorDefAt(def.inputs, def.repeatInputsFrom, i);
    if (args->in[i].buffer && !(def.placement == KernelPlacement::Any && d != nullptr && d->host)) {
      device = args->in[i].device();
      break;
    }
  }
  args->outputDevice = device;
  for (uint32_t i = 0; i < outputs.Length(); ++i) {
    Napi::Value o = outputs.Get(i);
    const std::string what = "kernelRun: outputs[" + std::to_string(i) + "]";
    if (!TensorHandle::isHandle(o)) {
      const bool described = !o.IsArray();
      if (described && !o.IsObject()) {
        failWith(ErrorCode::Type, what, " must be a shape, a tensor or { dtype, shape? }");
      }
      const DType dtype = described ? parseDType(stringArgument(o.As<Napi::Object>().Get("dtype"), what.c_str()), what.c_str())
                                    : DType::Float32;
      const Napi::Value shapeValue = described ? o.As<Napi::Object>().Get("shape") : o;
      const TensorDef* d = tensorDefAt(def.outputs, def.repeatOutputsFrom, i);
      const bool sized = d != nullptr && d->sized;
      if (sized != shapeValue.IsUndefined()) {
        failWith(ErrorCode::InvalidArgument, what, sized ? " is sized by the kernel: give { dtype } alone"
                                                          : " needs a shape or a tensor: the kernel writes into given memory");
      }
      if (sized) {
        args->out.push_back(Tensor{nullptr, dtype, {}});
        continue;
      }
      std::vector<int64_t> shape = shapeArgument(shapeValue, what.c_str());
      Tensor zeros{nullptr, dtype, shape};
      zeros.buffer = Buffer::allocate(Device::cpu(), std::max<size_t>(size_t(shapeSize(shape, what.c_str())) * dtypeSize(dtype), 1));
      if (zeros.bytes()) std::memset(zeros.buffer->data(), 0, zeros.bytes());
      args->out.push_back(onDevice(zeros, device));
    } else {
      const TensorDef* d = tensorDefAt(def.outputs, def.repeatOutputsFrom, i);
      if (d != nullptr && d->sized) failWith(ErrorCode::InvalidArgument, what, " is sized by the kernel: give { dtype } alone, not a tensor");
      args->out.push_back(TensorHandle::unwrap(o, what.c_str()));
    }
  }
  // Trailing optional outputs may be left out too: the kernel skips them.
  args->outputAbsent.assign(args->out.size(), false);
  const size_t declaredOutputs = def.repeatOutputsFrom < 0 ? def.outputs.size() : args->out.size();
  while (args->out.size() < declaredOutputs && def.outputs[args->out.size()].optional) {
    args->out.push_back(Tensor{});
    args->outputAbsent.push_back(true);
  }
  std::vector<const DType*> inputTypes, outputTypes;
  for (const Tensor& t : args->in) inputTypes.push_back(t.buffer ? &t.dtype : nullptr);
  for (size_t i = 0; i < args->out.size(); ++i) outputTypes.push_back(args->outputAbsent[i] ? nullptr : &args->out[i].dtype);
  checkKernelSignature(def, inputTypes, outputTypes, args->name);
  // Every tensor on one device (a kernel of placement Any moves what it needs itself),
  // checked here so a mixed call fails before it is queued.
  if (def.placement != KernelPlacement::Any) kernelDevice(*args, kernel.c_str());
  return schedule(env, device, makeTask(
      [&def, args, device] {
        StepContext context;
        context.device = device;
        args->step = &context;
        runKernel(def, *args);
        args->step = nullptr;
        // A fault in the kernel shows here, naming it, not in a later unrelated call.
        if (device.isCuda()) cuda::synchronize(device.index, args->name.c_str());
      },
      [args](Napi::Env env) -> Napi::Value {
        Napi::Array result = Napi::Array::New(env, args->out.size());
        for (size_t i = 0; i < args->out.size(); ++i) {
          result.Set(uint32_t(i), args->outputAbsent[i] ? env.Null() : Napi::Value(TensorHandle::wrap(env, args->out[i])));
        }
        return result;
      }));
}

}  // namespace

void exportKernel(Napi::Env env, Napi::Object exports) {
  exports.Set("kernelRun", Napi::Function::New(env, guarded<kernelRun>, "kernelRun"));
}

}  // namespace binding
}  // namespace hb
