// A compiled training / evaluation / prediction step: the graph lowered (in TS, by
// lib/graph/compile.ts) to kernel steps over numbered values. Made once; run once per
// batch on the executor of the plan's device, so one training step is one native call.
// No Node types here.
//
// Every step is a kernel of the one registry (native/exec/kernel_def.h), checked against
// its description when the plan is made. Values have a dtype and a shape whose first
// dimensions may be the batch size of the run (-1) or sized at run time by the kernel
// that writes them (-2: unique ids, pruned ids, exchanged rows).
//
// On a CUDA device the dense values (temporaries, parameters) live in device memory;
// each value is copied where a kernel needs it (once per run): the batch's feeds to the
// device for device kernels, device values to the host for host kernels. Embedding
// tables may stay in host memory (embDevice: 'cpu'): the kernels that take them
// (placement Any) move lookup outputs and gradients between the two.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "native/core/tensor.h"
#include "native/exec/kernel_def.h"
#include "native/exec/step_profile.h"
#include "native/train/deferred_finite_checks.h"

namespace hb {

constexpr int64_t kBatchDim = -1;    // the batch size of the run
constexpr int64_t kDynamicDim = -2;  // known only when the value is written (or fed)

struct PlanValue {
  enum class Kind {
    Temp,     // storage slot `index`, shared with values whose lives do not overlap
    Param,    // params[index]: a variable, slot, constant or accumulator kept between runs
    Feed,     // feeds[index] of the run
    Alias,    // value `index`'s memory with another shape (a reshape)
    Dynamic,  // sized at run time: by the kernel that writes it (index -1), or like value
              // `index` as it is when written; its memory is kept and reused between runs
  };
  Kind kind = Kind::Temp;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  int index = -1;
};

// What a tensor given to the plan must be: a parameter bound when the plan is made (the
// serializable part of it; fixed shape) or a feed given each run (batch / dynamic dims).
struct PlanTensorSpec {
  std::string name;  // the variable's or the feature's, for messages
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
};
using PlanParam = PlanTensorSpec;
using PlanFeed = PlanTensorSpec;

struct PlanStep {
  std::string name;
  const KernelDef* kernel = nullptr;
  std::vector<int> inputs;  // value ids; -1: an absent optional input
  std::vector<int> outputs;
  std::vector<double> attrs;
  std::vector<std::vector<double>> listAttrs;
  // The part of the training step its graph node belongs to, for profiles (a step that
  // exchanges with other ranks counts as Exchange whatever its node).
  StepPhase phase = StepPhase::Forward;
};

class Plan {
 public:
  Plan(Device device, std::vector<PlanValue> values, std::vector<PlanParam> paramSpecs, std::vector<Tensor> params,
       std::vector<PlanFeed> feeds, std::vector<PlanStep> steps, int storageCount);

  struct RunResult {
    std::vector<Tensor> fetched;  // host copies
    double nativeMs = 0;
  };

  // Checks the feeds against the plan; on the JS thread, before anything is queued.
  void checkFeeds(int64_t batch, const std::vector<Tensor>& feeds) const;
  // On the executor of device(). Runs of one plan take turns there, so the reused
  // storage is never shared between two runs.
  RunResult run(int64_t batch, const std::vector<Tensor>& feeds, const std::vector<OptimizerHyper>& hypers,
                const std::vector<int>& fetch, int64_t globalStep = -1);

  // When this rank's run fails before step `firstStep`: joins the plan's next exchange
  // from there with the reason, so the other ranks, waiting in it, fail with it too; past
  // the plan's last exchange, the next step's first one (nothing to do in a world of
  // one, or for a plan without exchanges).
  void tellPeersOfFailure(size_t firstStep, const std::string& why) const;

  const std::vector<PlanValue>& values() const { return values_; }
  Device device() const { return device_; }
  // A GPU plan with parameters in host memory (tables with embDevice: 'cpu', dynamic
  // tables): its runs must wait for work queued on the CPU's executor.
  bool readsHostParameters() const { return readsHostParameters_; }
  size_t optimizerCount() const { return optimizerCount_; }
  // Whether a run exchanges with other ranks (a collective step): such a run waits on
  // its peers, so it never runs on the JS thread.
  bool hasExchanges() const { return hasExchanges_; }

  // What planRun knows of this plan's last run, to choose whether a small step may run
  // on the JS thread: its batch, how many values were fed and its native time. Read and
  // written on the JS thread only (when a run settles).
  struct RecentRuns {
    int64_t batch = -1;
    int64_t fedValues = 0;
    double nativeMs = 0;
  };
  RecentRuns& recentRuns() { return recent_; }

 private:
  void validate();
  // Runs of consecutive steps that may run side by side (sideBySideEnd_).
  void findSideBySideSteps();
  std::vector<int64_t> resolve(const std::vector<int64_t>& shape, int64_t batch) const;

  Device device_;
  std::vector<PlanValue> values_;
  std::vector<PlanParam> paramSpecs_;
  std::vector<Tensor> params_;
  bool readsHostParameters_ = false;
  std::vector<PlanFeed> feeds_;
  std::vector<PlanStep> steps_;
  std::vector<int> aliasRoot_;
  // Per step: one past the last step that runs beside it (the step after it when none
  // does; only set at the first step of a run of them).
  std::vector<size_t> sideBySideEnd_;
  std::vector<std::shared_ptr<Buffer>> storage_;
  std::vector<std::shared_ptr<Buffer>> dynamic_;  // per value: the memory a Dynamic value last had
  size_t optimizerCount_ = 0;
  bool hasExchanges_ = false;
  RecentRuns recent_;
  // On a GPU: the updates' gradient checks, queued and read once at each run's end.
  std::unique_ptr<DeferredFiniteChecks> finiteChecks_;
};

// The shape `shape` (with -1 / -2 dims) takes for a fed tensor of `size` elements and a
// batch of `batch`; throws naming the feed when the size does not fit.
std::vector<int64_t> feedShape(const PlanFeed& feed, int64_t size, int64_t batch);

}  // namespace hb
