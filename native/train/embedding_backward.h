// The backward of embeddingLookupSparse as an operation: the output gradient
// [batch, dim] -> one summed gradient row per distinct table row (IndexedSlices).
#pragma once

#include "native/embedding/embedding_lookup.h"
#include "native/kernels/embedding_lookup.h"

namespace hb {

struct LookupGradient {
  Tensor indices;  // host int64 [n]
  Tensor values;   // [n, dim] on the table's device
};

// With request.maxNorm > 0 the gradient goes through clip_by_norm of each row, using the
// table's rows as they are when the backward runs. outGrad [batch, dim].
void checkLookupBackward(const SparseLookupRequest& request, const Tensor& outGrad);
LookupGradient runLookupBackward(const SparseLookupRequest& request, const Tensor& outGrad);

// The request as the backward kernels take it: pointers into its tensors (ids, rowSplits
// and weights on the host, the table on its device), out unset.
EmbeddingLookupArgs lookupBackwardArgs(const SparseLookupRequest& request);

}  // namespace hb
