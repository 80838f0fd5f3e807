#include "native/exec/plan.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "cuda/dense_kernels.h"
#include "native/core/status.h"
#include "native/embedding/embedding_lookup.h"
#include "native/train/lookup_backward_apply.h"
#include "native/train/optimizer_apply.h"

namespace hb {

namespace {

bool validValue(int id, size_t count) { return id >= 0 && size_t(id) < count; }

}  // namespace

Plan::Plan(Device device, std::vector<PlanValue> values, std::vector<Tensor> params, std::vector<PlanFeed> feeds,
           std::vector<PlanStep> steps, int storageCount)
    : device_(device),
      values_(std::move(values)),
      params_(std::move(params)),
      feeds_(std::move(feeds)),
      steps_(std::move(steps)),
      storage_(size_t(std::max(storageCount, 0))) {
  validate();
}

void Plan::validate() {
  const char* what = "plan";
  aliasRoot_.assign(values_.size(), -1);
  // Kernels read and write their values in the plan's memory; a table read only by
  // lookups may also be in host memory.
  auto checkOnDevice = [&](int p, const std::string& who) {
    HB_CHECK(params_[p].device() == device_, what, ": ", who, " is on ", params_[p].device().str(),
             " but the step runs on ", device_.str(), "; make the model's variables on ", device_.str());
  };
  for (size_t v = 0; v < values_.size(); ++v) {
    const PlanValue& value = values_[v];
    switch (value.kind) {
      case PlanValue::Kind::Temp:
        HB_CHECK(validValue(value.index, storage_.size()), what, ": value ", v, " has no storage slot");
        break;
      case PlanValue::Kind::Param:
        HB_CHECK(validValue(value.index, params_.size()), what, ": value ", v, " names no variable");
        HB_CHECK(params_[value.index].shape == value.shape && params_[value.index].dtype == value.dtype, what,
                 ": value ", v, " does not match its variable's shape ", params_[value.index].shapeString());
        checkOnDevice(value.index, "value " + std::to_string(v) + "'s variable");
        break;
      case PlanValue::Kind::Feed:
        HB_CHECK(validValue(value.index, feeds_.size()), what, ": value ", v, " names no feed");
        // Kernels read feed values as float32: only dense and weight feeds are float32.
        HB_CHECK(value.dtype == DType::Float32 && (feeds_[value.index].kind == PlanFeed::Kind::Dense ||
                                                    feeds_[value.index].kind == PlanFeed::Kind::Weights),
                 what, ": value ", v, " must read a float32 dense feed");
        break;
      case PlanValue::Kind::Produced:
        break;
      case PlanValue::Kind::Alias:
        HB_CHECK(validValue(value.index, v), what, ": alias ", v, " must view an earlier value");
        break;
    }
    // An alias views the memory of the first non-alias value up its chain (its root); the
    // chain is resolved here, once, so a run never walks it.
    aliasRoot_[v] = value.kind == PlanValue::Kind::Alias
                        ? (values_[value.index].kind == PlanValue::Kind::Alias ? aliasRoot_[value.index] : value.index)
                        : int(v);
    for (int64_t d : value.shape) HB_CHECK(d >= -1, what, ": value ", v, " has a bad dimension ", d);
  }
  auto checkValues = [&](const std::vector<int>& ids, const PlanStep& s) {
    for (int id : ids) HB_CHECK(validValue(id, values_.size()), what, ": step ", s.name, " names no value ", id);
  };
  auto checkParam = [&](int p, const PlanStep& s) {
    HB_CHECK(validValue(p, params_.size()), what, ": step ", s.name, " names no variable ", p);
  };
  auto checkFeed = [&](int f, PlanFeed::Kind kind, const PlanStep& s) {
    HB_CHECK(validValue(f, feeds_.size()) && feeds_[f].kind == kind, what, ": step ", s.name, " has a bad feed ", f);
  };
  size_t optimizers = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const PlanStep& s = steps_[i];
    switch (s.kind) {
      case PlanStep::Kind::Kernel:
        HB_CHECK(s.kernel.fn != nullptr, what, ": step ", s.name, " has no kernel");
        checkValues(s.inputs, s);
        checkValues(s.outputs, s);
        for (int id : s.outputs) {
          HB_CHECK(values_[id].kind != PlanValue::Kind::Feed, what, ": step ", s.name, " would write a feed");
        }
        break;
      case PlanStep::Kind::Lookup:
        checkParam(s.table, s);
        HB_CHECK(params_[s.table].device() == device_ || !params_[s.table].device().isCuda(), what, ": lookup ", s.name,
                 "'s table is on ", params_[s.table].device().str(), " but the step runs on ", device_.str());
        checkFeed(s.ids, PlanFeed::Kind::Ids, s);
        checkFeed(s.rowSplits, PlanFeed::Kind::RowSplits, s);
        if (s.weights >= 0) checkFeed(s.weights, PlanFeed::Kind::Weights, s);
        HB_CHECK(validValue(s.output, values_.size()) && values_[s.output].kind == PlanValue::Kind::Produced, what,
                 ": lookup ", s.name, " has a bad output");
        break;
      case PlanStep::Kind::SparseApply:
      case PlanStep::Kind::DenseApply:
        checkParam(s.variable, s);
        for (int p : s.slots) checkParam(p, s);
        checkValues(s.grads, s);
        HB_CHECK(s.optimizer >= 0, what, ": step ", s.name, " has no optimizer");
        optimizers = std::max(optimizers, size_t(s.optimizer) + 1);
        if (s.kind == PlanStep::Kind::DenseApply) {
          HB_CHECK(s.grads.size() == 1, what, ": step ", s.name, " takes one gradient");
          checkOnDevice(s.variable, "the variable " + s.name + " updates");
        } else {
          HB_CHECK(s.grads.size() == s.lookups.size() && !s.lookups.empty(), what, ": step ", s.name,
                   " needs one gradient per lookup");
          for (int l : s.lookups) {
            HB_CHECK(validValue(l, i) && steps_[l].kind == PlanStep::Kind::Lookup && steps_[l].table == s.variable,
                     what, ": step ", s.name, " names a lookup of another table");
          }
        }
        break;
    }
  }
  optimizerCount_ = optimizers;
}

std::vector<int64_t> Plan::resolve(const std::vector<int64_t>& shape, int64_t batch) const {
  std::vector<int64_t> out(shape);
  for (int64_t& d : out) if (d == -1) d = batch;
  return out;
}

void Plan::checkFeeds(int64_t batch, const std::vector<Tensor>& feeds) const {
  HB_CHECK(batch >= 0, "batch size must be >= 0, got ", batch);
  HB_CHECK(feeds.size() == feeds_.size(), "the step takes ", feeds_.size(), " feeds, got ", feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const PlanFeed& f = feeds_[i];
    const Tensor& t = feeds[i];
    switch (f.kind) {
      case PlanFeed::Kind::Dense:
      case PlanFeed::Kind::Weights:
        HB_CHECK(t.dtype == DType::Float32, "feature '", f.name, "' must be float32, got ", dtypeName(t.dtype));
        break;
      case PlanFeed::Kind::Ids:
        HB_CHECK(t.dtype == DType::Int64 || t.dtype == DType::Int32, "feature '", f.name,
                 "' ids must be int64 or int32, got ", dtypeName(t.dtype));
        break;
      case PlanFeed::Kind::RowSplits:
        HB_CHECK(t.dtype == DType::Int32 && t.size() == batch + 1, "feature '", f.name, "' has ", t.size() - 1,
                 " rows but the batch has ", batch);
        break;
    }
  }
  for (const PlanValue& v : values_) {
    if (v.kind != PlanValue::Kind::Feed) continue;
    HB_CHECK(feeds[v.index].dtype == v.dtype, "feature '", feeds_[v.index].name, "' must be ", dtypeName(v.dtype),
             ", got ", dtypeName(feeds[v.index].dtype));
    const int64_t want = shapeSize(resolve(v.shape, batch), "feed");
    HB_CHECK(feeds[v.index].size() == want, "feature '", feeds_[v.index].name, "' has ", feeds[v.index].size(),
             " values but ", want, " were expected (", Tensor{nullptr, v.dtype, resolve(v.shape, batch)}.shapeString(),
             " for a batch of ", batch, ")");
  }
}

Plan::RunResult Plan::run(int64_t batch, const std::vector<Tensor>& feeds, const std::vector<OptimizerHyper>& hypers,
                          const std::vector<int>& fetch) {
  const auto start = std::chrono::steady_clock::now();
  HB_CHECK(hypers.size() >= optimizerCount_, "the step needs ", optimizerCount_, " optimizers' hyperparameters, got ",
           hypers.size());
  for (int id : fetch) HB_CHECK(validValue(id, values_.size()), "plan: fetch names no value ", id);

  // Temporaries share slots (lib/graph/compile.ts assigned them by liveness); each slot
  // grows to the largest value it holds for this batch size and is kept for the next run.
  std::vector<size_t> need(storage_.size(), 0);
  for (const PlanValue& v : values_) {
    if (v.kind != PlanValue::Kind::Temp) continue;
    const size_t bytes = size_t(shapeSize(resolve(v.shape, batch), "plan value")) * dtypeSize(v.dtype);
    need[v.index] = std::max(need[v.index], bytes);
  }
  for (size_t s = 0; s < storage_.size(); ++s) {
    if (!storage_[s] || storage_[s]->bytes() < need[s]) storage_[s] = Buffer::allocate(device_, std::max<size_t>(need[s], 1));
  }
  // Dense feeds the kernels read, in the plan's memory (once each, however many read them).
  std::vector<Tensor> placed(feeds.size());
  auto placedFeed = [&](int f) -> const Tensor& {
    if (placed[f].buffer == nullptr) placed[f] = onDevice(feeds[f], device_);
    return placed[f];
  };
  std::vector<Tensor> bound(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    const PlanValue& v = values_[i];
    switch (v.kind) {
      case PlanValue::Kind::Temp: bound[i] = Tensor{storage_[v.index], v.dtype, resolve(v.shape, batch)}; break;
      case PlanValue::Kind::Param: bound[i] = params_[v.index]; break;
      case PlanValue::Kind::Feed: bound[i] = Tensor{placedFeed(v.index).buffer, v.dtype, resolve(v.shape, batch)}; break;
      case PlanValue::Kind::Produced:
      case PlanValue::Kind::Alias: break;
    }
  }
  auto lookupRequest = [&](const PlanStep& s) {
    SparseLookupRequest r;
    r.table = params_[s.table];
    r.name = s.name;
    r.ids = feeds[s.ids];
    r.rowSplits = feeds[s.rowSplits];
    r.hasWeights = s.weights >= 0;
    if (r.hasWeights) r.weights = feeds[s.weights];
    r.combiner = s.combiner;
    r.maxNorm = s.maxNorm;
    return r;
  };
  // Aliases are bound when first used: their source may be a lookup's output.
  auto valueAt = [&](int id) -> const Tensor& {
    const PlanValue& v = values_[id];
    if (v.kind == PlanValue::Kind::Alias && bound[id].buffer == nullptr) {
      const Tensor& source = bound[aliasRoot_[id]];
      HB_CHECK(source.buffer != nullptr, "plan: reshape ", id, " is read before its source is written");
      Tensor view{source.buffer, v.dtype, resolve(v.shape, batch)};
      HB_CHECK(shapeSize(view.shape, "plan: reshape") == source.size() && v.dtype == source.dtype, "plan: reshape ", id,
               " to ", view.shapeString(), " does not fit its source ", source.shapeString());
      bound[id] = view;
    }
    HB_CHECK(bound[id].buffer != nullptr, "plan: value ", id, " is read before it is written");
    return bound[id];
  };
  auto gather = [&](const std::vector<int>& ids) {
    std::vector<Tensor> out;
    for (int id : ids) out.push_back(valueAt(id));
    return out;
  };

  // The update of one variable with its slots, by the rule and hyperparameters of the
  // step's optimizer (checkOptimizerApply makes sure the slots fit the rule).
  auto updateOf = [&](const PlanStep& s) {
    OptimizerApplyRequest a;
    a.hyper = hypers[s.optimizer];
    a.name = s.name;
    a.var = params_[s.variable];
    a.hasSlot0 = s.slots.size() > 0;
    if (a.hasSlot0) a.slot0 = params_[s.slots[0]];
    a.hasSlot1 = s.slots.size() > 1;
    if (a.hasSlot1) a.slot1 = params_[s.slots[1]];
    return a;
  };

  for (const PlanStep& s : steps_) {
    switch (s.kind) {
      case PlanStep::Kind::Kernel: {
        KernelArgs args{gather(s.inputs), gather(s.outputs), s.attrs, s.name};
        runKernel(s.kernel, args);
        break;
      }
      case PlanStep::Kind::Lookup: {
        const SparseLookupRequest r = lookupRequest(s);
        checkLookupShapes(r);
        bound[s.output] = onDevice(runSparseLookup(r), device_);
        break;
      }
      case PlanStep::Kind::SparseApply: {
        // Every lookup of the table makes one update (shared embedding columns), as TF
        // aggregates IndexedSlices before applying them; on a GPU the gradient stays there.
        std::vector<SparseLookupRequest> lookups;
        std::vector<Tensor> outGrads;
        for (size_t k = 0; k < s.lookups.size(); ++k) {
          lookups.push_back(lookupRequest(steps_[s.lookups[k]]));
          outGrads.push_back(onDevice(valueAt(s.grads[k]), lookups.back().table.device()));
        }
        const OptimizerApplyRequest a = updateOf(s);
        checkLookupBackwardApply(lookups, outGrads, a);
        runLookupBackwardApply(lookups, outGrads, a);
        break;
      }
      case PlanStep::Kind::DenseApply: {
        OptimizerApplyRequest a = updateOf(s);
        a.grad = valueAt(s.grads[0]);
        checkOptimizerApply(a);
        runOptimizerApply(a);
        break;
      }
    }
  }
  RunResult result;
  for (int id : fetch) result.fetched.push_back(copyTensor(gather({id})[0], Device::cpu()));
  // A kernel's failure shows in this step, not in a later one.
  if (device_.isCuda()) cuda::synchronize(device_.index, "a compiled step");
  result.nativeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace hb
