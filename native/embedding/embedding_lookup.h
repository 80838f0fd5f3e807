// tf.nn.safe_embedding_lookup_sparse over a ragged batch of ids: validation, placement
// and dispatch to the CPU or CUDA kernel. No Node types here.
#pragma once

#include <string>

#include "native/core/tensor.h"
#include "native/kernels/embedding_combine.h"

namespace hb {

struct SparseLookupRequest {
  Tensor table;       // float32 [rows, dim], on any device
  std::string name;   // the table's name, for error messages
  Tensor ids;         // int32 or int64 [n], host
  Tensor rowSplits;   // int32 [batch + 1], host
  bool hasWeights = false;
  Tensor weights;     // float32 [n], host, when hasWeights
  Combiner combiner = Combiner::Mean;
  float maxNorm = 0.0f;  // <= 0: none
};

// The O(1) checks: dtypes, ranks, lengths, first and last split. Cheap enough for the
// JS thread, so a malformed call fails before anything is queued.
void checkLookupShapes(const SparseLookupRequest& request);

// The O(n) checks: splits non-decreasing, ids below the row count, no NaN weight.
void checkLookupValues(const SparseLookupRequest& request);

// The lookup, its values checked first (checkLookupValues) or, on the host, by the CPU
// kernel as it reads them; either way a bad value throws checkLookupValues' error. Runs on
// the table's device executor; returns a float32 [batch, dim] tensor on the table's device.
Tensor runSparseLookup(const SparseLookupRequest& request);

// The same into `out`, a float32 [batch, dim] tensor on the table's device. When it
// throws, `out` may hold part of a result.
void runSparseLookupInto(const SparseLookupRequest& request, const Tensor& out);

// A lookup of each id alone (rowSplits 0, 1, ..., n; 'sum' of one row is that row): the
// rows of `table` that `ids` (host int32 / int64) name, gathered on the table's device.
SparseLookupRequest oneRowPerBag(const Tensor& table, const Tensor& ids, const std::string& name, float maxNorm);

}  // namespace hb
