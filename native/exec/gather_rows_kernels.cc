// gather_rows: table rows by id (tf.gather / embedding_lookup), each row clipped to
// maxNorm as clip_by_norm does; ids < 0 give zero rows. It runs the lookup kernel with
// one id per bag ('sum' of one row is that row), so rows are gathered on the table's
// device by the same code the fused lookup runs. gather_rows_clip_grad is its gradient
// through the clip (rows read as they are before any update of this step).
#include <algorithm>
#include <cstring>

#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/embedding/embedding_lookup.h"
#include "native/exec/kernel_def.h"

namespace hb {

namespace {

// `rows` (on the table's device) into out[index], wherever that output goes.
void writeRows(KernelArgs& args, size_t index, const SparseLookupRequest& r, float maxNorm) {
  const std::vector<int64_t> shape{r.ids.size(), r.table.shape[1]};
  Tensor& out = allocateOutput(args, index, shape);
  if (out.device() == r.table.device()) return runSparseLookupInto(r, out);
  const Tensor rows = runSparseLookup(r);
  if (rows.bytes()) copyBytes(out.buffer->data(), out.device(), rows.buffer->data(), rows.device(), rows.bytes());
}

void gatherRowsKernel(KernelArgs& args) {
  const float maxNorm = float(args.attrs[0]);
  HB_CHECK(maxNorm >= 0.0f, args.name, ": maxNorm must be >= 0, got ", maxNorm);
  writeRows(args, 0, oneRowPerBag(args.in[0], args.in[1], args.name, maxNorm), maxNorm);
}

void gatherRowsClipGradKernel(KernelArgs& args) {
  const float maxNorm = float(args.attrs[0]);
  HB_CHECK(maxNorm > 0.0f, args.name, ": gather_rows_clip_grad needs maxNorm > 0, got ", maxNorm);
  const SparseLookupRequest r = oneRowPerBag(args.in[0], args.in[1], args.name, 0.0f);
  const int64_t n = r.ids.size();
  const int64_t dim = r.table.shape[1];
  const Tensor& dRows = args.in[2];
  HB_CHECK_CODE(dRows.dtype == DType::Float32 && dRows.shape == std::vector<int64_t>({n, dim}), Shape, args.name,
                ": the rows' gradient must be float32 [", n, ", ", dim, "], got ", dRows.shapeString());
  // The clip's Jacobian needs each raw row: gather them unclipped, then work on the host.
  const Tensor raw = onDevice(runSparseLookup(r), Device::cpu());
  const Tensor grad = copyTensor(dRows, Device::cpu());
  const float* rows = raw.data<float>();
  float* g = grad.data<float>();
  parallelFor(n, 256, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) clipByNormGradient(rows + i * dim, dim, maxNorm, g + i * dim);
  });
  Tensor& out = allocateOutput(args, 0, {n, dim});
  if (grad.bytes()) copyBytes(out.buffer->data(), out.device(), grad.buffer->data(), Device::cpu(), grad.bytes());
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("gather_rows", gatherRowsKernel, KernelPlacement::Any)
                       .input("table", f32()).hostInput("ids", ids()).sizedOutput("rows", f32()).number("maxNorm", 0));
HB_REGISTER_KERNEL(KernelDef("gather_rows_clip_grad", gatherRowsClipGradKernel, KernelPlacement::Any)
                       .input("table", f32()).hostInput("ids", ids()).input("dRows", f32())
                       .sizedOutput("dRowsUnclipped", f32()).number("maxNorm"));

}  // namespace hb
