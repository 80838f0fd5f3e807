// Sparse gradients on the host: the backward of the embedding lookup, summing duplicate
// rows, and applying optimizer rules to dense or sparse gradients.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "native/core/buffer.h"
#include "native/kernels/embedding_lookup.h"
#include "native/kernels/optimizer_rules.h"

namespace hb {

// One gradient row per distinct table row, rows in order of first appearance.
struct RowGradients {
  std::vector<int64_t> rows;
  std::shared_ptr<Buffer> values;  // rows.size() x width floats; host (on the device from cuda::)
  const float* data() const { return static_cast<const float*>(values->data()); }
};

// Rows and their gradients, as the update reads them (pointers into a RowGradients or
// into the caller's arrays).
struct SparseRows {
  const int64_t* rows = nullptr;
  const float* values = nullptr;
  int64_t n = 0;
};

// The lookup's backward: d out[b] / d table[r] summed over the entries naming r, each
// contribution (g[b] / divisor_b) * weight, added in entry order. `args` as for the
// forward (table and maxNorm unused: clipping is applied by the caller), outGrad [batch, dim].
RowGradients embeddingLookupBackwardCpu(const EmbeddingLookupArgs& args, const float* outGrad);

// The rows of (indices, values) with repeated indices summed in the order they come.
// Without repeats the input is used as it is; `storage` holds whatever had to be made.
SparseRows sumDuplicateRowsCpu(const void* indices, bool indicesAreInt64, int64_t n, const float* values, int64_t width,
                               RowGradients* storage);

struct OptimizerTarget {
  float* var = nullptr;  // rows x width
  float* s0 = nullptr;   // first slot (same shape; RowwiseAdagrad: rows)
  float* s1 = nullptr;   // second slot (same shape) or null
  int64_t rows = 0;
  int64_t width = 0;
};

// Entries grouped by row, in entry order within each row, for rules that apply every
// entry in turn instead of their sum (TF's sparse GradientDescent: scatter_sub).
struct RowEntries {
  std::vector<int64_t> rows;     // distinct rows, first-appearance order
  std::vector<int64_t> offsets;  // rows.size() + 1, into values (in rows of `width`)
  std::shared_ptr<Buffer> values;
};
RowEntries groupEntriesCpu(const void* indices, bool indicesAreInt64, int64_t n, const float* values, int64_t width);
void applyGradientDescentEntriesCpu(const OptimizerHyper& h, const OptimizerTarget& t, const RowEntries& entries);

void applyDenseCpu(const OptimizerHyper& h, const OptimizerTarget& t, const float* grad);
// grads: one summed row per entry of `rows` (distinct, in range).
void applySparseCpu(const OptimizerHyper& h, const OptimizerTarget& t, const SparseRows& grads);

}  // namespace hb
