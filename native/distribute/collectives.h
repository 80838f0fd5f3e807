// Collectives on tensors, over a process group's communicator. Each one first
// exchanges a small fixed header (what the rank is calling, its dtype, shape, op, root,
// wire dtype, and whether its own arguments failed), so ranks that disagree all fail
// with an Error naming the collective and the ranks, instead of one hanging or reading
// garbage: the price is one allgather of 768 bytes per rank and collective (alltoallv's
// counts ride along in worlds of up to 64 ranks).
//
// Called on the process group's queue. Inputs on another device than the
// communicator's are staged there and the results moved back. With the 'local' backend
// (a world of one) the result is the input tensor itself (no copy); Gloo and NCCL run
// their whole path even in a world of one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "native/core/tensor.h"
#include "native/distribute/communicator.h"
#include "native/distribute/process_group.h"

namespace hb {
namespace distribute {

enum class CollectiveKind : int32_t { Allreduce = 1, Allgather, Alltoallv, Broadcast, Barrier };
const char* collectiveName(CollectiveKind kind);

struct RowsResult {
  Tensor tensor;
  std::vector<int64_t> rowsPerRank;  // allgather: each rank's rows; alltoallv: rows received from each
};

// Same dtype and shape on every rank; float dtypes only for Mean.
Tensor allreduce(ProcessGroup& group, const Tensor& input, ReduceOp op);
// Concatenated along the first dimension; first dimensions may differ, the rest may not.
RowsResult allgather(ProcessGroup& group, const Tensor& input);
// sendRows[p] rows of `input` (in order) to rank p; what each rank sent here, in rank
// order. `wire`: float16 or bfloat16 for float32 rows on the way.
RowsResult alltoallv(ProcessGroup& group, const Tensor& input, const std::vector<int64_t>& sendRows,
                     std::optional<DType> wire);
// Root's values on every rank (every rank passes a tensor of the same dtype and shape).
Tensor broadcast(ProcessGroup& group, const Tensor& input, int root);
void barrier(ProcessGroup& group);

// For a rank whose arguments failed before the collective could start: it still takes
// part in the header exchange with `why`, so its peers fail with that reason at once
// instead of waiting for the timeout. Throws the Error the peers see.
[[noreturn]] void announceFailure(ProcessGroup& group, CollectiveKind kind, const std::string& why);

}  // namespace distribute
}  // namespace hb
