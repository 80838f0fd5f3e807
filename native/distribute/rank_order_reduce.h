// The reduction both CPU transports use where they hold every rank's values at once
// (Gloo's small allreduce, the shared-memory one): each element is reduced in rank
// order, so every rank computes the same bits, run after run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "native/core/dtype.h"
#include "native/core/status.h"
#include "native/distribute/communicator.h"

namespace hb {
namespace distribute {

template <typename T>
void reduceInRankOrderAs(const void* const* inputs, int worldSize, void* out, int64_t count, ReduceOp op) {
  T* result = static_cast<T*>(out);
  if (result != inputs[0]) std::memmove(result, inputs[0], size_t(count) * sizeof(T));
  for (int r = 1; r < worldSize; ++r) {
    const T* x = static_cast<const T*>(inputs[r]);
    if (op == ReduceOp::Max) {
      for (int64_t i = 0; i < count; ++i) result[i] = std::max(result[i], x[i]);
    } else if (op == ReduceOp::Min) {
      for (int64_t i = 0; i < count; ++i) result[i] = std::min(result[i], x[i]);
    } else {
      for (int64_t i = 0; i < count; ++i) result[i] += x[i];
    }
  }
  if (op == ReduceOp::Mean) {
    for (int64_t i = 0; i < count; ++i) result[i] /= T(worldSize);
  }
}

// `inputs[r]` holds rank r's `count` elements; `out` may be inputs[0] but no other.
// Mean divides the sum by the world size (float dtypes; collectives.cc refuses the rest).
inline void reduceInRankOrder(const void* const* inputs, int worldSize, void* out, int64_t count, DType dtype,
                              ReduceOp op, const char* who) {
  switch (dtype) {
    case DType::Float32: reduceInRankOrderAs<float>(inputs, worldSize, out, count, op); break;
    case DType::Float64: reduceInRankOrderAs<double>(inputs, worldSize, out, count, op); break;
    case DType::Int32: reduceInRankOrderAs<int32_t>(inputs, worldSize, out, count, op); break;
    case DType::Int64: reduceInRankOrderAs<int64_t>(inputs, worldSize, out, count, op); break;
    default: fail("allreduce: ", who, " cannot reduce ", dtypeName(dtype));
  }
}

}  // namespace distribute
}  // namespace hb
