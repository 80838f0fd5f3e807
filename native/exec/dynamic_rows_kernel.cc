// dynamic_rows: the rows of a dynamic table (native/embedding/dynamic_table.h) for a
// lookup's distinct int64 ids, as row numbers into the table's row pool that gather_rows
// and the sparse updates take as they take a fixed table's ids. -1 is an id without a
// row (not admitted yet in training; unseen in evaluation): gather_rows gives it a zero
// row and the update skips it. In training the table counts each id's entries (from
// unique's inverse), admits, makes and dates rows at the step's global step.
#include <vector>

#include "native/core/status.h"
#include "native/embedding/dynamic_table.h"
#include "native/exec/kernel_def.h"

namespace hb {

namespace {

void dynamicRowsKernel(KernelArgs& args) {
  const Tensor& handle = args.in[0];
  HB_CHECK_CODE(handle.size() == 1, Shape, args.name, ": the table handle must be one int64, got ", handle.shapeString());
  std::shared_ptr<DynamicTable> table = findDynamicTable(handle.data<int64_t>()[0], args.name);
  const Tensor& ids = args.in[1];
  HB_CHECK_CODE(ids.shape.size() == 1, Shape, args.name, ": ids must be [n], got ", ids.shapeString());
  const int64_t n = ids.size();
  const bool train = args.attrs[0] != 0;
  const int64_t stepAttr = int64_t(args.attrs[1]);
  const int64_t step = args.step && args.step->globalStep >= 0 ? args.step->globalStep : std::max<int64_t>(stepAttr, 0);
  std::vector<int64_t> occurrences;
  if (train && hasInput(args, 2)) {
    const Tensor& inverse = args.in[2];
    occurrences.assign(size_t(n), 0);
    const int32_t* idx = inverse.data<int32_t>();
    for (int64_t k = 0; k < inverse.size(); ++k) {
      HB_CHECK_CODE(idx[k] >= 0 && idx[k] < n, OutOfRange, args.name, ": inverse[", k, "] = ", idx[k], " names no id of ", n);
      ++occurrences[size_t(idx[k])];
    }
  }
  Tensor& rows = allocateOutput(args, 0, {n});
  table->rowsFor(ids.data<int64_t>(), occurrences.empty() ? nullptr : occurrences.data(), n, train, step,
                 rows.data<int64_t>(), args.name);
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("dynamic_rows", dynamicRowsKernel, KernelPlacement::Host)
                       .input("table", i64()).input("ids", i64()).optionalInput("inverse", i32())
                       .sizedOutput("rows", i64())
                       .boolean("train", false).integer("step", -1));

}  // namespace hb
