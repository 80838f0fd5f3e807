// Ragged embedding lookup: out[b] = combine(table[ids[rowSplits[b] .. rowSplits[b+1])]).
// The CUDA kernel trusts its arguments: they are validated before they are staged (see
// native/embedding/embedding_lookup.h). The CPU kernel checks them as it reads them.
#pragma once

#include <cstdint>

#include "native/kernels/embedding_combine.h"

namespace hb {

struct EmbeddingLookupArgs {
  const float* table = nullptr;  // [rows, dim]
  int64_t rows = 0;
  int64_t dim = 0;
  const void* ids = nullptr;  // int32 or int64, numIds of them
  bool idsAreInt64 = true;
  int64_t numIds = 0;
  const int32_t* rowSplits = nullptr;  // batch + 1 of them
  int64_t batch = 0;
  const float* weights = nullptr;  // numIds of them, or null
  Combiner combiner = Combiner::Mean;
  float maxNorm = 0.0f;  // <= 0: no clipping
  float* out = nullptr;  // [batch, dim]
};

// Threaded over bags on the host thread pool. Checks each bag's splits, each id against
// `rows` and each weight for NaN as it reads them, in the same loop: a separate pass over
// the ids first took 10-15% of a lookup. Whatever fails a check is skipped, so nothing
// outside the table or the ids is read, and the result is false; the output then holds
// values to discard, and the caller runs checkLookupValues for the error to report.
bool embeddingLookupCpu(const EmbeddingLookupArgs& args);
// The vector code it runs: "avx2" or "portable".
const char* embeddingLookupIsaName();

}  // namespace hb
