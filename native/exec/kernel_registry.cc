#include <cstdio>
#include <cstdlib>
#include <map>

#include "native/core/status.h"
#include "native/exec/plan_kernel.h"

namespace hb {

namespace {

// A function-local static: registrations run during static initialisation, in any
// order across files.
std::map<std::string, KernelFn>& registry() {
  static std::map<std::string, KernelFn> kernels;
  return kernels;
}

}  // namespace

bool registerKernel(const char* name, KernelFn fn) {
  if (!registry().emplace(name, fn).second) {
    std::fprintf(stderr, "hb-ts: kernel '%s' registered twice\n", name);
    std::abort();
  }
  return true;
}

KernelFn findKernel(const std::string& name) {
  auto it = registry().find(name);
  HB_CHECK(it != registry().end(), "no kernel named '", name, "'");
  return it->second;
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
