// A compiled training / evaluation / prediction step: the graph lowered (in TS, by
// lib/graph/compile.ts) to steps over numbered values. Made once; run once per batch
// on the executor of the plan's device, so one training step is one native call. No
// Node types here.
//
// On a CUDA device the dense values (temporaries, parameters) live in device memory;
// the batch's dense feeds are copied there at the start of a run. Embedding tables may
// stay in host memory (embDevice: 'cpu'): their lookups' outputs are copied to the
// device and the gradients back.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "native/core/tensor.h"
#include "native/exec/plan_kernel.h"
#include "native/kernels/embedding_combine.h"
#include "native/kernels/optimizer_rules.h"

namespace hb {

struct PlanValue {
  enum class Kind { Temp, Param, Feed, Produced, Alias };
  Kind kind = Kind::Temp;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // -1: the batch size of the run
  int index = -1;  // Temp: storage slot; Param: params index; Feed: feeds index; Alias: the value
                  // whose memory it views with another shape (a reshape)
};

struct PlanFeed {
  std::string name;  // for messages
  enum class Kind { Dense, Ids, RowSplits, Weights } kind = Kind::Dense;
};

struct PlanStep {
  enum class Kind { Kernel, Lookup, SparseApply, DenseApply };
  Kind kind = Kind::Kernel;
  std::string name;
  // Kernel
  KernelEntry kernel;
  std::vector<int> inputs, outputs;
  std::vector<double> attrs;
  // Lookup: table param, ragged feed, output value
  int table = -1, ids = -1, rowSplits = -1, weights = -1, output = -1;
  Combiner combiner = Combiner::Mean;
  float maxNorm = 0.0f;
  // SparseApply / DenseApply: optimizer index into the run's hyperparameters
  int optimizer = -1, variable = -1;
  std::vector<int> slots;    // params
  std::vector<int> lookups;  // SparseApply: lookup step indices
  std::vector<int> grads;    // value ids: one per lookup (sparse) or one (dense)
};

class Plan {
 public:
  Plan(Device device, std::vector<PlanValue> values, std::vector<Tensor> params, std::vector<PlanFeed> feeds,
       std::vector<PlanStep> steps, int storageCount);

  struct RunResult {
    std::vector<Tensor> fetched;  // host copies
    double nativeMs = 0;
  };

  // Checks the feeds against the plan; on the JS thread, before anything is queued.
  void checkFeeds(int64_t batch, const std::vector<Tensor>& feeds) const;
  // On the executor of device(). Runs of one plan take turns there, so the reused
  // storage is never shared between two runs.
  RunResult run(int64_t batch, const std::vector<Tensor>& feeds, const std::vector<OptimizerHyper>& hypers,
                const std::vector<int>& fetch);

  const std::vector<PlanValue>& values() const { return values_; }
  Device device() const { return device_; }
  size_t optimizerCount() const { return optimizerCount_; }

 private:
  void validate();
  std::vector<int64_t> resolve(const std::vector<int64_t>& shape, int64_t batch) const;

  Device device_;
  std::vector<PlanValue> values_;
  std::vector<Tensor> params_;
  std::vector<PlanFeed> feeds_;
  std::vector<PlanStep> steps_;
  std::vector<int> aliasRoot_;
  std::vector<std::shared_ptr<Buffer>> storage_;
  size_t optimizerCount_ = 0;
};

}  // namespace hb
