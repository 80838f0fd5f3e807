#include <cstdio>
#include <cstdlib>
#include <map>

#include "native/core/status.h"
#include "native/exec/plan_kernel.h"

namespace hb {

namespace {

// A function-local static: registrations run during static initialisation, in any
// order across files.
std::map<std::string, KernelEntry>& registry() {
  static std::map<std::string, KernelEntry> kernels;
  return kernels;
}

}  // namespace

bool registerKernel(const char* name, KernelFn fn, bool runsOnCuda) {
  if (!registry().emplace(name, KernelEntry{fn, runsOnCuda}).second) {
    std::fprintf(stderr, "hb-ts: kernel '%s' registered twice\n", name);
    std::abort();
  }
  return true;
}

KernelEntry findKernel(const std::string& name) {
  auto it = registry().find(name);
  HB_CHECK(it != registry().end(), "no kernel named '", name, "'");
  return it->second;
}

Device kernelDevice(const KernelArgs& args, const char* kernel) {
  const Tensor* first = nullptr;
  for (const auto* list : {&args.in, &args.out}) {
    for (const Tensor& t : *list) {
      if (first == nullptr) first = &t;
      HB_CHECK(t.device() == first->device(), args.name, ": kernel ", kernel, " has tensors on ", first->device().str(),
               " and on ", t.device().str(), "; they must all be on one device");
    }
  }
  return first ? first->device() : Device::cpu();
}

void runKernel(const KernelEntry& kernel, const KernelArgs& args) {
  const Device device = kernelDevice(args, args.name.c_str());
  if (!device.isCuda() || kernel.runsOnCuda) return kernel.fn(args);
  // Outputs are copied in too: accumulators are read before they are written.
  KernelArgs host{{}, {}, args.attrs, args.name};
  for (const Tensor& t : args.in) host.in.push_back(copyTensor(t, Device::cpu()));
  for (const Tensor& t : args.out) host.out.push_back(copyTensor(t, Device::cpu()));
  kernel.fn(host);
  for (size_t i = 0; i < args.out.size(); ++i) {
    if (args.out[i].bytes()) {
      copyBytes(args.out[i].buffer->data(), device, host.out[i].buffer->data(), Device::cpu(), args.out[i].bytes());
    }
  }
}

void checkArity(const KernelArgs& args, size_t ins, size_t outs, const char* kernel) {
  HB_CHECK(args.in.size() == ins && args.out.size() == outs, args.name, ": kernel ", kernel, " takes ", ins,
           " inputs and ", outs, " outputs, got ", args.in.size(), " and ", args.out.size());
}

void checkFloat32(const KernelArgs& args, const char* kernel) {
  for (const Tensor& t : args.in) {
    HB_CHECK(t.dtype == DType::Float32, args.name, ": kernel ", kernel, " takes float32 inputs, got ", dtypeName(t.dtype));
  }
  for (const Tensor& t : args.out) {
    HB_CHECK(t.dtype == DType::Float32, args.name, ": kernel ", kernel, " writes float32 outputs, got ",
             dtypeName(t.dtype));
  }
}

double attrOr(const KernelArgs& args, size_t index, double fallback) {
  return index < args.attrs.size() ? args.attrs[index] : fallback;
}

}  // namespace hb
