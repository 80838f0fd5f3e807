// What a kernel of a compiled plan (or of an eager kernelRun) sees. Each kernel is a
// plain function over tensors whose shapes the plan has resolved for the batch at hand;
// it checks what it relies on (shapes, sizes, attrs) and throws hb::Error naming
// `args.name` before touching memory. Its description (inputs, outputs, dtypes, attrs,
// placement) is registered beside it (native/exec/kernel_def.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "native/core/tensor.h"
#include "native/kernels/optimizer_rules.h"

namespace hb {

class DeferredFiniteChecks;

// Per-run state that some kernels read: the optimizers' hyperparameters of this step
// (update kernels take an index into them), the batch size, the plan's device.
struct StepContext {
  // The run's batch size; -1 for an eager call (kernelRun), which is not a step.
  int64_t batch = -1;
  // The global step the run trains (its value before the step counts itself); -1 when
  // the caller gave none. Dynamic tables date what they see by it.
  int64_t globalStep = -1;
  std::vector<OptimizerHyper> hypers;
  Device device;
  // A compiled GPU step's gradient checks, queued beside the updates and read at the
  // step's end (native/train/deferred_finite_checks.h); null elsewhere.
  DeferredFiniteChecks* finiteChecks = nullptr;
};

struct KernelArgs {
  std::vector<Tensor> in;   // read only; an absent optional input has no buffer
  std::vector<Tensor> out;  // written; accumulators and variables are read and written.
                            // A dynamic output (data-dependent size) comes without a buffer:
                            // the kernel sizes it with allocateOutput.
  std::vector<double> attrs;                    // scalar attrs, in declared order (enums as codes)
  std::vector<std::vector<double>> listAttrs;   // list attrs, in declared order
  std::string name;                             // the graph op's name, for messages
  const StepContext* step = nullptr;            // set by plans and kernelRun alike
  // Where dynamic outputs go, and buffers a plan keeps for them between runs (so a
  // dynamic value reuses its memory step after step once it has grown).
  Device outputDevice;
  std::vector<std::shared_ptr<Buffer>*> outputCache;
  // An optional output the step does not want (no value): the kernel skips it.
  std::vector<bool> outputAbsent;
};

using KernelFn = void (*)(KernelArgs& args);

// Gives out[index] a buffer for `shape` (on args.outputDevice, reusing the plan's cached
// buffer when it is large enough). Throws naming the kernel if out[index] already has one.
Tensor& allocateOutput(KernelArgs& args, size_t index, const std::vector<int64_t>& shape);

// True when input `index` was given (optional inputs may be absent).
inline bool hasInput(const KernelArgs& args, size_t index) {
  return index < args.in.size() && args.in[index].buffer != nullptr;
}

// True when output `index` is wanted (optional outputs may be absent).
inline bool wantsOutput(const KernelArgs& args, size_t index) {
  return index < args.out.size() && !(index < args.outputAbsent.size() && args.outputAbsent[index]);
}

// The one device all of args' tensors are on (the host when there are none); throws
// hb::Error naming the kernel when they are spread over several.
Device kernelDevice(const KernelArgs& args, const char* kernel);

// Throws (ErrorCode::Type) unless output `out` has input `in`'s dtype: kernels that pass
// ids through write them in the input's width.
void checkSameDType(const KernelArgs& args, size_t out, size_t in);

// Helpers for kernels' own checks.
void checkArity(const KernelArgs& args, size_t ins, size_t outs, const char* kernel);
void checkFloat32(const KernelArgs& args, const char* kernel);
double attrOr(const KernelArgs& args, size_t index, double fallback);

}  // namespace hb
