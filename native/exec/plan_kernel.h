// The kernels a compiled plan runs (and that kernelRun runs one at a time, eagerly).
// Each is a plain function over tensors whose shapes the plan has resolved for the batch
// at hand; it checks what it relies on (shapes, sizes, attrs) and throws hb::Error
// naming `args.name` before touching memory. Kernels register themselves by name at
// load time, so a kernel file is the only place that knows its kernel:
//  - HB_REGISTER_DEVICE_KERNEL: the kernel takes tensors on the host or all on one CUDA
//    device, checks them once and then runs the CPU loop or its CUDA mirror (cuda/);
//  - HB_REGISTER_KERNEL: host memory only; runKernel gives it host copies of device
//    tensors and copies its outputs back (metrics and other small, data-dependent steps).
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

struct KernelEntry {
  KernelFn fn = nullptr;
  bool runsOnCuda = false;  // takes CUDA tensors itself
};

// Registers `fn` under `name`; a second registration of the same name aborts at load.
bool registerKernel(const char* name, KernelFn fn, bool runsOnCuda);
// The kernel named `name`; throws hb::Error naming it when there is none.
KernelEntry findKernel(const std::string& name);

// Runs `kernel` on `args`, by way of host copies when its tensors are on a CUDA device
// and it has no CUDA path. Kernels on a device are queued on its stream in order.
void runKernel(const KernelEntry& kernel, const KernelArgs& args);

// The one device all of args' tensors are on (the host when there are none); throws
// hb::Error naming the kernel when they are spread over several.
Device kernelDevice(const KernelArgs& args, const char* kernel);

// Helpers for kernels' own checks.
void checkArity(const KernelArgs& args, size_t ins, size_t outs, const char* kernel);
void checkFloat32(const KernelArgs& args, const char* kernel);
double attrOr(const KernelArgs& args, size_t index, double fallback);

}  // namespace hb

#define HB_KERNEL_CONCAT_INNER(a, b) a##b
#define HB_KERNEL_CONCAT(a, b) HB_KERNEL_CONCAT_INNER(a, b)
#define HB_REGISTER_KERNEL(name, fn) \
  static const bool HB_KERNEL_CONCAT(hbKernelRegistered_, __LINE__) = ::hb::registerKernel(name, fn, false)
#define HB_REGISTER_DEVICE_KERNEL(name, fn) \
  static const bool HB_KERNEL_CONCAT(hbKernelRegistered_, __LINE__) = ::hb::registerKernel(name, fn, true)
