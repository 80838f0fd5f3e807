// The one table of kernels. Each kernel file registers its kernels with a description:
// inputs and outputs (names, allowed dtypes), attrs (names, kinds, enum values), where it
// runs, and whether it writes variables. The plan checks every step against it, and
// kernelRegistry() exports it to TypeScript, which compiles graphs against the same
// table: op, combiner and optimizer codes are written here only (enum attrs travel as
// names and become codes when a plan is made).
#pragma once

#include <string>
#include <vector>

#include "native/core/dtype.h"
#include "native/exec/kernel_args.h"

namespace hb {

// Bumped whenever the plan format or a kernel's description changes in a way older
// TypeScript would get wrong; lib/native.ts refuses an addon with another version.
constexpr int kKernelRegistryVersion = 4;

enum class KernelPlacement {
  Device,  // all tensors on one device; the kernel has a CPU loop and a CUDA path
  Host,    // host memory only: on a GPU plan it gets host copies, its outputs are copied back
  Any,     // takes tensors wherever they are and moves what it needs itself
};

struct TensorDef {
  std::string name;
  std::vector<DType> dtypes;  // allowed
  bool optional = false;      // may be absent (-1 in a plan step)
  bool host = false;          // an Any kernel reads this input on the host
  bool inPlace = false;       // an output that is read and written (a variable, an accumulator)
  bool sized = false;         // an output the kernel sizes at run time (allocateOutput): a
                              // plan gives it no memory, and its value must be dynamic
};

struct AttrDef {
  enum class Kind { Number, Integer, Boolean, Enum, NumberList, EnumList, OptimizerIndex };
  std::string name;
  Kind kind = Kind::Number;
  std::vector<std::string> values;  // Enum / EnumList: the names; a value's code is its index
  bool required = true;
  double fallback = 0;
};

struct KernelDef {
  std::string name;
  KernelFn fn = nullptr;
  KernelPlacement placement = KernelPlacement::Device;
  std::vector<TensorDef> inputs, outputs;
  // Inputs (outputs) from this index on form a group that repeats one or more times
  // (concat's inputs, the (indices, values) pairs of a sparse update); -1: none.
  int repeatInputsFrom = -1;
  int repeatOutputsFrom = -1;
  std::vector<AttrDef> attrs;
  bool stateful = false;  // writes variables: ordered after every read of them
  // A distribute::CollectiveKind (0: none): the step exchanges with the other ranks, so
  // a rank whose step fails before it tells them there (native/exec/plan.cc).
  int collective = 0;

  KernelDef(std::string name, KernelFn fn, KernelPlacement placement)
      : name(std::move(name)), fn(fn), placement(placement) {}

  KernelDef& input(std::string n, std::vector<DType> dtypes) {
    inputs.push_back(TensorDef{std::move(n), std::move(dtypes)});
    return *this;
  }
  KernelDef& optionalInput(std::string n, std::vector<DType> dtypes) {
    inputs.push_back(TensorDef{std::move(n), std::move(dtypes), true});
    return *this;
  }
  KernelDef& hostInput(std::string n, std::vector<DType> dtypes, bool optional = false) {
    inputs.push_back(TensorDef{std::move(n), std::move(dtypes), optional, true});
    return *this;
  }
  KernelDef& output(std::string n, std::vector<DType> dtypes) {
    outputs.push_back(TensorDef{std::move(n), std::move(dtypes)});
    return *this;
  }
  KernelDef& sizedOutput(std::string n, std::vector<DType> dtypes, bool optional = false) {
    outputs.push_back(TensorDef{std::move(n), std::move(dtypes), optional, false, false, true});
    return *this;
  }
  KernelDef& inPlaceOutput(std::string n, std::vector<DType> dtypes, bool optional = false) {
    outputs.push_back(TensorDef{std::move(n), std::move(dtypes), optional, false, true});
    return *this;
  }
  KernelDef& repeatInputs(int from) { repeatInputsFrom = from; return *this; }
  KernelDef& repeatOutputs(int from) { repeatOutputsFrom = from; return *this; }
  KernelDef& number(std::string n) { return attr(std::move(n), AttrDef::Kind::Number, {}, true, 0); }
  KernelDef& number(std::string n, double fallback) { return attr(std::move(n), AttrDef::Kind::Number, {}, false, fallback); }
  KernelDef& integer(std::string n) { return attr(std::move(n), AttrDef::Kind::Integer, {}, true, 0); }
  KernelDef& integer(std::string n, double fallback) { return attr(std::move(n), AttrDef::Kind::Integer, {}, false, fallback); }
  KernelDef& boolean(std::string n, bool fallback) { return attr(std::move(n), AttrDef::Kind::Boolean, {}, false, fallback); }
  KernelDef& enumeration(std::string n, std::vector<std::string> values) {
    return attr(std::move(n), AttrDef::Kind::Enum, std::move(values), true, 0);
  }
  KernelDef& numberList(std::string n) { return attr(std::move(n), AttrDef::Kind::NumberList, {}, true, 0); }
  KernelDef& enumList(std::string n, std::vector<std::string> values) {
    return attr(std::move(n), AttrDef::Kind::EnumList, std::move(values), true, 0);
  }
  KernelDef& optimizer() { return attr("optimizer", AttrDef::Kind::OptimizerIndex, {}, true, 0); }
  KernelDef& writesVariables() { stateful = true; return *this; }
  KernelDef& exchanges(int kind) { collective = kind; return *this; }

 private:
  KernelDef& attr(std::string n, AttrDef::Kind kind, std::vector<std::string> values, bool required, double fallback) {
    attrs.push_back(AttrDef{std::move(n), kind, std::move(values), required, fallback});
    return *this;
  }
};

// Registers `def`; a second kernel of the same name, or a repeated group with no
// entries, aborts at load.
bool registerKernel(KernelDef def);

// The description of input / output position `i` of a list whose entries from
// `repeatFrom` on repeat as a group (-1: none); nullptr past the end of a fixed list.
const TensorDef* tensorDefAt(const std::vector<TensorDef>& defs, int repeatFrom, size_t i);
// The kernel named `name`; throws hb::Error naming it when there is none.
const KernelDef& findKernel(const std::string& name);
// Every kernel, by name.
std::vector<const KernelDef*> allKernels();

// Runs `kernel` on `args`: by way of host copies when it is a Host kernel and some of
// args' tensors are on a CUDA device; kernels on a device are queued on its stream.
void runKernel(const KernelDef& kernel, KernelArgs& args);

// Checks a step's tensors against the description before it runs: counts (with
// optional entries and repeated groups), dtypes. `inputs` / `outputs` give dtypes, with
// nullptr for an absent optional entry.
void checkKernelSignature(const KernelDef& kernel, const std::vector<const DType*>& inputs,
                          const std::vector<const DType*>& outputs, const std::string& step);

// The dtype lists kernels use most.
inline std::vector<DType> f32() { return {DType::Float32}; }
inline std::vector<DType> ids() { return {DType::Int32, DType::Int64}; }
inline std::vector<DType> i32() { return {DType::Int32}; }
inline std::vector<DType> i64() { return {DType::Int64}; }

}  // namespace hb

#define HB_KERNEL_CONCAT_INNER(a, b) a##b
#define HB_KERNEL_CONCAT(a, b) HB_KERNEL_CONCAT_INNER(a, b)
#define HB_REGISTER_KERNEL(def) \
  static const bool HB_KERNEL_CONCAT(hbKernelRegistered_, __LINE__) = ::hb::registerKernel(def)
