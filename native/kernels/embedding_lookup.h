// Ragged embedding lookup: out[b] = combine(table[ids[rowSplits[b] .. rowSplits[b+1])]).
// The arguments are already validated (see native/embedding/embedding_lookup.h);
// kernels trust them.
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

// Threaded over bags on the host thread pool.
void embeddingLookupCpu(const EmbeddingLookupArgs& args);
// The vector code it runs: "avx2" or "portable".
const char* embeddingLookupIsaName();

}  // namespace hb
