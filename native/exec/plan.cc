#include "native/exec/plan.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <set>
#include <string>
#include <utility>

#include "cuda/dense_kernels.h"
#include "native/core/env_switch.h"
#include "native/core/executor.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/distribute/collectives.h"
#include "native/distribute/world.h"

namespace hb {

namespace {

bool validValue(int id, size_t count) { return id >= 0 && size_t(id) < count; }

std::string shapeText(DType dtype, const std::vector<int64_t>& shape) {
  std::string s = std::string(dtypeName(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "");
    s += shape[i] == kBatchDim ? "batch" : shape[i] == kDynamicDim ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

// Product of the known dimensions, refusing a count past 2^53 (a wrapped product would
// pass as a small one).
int64_t knownSize(const std::vector<int64_t>& shape, const std::string& what) {
  constexpr int64_t kMax = int64_t(1) << 53;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) continue;
    HB_CHECK_CODE(d == 0 || n <= kMax / d, Shape, what, ": shape has more than 2^53 elements");
    n *= d;
  }
  return n;
}

// Kernels whose consecutive steps in a CPU plan may run side by side, each on one thread
// of the pool: a table's lookup, a table's backward and update. A model of many small
// tables (DLRM's 26) has a step of each per table, often too small to keep two threads
// busy (a table of 16 floats at batch 1024: 30-50 us a step, most of it waiting on
// memory); the run decides by their number and size (sideBySideWork).
bool runsBesideItsKind(const KernelDef& kernel) {
  return kernel.collective == 0 && (kernel.name == "embedding_lookup" || kernel.name == "lookup_backward_apply");
}

// The floats a step of those kernels reads and writes (its ids times its table's width).
// Steps side by side each get one thread: a few large ones are better off splitting their
// loops over the whole pool, one after another.
int64_t sideBySideWork(const KernelDef& kernel, const KernelArgs& args) {
  const bool lookup = kernel.name == "embedding_lookup";
  const Tensor& table = lookup ? args.in[0] : args.out[0];
  const int64_t width = table.shape.size() == 2 ? table.shape[1] : 1;
  int64_t ids = 0;
  if (lookup) {
    ids = args.in[1].size();
  } else {
    for (size_t i = 0; i < args.in.size(); i += 4) ids += args.in[i].size();  // per lookup: ids, splits, weights, dy
  }
  return ids * width;
}

// The most work a step of a group smaller than the pool may have to run beside the others
// (a table of 64 floats at batch 2048).
constexpr int64_t kSideBySideWork = int64_t(1) << 17;

// HB_SIDE_BY_SIDE=0 runs every step after the one before (to compare).
bool sideBySideWanted() {
  static const bool wanted = switchedOn("HB_SIDE_BY_SIDE");
  return wanted;
}

}  // namespace

std::vector<int64_t> feedShape(const PlanFeed& feed, int64_t size, int64_t batch) {
  std::vector<int64_t> shape(feed.shape);
  int dynamic = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == kBatchDim) shape[i] = batch;
    if (shape[i] == kDynamicDim) dynamic = int(i);
  }
  const int64_t known = knownSize(shape, "feature '" + feed.name + "'");
  if (dynamic >= 0) {
    HB_CHECK_CODE(known > 0 ? size % known == 0 : size == 0, Shape, "feature '", feed.name, "' has ", size,
                  " values, which do not fill rows of ", known);
    shape[size_t(dynamic)] = known > 0 ? size / known : 0;
  } else {
    HB_CHECK_CODE(size == known, Shape, "feature '", feed.name, "' has ", size, " values but ", known,
                  " were expected (", shapeText(feed.dtype, shape), " for a batch of ", batch, ")");
  }
  return shape;
}

Plan::Plan(Device device, std::vector<PlanValue> values, std::vector<PlanParam> paramSpecs, std::vector<Tensor> params,
           std::vector<PlanFeed> feeds, std::vector<PlanStep> steps, int storageCount)
    : device_(device),
      values_(std::move(values)),
      paramSpecs_(std::move(paramSpecs)),
      params_(std::move(params)),
      feeds_(std::move(feeds)),
      steps_(std::move(steps)),
      storage_(size_t(std::max(storageCount, 0))),
      dynamic_(values_.size()) {
  validate();
  findSideBySideSteps();
}

void Plan::findSideBySideSteps() {
  sideBySideEnd_.resize(steps_.size());
  for (size_t at = 0; at < steps_.size(); ++at) sideBySideEnd_[at] = at + 1;
  if (device_.isCuda() || threadPoolSize() < 2 || !sideBySideWanted()) return;
  // The memory a value lives in: a storage slot (temporaries share them), a parameter's
  // buffer (two parameters may be given one) or a feed. Steps side by side must not write
  // memory another of them reads or writes.
  using Memory = std::pair<PlanValue::Kind, intptr_t>;
  const auto memoryOf = [&](int id) -> Memory {
    const PlanValue& v = values_[size_t(aliasRoot_[size_t(id)])];
    if (v.kind == PlanValue::Kind::Param) return {v.kind, reinterpret_cast<intptr_t>(params_[size_t(v.index)].buffer->data())};
    return {v.kind, v.kind == PlanValue::Kind::Dynamic ? aliasRoot_[size_t(id)] : v.index};
  };
  const auto joins = [&](const PlanStep& s, std::set<Memory>& read, std::set<Memory>& written) {
    std::set<Memory> reads, writes;
    for (int id : s.inputs) {
      if (id >= 0) reads.insert(memoryOf(id));
    }
    for (int id : s.outputs) {
      if (id < 0) continue;
      // Outputs the run sizes or binds as it goes stay with steps that run alone.
      if (values_[size_t(id)].kind == PlanValue::Kind::Dynamic) return false;
      writes.insert(memoryOf(id));
    }
    for (const Memory& m : writes) {
      if (read.count(m) || written.count(m) || reads.count(m)) return false;
    }
    for (const Memory& m : reads) {
      if (written.count(m)) return false;
    }
    read.insert(reads.begin(), reads.end());
    written.insert(writes.begin(), writes.end());
    return true;
  };
  for (size_t at = 0; at < steps_.size();) {
    size_t end = at + 1;
    std::set<Memory> read, written;
    if (runsBesideItsKind(*steps_[at].kernel) && joins(steps_[at], read, written)) {
      while (end < steps_.size() && steps_[end].kernel == steps_[at].kernel && joins(steps_[end], read, written)) ++end;
    }
    sideBySideEnd_[at] = end;
    at = end;
  }
}

void Plan::validate() {
  const char* what = "plan";
  HB_CHECK(paramSpecs_.size() == params_.size(), what, ": the spec describes ", paramSpecs_.size(),
           " parameters but ", params_.size(), " tensors were given");
  for (size_t p = 0; p < params_.size(); ++p) {
    const PlanParam& spec = paramSpecs_[p];
    const Tensor& t = params_[p];
    HB_CHECK_CODE(t.dtype == spec.dtype && t.shape == spec.shape, Shape, what, ": parameter '", spec.name, "' must be ",
                  shapeText(spec.dtype, spec.shape), ", got ", shapeText(t.dtype, t.shape));
    HB_CHECK_CODE(!t.device().isCuda() || t.device() == device_, Device, what, ": parameter '", spec.name, "' is on ",
                  t.device().str(), " but the plan runs on ", device_.str());
    if (device_.isCuda() && !t.device().isCuda()) readsHostParameters_ = true;
  }
  for (const PlanFeed& f : feeds_) {
    int dynamic = 0;
    for (int64_t d : f.shape) {
      HB_CHECK(d >= kDynamicDim, what, ": feed '", f.name, "' has a bad dimension ", d);
      dynamic += d == kDynamicDim;
    }
    HB_CHECK(dynamic <= 1, what, ": feed '", f.name, "' may have one dynamic dimension, not ", dynamic);
    knownSize(f.shape, std::string("plan: feed '") + f.name + "'");
  }
  aliasRoot_.assign(values_.size(), -1);
  for (size_t v = 0; v < values_.size(); ++v) {
    const PlanValue& value = values_[v];
    bool dynamicShape = false;
    for (int64_t d : value.shape) {
      HB_CHECK(d >= kDynamicDim, what, ": value ", v, " has a bad dimension ", d);
      dynamicShape = dynamicShape || d == kDynamicDim;
    }
    switch (value.kind) {
      case PlanValue::Kind::Temp:
        HB_CHECK(validValue(value.index, storage_.size()), what, ": value ", v, " has no storage slot");
        HB_CHECK(!dynamicShape, what, ": value ", v, " is sized at run time, so it must be dynamic, not a temporary");
        break;
      case PlanValue::Kind::Param:
        HB_CHECK(validValue(value.index, params_.size()), what, ": value ", v, " names no variable");
        HB_CHECK_CODE(paramSpecs_[value.index].shape == value.shape && paramSpecs_[value.index].dtype == value.dtype,
                      Shape, what, ": value ", v, " does not match parameter '", paramSpecs_[value.index].name, "' (",
                      shapeText(paramSpecs_[value.index].dtype, paramSpecs_[value.index].shape), ")");
        break;
      case PlanValue::Kind::Feed:
        HB_CHECK(validValue(value.index, feeds_.size()), what, ": value ", v, " names no feed");
        HB_CHECK_CODE(feeds_[value.index].shape == value.shape && feeds_[value.index].dtype == value.dtype, Shape, what,
                      ": value ", v, " does not match feed '", feeds_[value.index].name, "' (",
                      shapeText(feeds_[value.index].dtype, feeds_[value.index].shape), ")");
        break;
      case PlanValue::Kind::Alias:
        HB_CHECK(validValue(value.index, v), what, ": alias ", v, " must view an earlier value");
        HB_CHECK(!dynamicShape, what, ": alias ", v, " must have a shape known before the run");
        break;
      case PlanValue::Kind::Dynamic:
        // -1: sized by the kernel writing it; else its dynamic dims are those of value
        // `index` (same rank) as it is when written.
        HB_CHECK(value.index == -1 || validValue(value.index, v), what, ": dynamic value ", v,
                 " must be sized by its kernel (-1) or like an earlier value");
        HB_CHECK(value.index == -1 || values_[value.index].shape.size() == value.shape.size(), what,
                 ": dynamic value ", v, " must have the rank of the value it is sized like");
        break;
    }
    // An alias views the memory of the first non-alias value up its chain (its root); the
    // chain is resolved here, once, so a run never walks it.
    aliasRoot_[v] = value.kind == PlanValue::Kind::Alias
                        ? (values_[value.index].kind == PlanValue::Kind::Alias ? aliasRoot_[value.index] : value.index)
                        : int(v);
    HB_CHECK_CODE(value.kind != PlanValue::Kind::Alias || values_[aliasRoot_[v]].dtype == value.dtype, Type, what,
                  ": alias ", v, " changes the dtype of its source");
  }
  size_t optimizers = 0;
  for (const PlanStep& s : steps_) {
    HB_CHECK(s.kernel != nullptr && s.kernel->fn != nullptr, what, ": step ", s.name, " has no kernel");
    const KernelDef& k = *s.kernel;
    std::vector<const DType*> inputTypes;
    for (int id : s.inputs) {
      HB_CHECK(id == -1 || validValue(id, values_.size()), what, ": step ", s.name, " names no value ", id);
      inputTypes.push_back(id == -1 ? nullptr : &values_[id].dtype);
    }
    std::vector<const DType*> outputTypes;
    for (int id : s.outputs) {
      HB_CHECK(id == -1 || validValue(id, values_.size()), what, ": step ", s.name, " names no value ", id);
      outputTypes.push_back(id == -1 ? nullptr : &values_[id].dtype);
    }
    checkKernelSignature(k, inputTypes, outputTypes, s.name);
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      if (s.outputs[o] < 0) continue;
      const PlanValue& out = values_[s.outputs[o]];
      const TensorDef& def = *tensorDefAt(k.outputs, k.repeatOutputsFrom, o);
      HB_CHECK(out.kind != PlanValue::Kind::Feed && out.kind != PlanValue::Kind::Alias, what, ": step ", s.name,
               " would write a feed or a reshape");
      // A kernel that sizes an output needs a value with no memory yet; any other kernel
      // needs memory given to it.
      const bool sizedByKernel = out.kind == PlanValue::Kind::Dynamic && out.index == -1;
      HB_CHECK(def.sized == sizedByKernel, what, ": step ", s.name, ": kernel ", k.name, " output ", o, " (", def.name,
               def.sized ? ") is sized by the kernel, so its value must be dynamic"
                         : ") is written into memory the plan gives, so its value cannot be sized by the kernel");
      // Only a kernel that says it updates its output in place may touch a parameter:
      // a plan cannot overwrite a variable by mistake.
      HB_CHECK(def.inPlace || out.kind != PlanValue::Kind::Param, what, ": step ", s.name, " would overwrite parameter '",
               paramSpecs_[out.index].name, "'");
      HB_CHECK(!def.inPlace || out.kind == PlanValue::Kind::Param || out.kind == PlanValue::Kind::Temp, what, ": step ",
               s.name, " updates output ", o, " (", def.name, ") in place, so it must be a parameter or a temporary");
    }
    // Kernels other than Any read and write their values in the plan's memory; a table
    // read only by Any kernels (lookups, their updates) may also be in host memory, and
    // Host kernels (a dynamic table's row lookup) read a parameter there in place.
    if (k.placement != KernelPlacement::Any) {
      for (const auto* ids : {&s.inputs, &s.outputs}) {
        for (int id : *ids) {
          if (id < 0 || values_[aliasRoot_[id]].kind != PlanValue::Kind::Param) continue;
          const int p = values_[aliasRoot_[id]].index;
          if (k.placement == KernelPlacement::Host && !params_[p].device().isCuda()) continue;
          HB_CHECK_CODE(params_[p].device() == device_, Device, what, ": ", s.name, " reads '", paramSpecs_[p].name,
                        "', which is on ", params_[p].device().str(), " but the step runs on ", device_.str(),
                        "; make the model's variables on ", device_.str());
        }
      }
    }
    for (size_t a = 0, scalar = 0; a < k.attrs.size(); ++a) {
      const AttrDef& attr = k.attrs[a];
      const bool isList = attr.kind == AttrDef::Kind::NumberList || attr.kind == AttrDef::Kind::EnumList;
      if (isList) continue;
      if (attr.kind == AttrDef::Kind::OptimizerIndex) optimizers = std::max(optimizers, size_t(s.attrs[scalar]) + 1);
      ++scalar;
    }
  }
  optimizerCount_ = optimizers;
  for (const PlanStep& s : steps_) hasExchanges_ = hasExchanges_ || s.kernel->collective != 0;
}

void Plan::tellPeersOfFailure(size_t firstStep, const std::string& why) const {
  std::shared_ptr<distribute::ProcessGroup> group = distribute::worldGroup();
  if (!group || group->worldSize() == 1) return;
  int kind = 0;
  for (size_t at = firstStep; at < steps_.size() && kind == 0; ++at) kind = steps_[at].kernel->collective;
  if (kind != 0) {
    // The others wait in this step's next exchange now: they hear it there at once.
    try {
      distribute::announceFailure(*group, distribute::CollectiveKind(kind), why);
    } catch (const std::exception&) {
      // The error this rank reports is its own, thrown by the caller.
    }
    return;
  }
  // Past the step's last exchange (an update that refused a gradient only this rank
  // holds): the others hear of it in their next exchange, whichever it is (a next step's
  // flags, a save). That may never come, so it is announced from the group's own queue,
  // and this rank's error goes up at once: the process may end before it is sent (the
  // others then learn that it has gone).
  if (steps_.empty() || steps_[0].kernel->name != "step_sync") return;
  const Device queueDevice = group->backend() == "nccl" ? group->config().device : Device::cpu();
  submitToQueue(distribute::processGroupQueue(), queueDevice, [group, why] {
    try {
      distribute::announceFailure(*group, distribute::CollectiveKind::Allreduce, why);
    } catch (const std::exception&) {
    }
  });
}

std::vector<int64_t> Plan::resolve(const std::vector<int64_t>& shape, int64_t batch) const {
  std::vector<int64_t> out(shape);
  for (int64_t& d : out) if (d == kBatchDim) d = batch;
  return out;
}

void Plan::checkFeeds(int64_t batch, const std::vector<Tensor>& feeds) const {
  HB_CHECK(batch >= 0, "batch size must be >= 0, got ", batch);
  HB_CHECK(feeds.size() == feeds_.size(), "the step takes ", feeds_.size(), " feeds, got ", feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const PlanFeed& f = feeds_[i];
    HB_CHECK_CODE(feeds[i].dtype == f.dtype, Type, "feature '", f.name, "' must be ", dtypeName(f.dtype), ", got ",
                  dtypeName(feeds[i].dtype));
    feedShape(f, feeds[i].size(), batch);
  }
}

Plan::RunResult Plan::run(int64_t batch, const std::vector<Tensor>& feeds, const std::vector<OptimizerHyper>& hypers,
                          const std::vector<int>& fetch, int64_t globalStep) {
  const auto start = std::chrono::steady_clock::now();
  HB_CHECK(hypers.size() >= optimizerCount_, "the step needs ", optimizerCount_, " optimizers' hyperparameters, got ",
           hypers.size());
  for (int id : fetch) HB_CHECK(validValue(id, values_.size()), "plan: fetch names no value ", id);
  StepContext context;
  context.batch = batch;
  context.globalStep = globalStep;
  context.hypers = hypers;
  context.device = device_;
  if (device_.isCuda()) {
    if (!finiteChecks_) finiteChecks_ = std::make_unique<DeferredFiniteChecks>(device_);
    finiteChecks_->beginStep();
    context.finiteChecks = finiteChecks_.get();
  }

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
  std::vector<Tensor> bound(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    const PlanValue& v = values_[i];
    switch (v.kind) {
      case PlanValue::Kind::Temp: bound[i] = Tensor{storage_[v.index], v.dtype, resolve(v.shape, batch)}; break;
      case PlanValue::Kind::Param: bound[i] = params_[v.index]; break;
      case PlanValue::Kind::Feed: {
        const Tensor& fed = feeds[v.index];
        bound[i] = Tensor{fed.buffer, v.dtype, feedShape(feeds_[v.index], fed.size(), batch)};
        break;
      }
      case PlanValue::Kind::Alias:
      case PlanValue::Kind::Dynamic: break;
    }
  }
  // Aliases are bound when first used: their source may be written by a step.
  auto valueAt = [&](int id) -> const Tensor& {
    const PlanValue& v = values_[id];
    if (v.kind == PlanValue::Kind::Alias && bound[id].buffer == nullptr) {
      const Tensor& source = bound[aliasRoot_[id]];
      HB_CHECK(source.buffer != nullptr, "plan: reshape ", id, " is read before its source is written");
      Tensor view{source.buffer, v.dtype, resolve(v.shape, batch)};
      HB_CHECK_CODE(shapeSize(view.shape, "plan: reshape") == source.size(), Shape, "plan: reshape ", id, " to ",
                    view.shapeString(), " does not fit its source ", source.shapeString());
      bound[id] = view;
    }
    HB_CHECK(bound[id].buffer != nullptr, "plan: value ", id, " is read before it is written");
    return bound[id];
  };
  // A value in the memory a kernel needs, copied there once per run (and again after a
  // step rewrites it).
  std::vector<Tensor> onHost(values_.size()), onPlanDevice(values_.size());
  auto placed = [&](int id, Device where) -> Tensor {
    const Tensor& t = valueAt(id);
    if (t.device() == where) return t;
    Tensor& copy = where.isCuda() ? onPlanDevice[id] : onHost[id];
    if (copy.buffer == nullptr) copy = copyTensor(t, where);
    return copy;
  };

  // A step's arguments, its inputs placed where its kernel reads them and its outputs
  // bound; then, once it has run, what it wrote made readable to the steps after it. On
  // the thread running the plan: both read and write the run's bindings.
  const auto argumentsOf = [&](const PlanStep& s) {
    const KernelDef& k = *s.kernel;
    KernelArgs args;
    args.name = s.name;
    args.attrs = s.attrs;
    args.listAttrs = s.listAttrs;
    args.step = &context;
    args.outputDevice = device_;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const int id = s.inputs[i];
      if (id < 0) {
        args.in.push_back(Tensor{});
        continue;
      }
      switch (k.placement) {
        case KernelPlacement::Device: args.in.push_back(placed(id, device_)); break;
        case KernelPlacement::Host: args.in.push_back(placed(id, Device::cpu())); break;
        case KernelPlacement::Any:
          args.in.push_back(tensorDefAt(k.inputs, k.repeatInputsFrom, i)->host ? placed(id, Device::cpu()) : valueAt(id));
          break;
      }
    }
    args.outputCache.assign(s.outputs.size(), nullptr);
    args.outputAbsent.assign(s.outputs.size(), false);
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      const int id = s.outputs[o];
      if (id < 0) {
        args.out.push_back(Tensor{});
        args.outputAbsent[o] = true;
      } else if (values_[id].kind == PlanValue::Kind::Dynamic && values_[id].index < 0) {
        args.out.push_back(Tensor{nullptr, values_[id].dtype, {}});
        args.outputCache[o] = &dynamic_[id];
      } else if (values_[id].kind == PlanValue::Kind::Dynamic) {
        // Its dynamic dims are another value's in this run (an elementwise op over unique rows).
        const std::vector<int64_t>& like = valueAt(values_[id].index).shape;
        std::vector<int64_t> shape = resolve(values_[id].shape, batch);
        HB_CHECK_CODE(like.size() == shape.size(), Shape, s.name, ": value ", id, " is sized like a value of rank ",
                      like.size());
        for (size_t d = 0; d < shape.size(); ++d) {
          if (values_[id].shape[d] == kDynamicDim) shape[d] = like[d];
        }
        const size_t bytes = size_t(shapeSize(shape, "plan value")) * dtypeSize(values_[id].dtype);
        std::shared_ptr<Buffer>& cached = dynamic_[id];
        if (!cached || cached->bytes() < bytes) cached = Buffer::allocate(device_, std::max<size_t>(bytes, 1));
        bound[id] = Tensor{cached, values_[id].dtype, shape};
        args.out.push_back(bound[id]);
      } else {
        args.out.push_back(valueAt(id));
      }
    }
    return args;
  };
  const auto written = [&](const PlanStep& s, const KernelArgs& args) {
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      const int id = s.outputs[o];
      if (id < 0) continue;
      HB_CHECK_CODE(args.out[o].buffer != nullptr, Internal, s.name, ": kernel ", s.kernel->name, " did not size output ", o);
      if (values_[id].kind == PlanValue::Kind::Dynamic) bound[id] = args.out[o];
      onHost[id] = Tensor{};
      onPlanDevice[id] = Tensor{};
    }
  };
  const auto profiled = [&](const PlanStep& s, double ms, bool besideOthers) {
    recordKernelTime(s.kernel->name, s.kernel->collective != 0 ? StepPhase::Exchange : s.phase, ms, besideOthers);
  };

  const bool profiling = stepProfileOn();
  for (size_t at = 0; at < steps_.size();) {
    const size_t end = sideBySideEnd_[at];
    if (end > at + 1) {
      // Steps that may run side by side (findSideBySideSteps): all their arguments first,
      // then, when they are many or each is small, one step per thread (a parallelFor
      // inside a kernel then runs on that thread), else one after another. A failure is
      // the first failed step's; side by side, steps after it may have run (and updated
      // their tables), and one whose arguments could not be made stops them all first.
      const size_t n = end - at;
      std::vector<KernelArgs> args;
      std::vector<std::exception_ptr> failed(n);
      std::vector<double> ms(n, 0.0);
      int64_t largest = 0;
      for (size_t g = 0; g < n; ++g) {
        try {
          args.push_back(argumentsOf(steps_[at + g]));
          largest = std::max(largest, sideBySideWork(*steps_[at + g].kernel, args.back()));
        } catch (const std::exception& e) {
          tellPeersOfFailure(at + g + 1, steps_[at + g].name + ": " + e.what());
          throw;
        }
      }
      const bool together = int64_t(n) >= int64_t(threadPoolSize()) || largest <= kSideBySideWork;
      const auto runStep = [&](size_t g) {
        const auto kernelStart = std::chrono::steady_clock::now();
        try {
          runKernel(*steps_[at + g].kernel, args[g]);
        } catch (...) {
          failed[g] = std::current_exception();
        }
        ms[g] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kernelStart).count();
      };
      if (together) {
        parallelFor(int64_t(n), 1, [&](int64_t g0, int64_t g1) {
          for (int64_t g = g0; g < g1; ++g) runStep(size_t(g));
        });
      } else {
        for (size_t g = 0; g < n && !(g > 0 && failed[g - 1]); ++g) runStep(g);
      }
      for (size_t g = 0; g < n; ++g) {
        const PlanStep& s = steps_[at + g];
        try {
          if (failed[g]) std::rethrow_exception(failed[g]);
          if (profiling) profiled(s, ms[g], together);
          written(s, args[g]);
        } catch (const std::exception& e) {
          tellPeersOfFailure(at + g + 1, s.name + ": " + e.what());
          throw;
        }
      }
      at = end;
      continue;
    }
    const PlanStep& s = steps_[at];
    try {
      KernelArgs args = argumentsOf(s);
      const auto kernelStart = profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      runKernel(*s.kernel, args);
      if (profiling) {
        // A kernel's time on a GPU is known once it has finished: profiled GPU runs wait
        // for each step.
        if (device_.isCuda()) cuda::synchronize(device_.index, s.name.c_str());
        profiled(s, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kernelStart).count(), false);
      }
      written(s, args);
    } catch (const std::exception& e) {
      // A collective kernel settles its own failures with its peers; any other step
      // tells them in the next exchange they will wait in.
      if (s.kernel->collective == 0) tellPeersOfFailure(at + 1, s.name + ": " + e.what());
      throw;
    }
    ++at;
  }

  // A gradient that was not finite: its update was skipped on the device; the step fails
  // here, as it would have at that update.
  if (context.finiteChecks) {
    try {
      context.finiteChecks->throwIfAnyFailed();
    } catch (const std::exception& e) {
      tellPeersOfFailure(steps_.size(), e.what());
      throw;
    }
  }
  RunResult result;
  for (int id : fetch) result.fetched.push_back(copyTensor(valueAt(id), Device::cpu()));
  // A kernel's failure shows in this step, not in a later one.
  if (device_.isCuda()) cuda::synchronize(device_.index, "a compiled step");
  result.nativeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (profiling) recordPlanRun(result.nativeMs);
  return result;
}

}  // namespace hb
