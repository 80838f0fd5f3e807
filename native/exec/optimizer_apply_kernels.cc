// The optimizer updates of a compiled training step, by TF 1.15's rules
// (native/kernels/optimizer_rules.h), with the hyperparameters the step's run passes:
//  - dense_apply: a dense gradient to a variable of the same shape;
//  - sparse_apply: IndexedSlices ((indices, values) pairs, one per read of the table)
//    stacked and applied as one update to the rows they name, as TF aggregates them (the
//    unfused form of lookup_backward_apply); runOptimizerApply sums duplicate rows first,
//    but for gradient descent, which applies each in turn as TF's scatter_sub.
#include <algorithm>
#include <cstring>

#include "native/core/status.h"
#include "native/embedding/embedding_lookup.h"
#include "native/exec/kernel_def.h"
#include "native/exec/update_request.h"

namespace hb {

namespace {

void denseApplyKernel(KernelArgs& args) {
  OptimizerApplyRequest a = updateRequest(args);
  a.grad = args.in[0];
  checkOptimizerApply(a);
  runOptimizerApply(a, args.step ? args.step->finiteChecks : nullptr);
}

// int64 copies of every indices input, one after the other, on the host.
Tensor stackIndices(const KernelArgs& args) {
  int64_t n = 0;
  for (size_t k = 0; k < args.in.size(); k += 2) n += args.in[k].size();
  Tensor out{Buffer::allocate(Device::cpu(), std::max<size_t>(size_t(n) * 8, 1)), DType::Int64, {n}};
  int64_t* dst = out.data<int64_t>();
  for (size_t k = 0; k < args.in.size(); k += 2) {
    const Tensor& t = args.in[k];
    if (t.dtype == DType::Int64) {
      if (t.bytes()) std::memcpy(dst, t.buffer->data(), t.bytes());
    } else {
      const int32_t* src = t.data<int32_t>();
      for (int64_t i = 0; i < t.size(); ++i) dst[i] = src[i];
    }
    dst += t.size();
  }
  return out;
}

// Every values input, rows one after the other, on `device`.
Tensor stackValues(const KernelArgs& args, Device device, const std::vector<int64_t>& rowShape) {
  int64_t rows = 0;
  for (size_t k = 1; k < args.in.size(); k += 2) rows += args.in[k].shape.empty() ? 0 : args.in[k].shape[0];
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), rowShape.begin(), rowShape.end());
  Tensor out{nullptr, DType::Float32, shape};
  out.buffer = Buffer::allocate(device, std::max<size_t>(out.bytes(), 1));
  size_t offset = 0;
  for (size_t k = 1; k < args.in.size(); k += 2) {
    const Tensor& t = args.in[k];
    if (t.bytes()) copyBytes(static_cast<char*>(out.buffer->data()) + offset, device, t.buffer->data(), t.device(), t.bytes());
    offset += t.bytes();
  }
  return out;
}

// Keeps the (index, row of values) pairs whose index is >= 0: indices on the host, values
// where they are (on a device, gathered there by the lookup kernel, one row per bag).
void dropMissingRows(OptimizerApplyRequest& a, const std::string& name) {
  const int64_t n = a.indices.size();
  const int64_t width = n == 0 ? 0 : a.values.size() / n;
  const bool wide = a.indices.dtype == DType::Int64;
  auto at = [&](int64_t i) { return wide ? a.indices.data<int64_t>()[i] : int64_t(a.indices.data<int32_t>()[i]); };
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += at(i) >= 0;
  if (kept == n) return;
  Tensor indices{Buffer::allocate(Device::cpu(), size_t(std::max<int64_t>(kept, 1)) * 8), DType::Int64, {kept}};
  std::vector<int64_t> valueShape = a.values.shape;
  valueShape[0] = kept;
  if (a.values.device().isCuda()) {
    Tensor positions{Buffer::allocate(Device::cpu(), size_t(std::max<int64_t>(kept, 1)) * 8), DType::Int64, {kept}};
    for (int64_t k = 0, i = 0; i < n; ++i) {
      if (at(i) < 0) continue;
      positions.data<int64_t>()[k] = i;
      indices.data<int64_t>()[k++] = at(i);
    }
    Tensor values = runSparseLookup(oneRowPerBag(Tensor{a.values.buffer, DType::Float32, {n, width}}, positions, name, 0.0f));
    values.shape = valueShape;
    a.indices = indices;
    a.values = values;
    return;
  }
  Tensor values{Buffer::allocate(Device::cpu(), size_t(std::max<int64_t>(kept * width, 1)) * 4), DType::Float32, valueShape};
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (at(i) < 0) continue;
    indices.data<int64_t>()[k] = at(i);
    std::memcpy(values.data<float>() + k * width, a.values.data<float>() + i * width, size_t(width) * 4);
    ++k;
  }
  a.indices = indices;
  a.values = values;
}

void sparseApplyKernel(KernelArgs& args) {
  OptimizerApplyRequest a = updateRequest(args);
  HB_CHECK(!args.in.empty() && args.in.size() % 2 == 0, args.name, ": sparse_apply takes (indices, values) pairs");
  a.sparse = true;
  const std::vector<int64_t> rowShape(a.var.shape.begin() + (a.var.shape.empty() ? 0 : 1), a.var.shape.end());
  // Every slice is checked before any is stacked: the stacked buffer is sized from them.
  for (size_t k = 0; k < args.in.size(); k += 2) {
    const Tensor& indices = args.in[k];
    const Tensor& values = args.in[k + 1];
    HB_CHECK_CODE(indices.dtype == DType::Int64 || indices.dtype == DType::Int32, Type, args.name,
                  ": IndexedSlices indices must be int32 or int64, got ", dtypeName(indices.dtype));
    HB_CHECK_CODE(values.dtype == DType::Float32, Type, args.name, ": IndexedSlices values must be float32, got ",
                  dtypeName(values.dtype));
    HB_CHECK_CODE(!values.shape.empty() && values.shape[0] == indices.size() &&
                      std::vector<int64_t>(values.shape.begin() + 1, values.shape.end()) == rowShape,
                  Shape, args.name, ": IndexedSlices ", k / 2, " has values ", values.shapeString(), " for ",
                  indices.size(), " indices of a variable ", a.var.shapeString());
  }
  if (args.in.size() == 2) {
    a.indices = args.in[0];
    a.values = onDevice(args.in[1], a.var.device());
  } else {
    a.indices = stackIndices(args);
    a.values = stackValues(args, a.var.device(), rowShape);
  }
  // A dynamic table's lookup names ids without a row (not admitted) -1: no update.
  if (attrOr(args, 1, 0) != 0) dropMissingRows(a, args.name);
  checkOptimizerApply(a);
  runOptimizerApply(a, args.step ? args.step->finiteChecks : nullptr);
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("dense_apply", denseApplyKernel, KernelPlacement::Device)
                       .input("grad", f32()).inPlaceOutput("variable", f32()).inPlaceOutput("slot", f32())
                       .repeatOutputs(1).optimizer().writesVariables());
HB_REGISTER_KERNEL(KernelDef("sparse_apply", sparseApplyKernel, KernelPlacement::Any)
                       .hostInput("indices", ids()).input("values", f32()).repeatInputs(0)
                       .inPlaceOutput("variable", f32()).inPlaceOutput("slot", f32()).repeatOutputs(1)
                       .optimizer().boolean("skipMissing", false).writesVariables());

}  // namespace hb
