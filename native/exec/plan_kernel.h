// The kernels a compiled plan runs (and that kernelRun runs one at a time, eagerly).
// Each is a plain function over host tensors whose shapes the plan has resolved for
// the batch at hand; it checks what it relies on (shapes, sizes, attrs) and throws
// hb::Error naming `args.name` before touching memory. Kernels register themselves by
// name at load time (HB_REGISTER_KERNEL), so a kernel file is the only place that
// knows its kernel.
#pragma once

#include <string>
#include <vector>

#include "native/core/tensor.h"

namespace hb {

struct KernelArgs {
  std::vector<Tensor> in;   // read only
  std::vector<Tensor> out;  // written; accumulators (metrics) are read and written
  std::vector<double> attrs;
  std::string name;         // the graph op's name, for messages
};

using KernelFn = void (*)(const KernelArgs& args);

// Registers `fn` under `name`; a second registration of the same name aborts at load.
bool registerKernel(const char* name, KernelFn fn);
// The kernel named `name`; throws hb::Error naming it when there is none.
KernelFn findKernel(const std::string& name);

// Helpers for kernels' own checks.
void checkArity(const KernelArgs& args, size_t ins, size_t outs, const char* kernel);
void checkFloat32(const KernelArgs& args, const char* kernel);
double attrOr(const KernelArgs& args, size_t index, double fallback);

}  // namespace hb

#define HB_KERNEL_CONCAT_INNER(a, b) a##b
#define HB_KERNEL_CONCAT(a, b) HB_KERNEL_CONCAT_INNER(a, b)
#define HB_REGISTER_KERNEL(name, fn) \
  static const bool HB_KERNEL_CONCAT(hbKernelRegistered_, __LINE__) = ::hb::registerKernel(name, fn)
