// Rows of tables sharded over W ranks (HybridBackend's rule: row x lives on rank
// x floormod W at local row x floordiv W).
//
//   shard_ids    the ids a rank received for its shard, as rows of the shard; every id is
//                checked to be this rank's and inside the table, so a gather never reads
//                past the shard
//   reshard_rows rows of one saved shard (of a world of any size, 1 = a whole table) put
//                where they go in this rank's shard of a world of another size: how a
//                checkpoint written by W ranks is restored by W' ranks
#include <cstring>

#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/exec/kernel_def.h"

namespace hb {

namespace {

template <typename Id>
void localRows(KernelArgs& args, int64_t world, int64_t rank, int64_t rows) {
  const Tensor& ids = args.in[0];
  const int64_t n = ids.size();
  const Id* in = ids.data<Id>();
  // Checked in a first pass, so an error leaves the output unwritten.
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = int64_t(in[i]);
    HB_CHECK_CODE(id >= 0 && id < rows, OutOfRange, args.name, ": id ", id, " is outside the table's ", rows,
                  " rows (ids must be in [0, ", rows, "))");
    HB_CHECK_CODE(id % world == rank, OutOfRange, args.name, ": id ", id, " reached rank ", rank, " but belongs to rank ",
                  id % world);
  }
  Tensor& out = allocateOutput(args, 0, {n});
  Id* local = out.data<Id>();
  parallelFor(n, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) local[i] = Id(int64_t(in[i]) / world);
  });
}

void shardIdsKernel(KernelArgs& args) {
  const Tensor& ids = args.in[0];
  const double world = args.attrs[0], rank = args.attrs[1], rows = args.attrs[2];
  HB_CHECK(world >= 1 && world <= (1 << 20) && rank >= 0 && rank < world, args.name, ": rank ", rank,
           " is not in a world of ", world, " (worlds of 1 to 2^20)");
  HB_CHECK(rows >= 1, args.name, ": the table must have >= 1 rows, got ", rows);
  HB_CHECK_CODE(ids.shape.size() == 1, Shape, args.name, ": ids must be 1-D, got ", ids.shapeString());
  checkSameDType(args, 0, 0);
  if (ids.dtype == DType::Int64) localRows<int64_t>(args, int64_t(world), int64_t(rank), int64_t(rows));
  else localRows<int32_t>(args, int64_t(world), int64_t(rank), int64_t(rows));
}

// rows: saved rows firstRow.. of shard fromRank of a world of fromWorld; target: the
// shard toRank of a world of toWorld, updated in place with the rows that belong to it.
void reshardRowsKernel(KernelArgs& args) {
  const Tensor& rows = args.in[0];
  Tensor& target = args.out[0];
  const double fromWorld = args.attrs[0], fromRank = args.attrs[1], toWorld = args.attrs[2], toRank = args.attrs[3];
  const double firstRow = args.attrs[4];
  // Bounded so that row arithmetic stays far inside int64.
  constexpr double kMaxWorld = 1 << 20, kMaxRow = double(int64_t(1) << 40);
  HB_CHECK(fromWorld >= 1 && fromWorld <= kMaxWorld && fromRank >= 0 && fromRank < fromWorld, args.name, ": fromRank ",
           fromRank, " is not in a world of ", fromWorld, " (worlds of 1 to 2^20)");
  HB_CHECK(toWorld >= 1 && toWorld <= kMaxWorld && toRank >= 0 && toRank < toWorld, args.name, ": toRank ", toRank,
           " is not in a world of ", toWorld, " (worlds of 1 to 2^20)");
  HB_CHECK(firstRow >= 0 && firstRow < kMaxRow, args.name, ": firstRow must be in [0, 2^40), got ", firstRow);
  HB_CHECK_CODE(rows.dtype == target.dtype, Type, args.name, ": rows are ", dtypeName(rows.dtype), ", the target is ",
                dtypeName(target.dtype));
  HB_CHECK_CODE(!rows.shape.empty() && !target.shape.empty(), Shape, args.name, ": rows and target need a first dimension");
  const int64_t n = rows.shape[0], m = target.shape[0];
  HB_CHECK_CODE(n < (int64_t(1) << 40), OutOfRange, args.name, ": at most 2^40 rows at a time");
  const int64_t width = n == 0 ? 0 : rows.size() / n;
  const int64_t targetWidth = m == 0 ? 0 : target.size() / m;
  HB_CHECK_CODE(n == 0 || m == 0 || width == targetWidth, Shape, args.name, ": saved rows hold ", width,
                " values, the target's ", targetWidth);
  const int64_t W = int64_t(fromWorld), s = int64_t(fromRank), V = int64_t(toWorld), r = int64_t(toRank);
  const int64_t first = int64_t(firstRow);
  // Checked first: a saved row past the target's end means the table has fewer rows than
  // the checkpoint's, and nothing is written then.
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = (first + i) * W + s;
    if (row % V != r) continue;
    HB_CHECK_CODE(row / V < m, OutOfRange, args.name, ": saved row ", row, " does not fit this rank's ", m,
                  " rows of the table");
  }
  const size_t rowBytes = size_t(width) * dtypeSize(rows.dtype);
  const char* from = static_cast<const char*>(rows.buffer->data());
  char* to = static_cast<char*>(target.buffer->data());
  parallelFor(n, 1024, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t row = (first + i) * W + s;
      if (row % V == r) std::memcpy(to + size_t(row / V) * rowBytes, from + size_t(i) * rowBytes, rowBytes);
    }
  });
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("reshard_rows", reshardRowsKernel, KernelPlacement::Host)
                       .input("rows", {DType::Float32, DType::Float64, DType::Int32, DType::Int64})
                       .inPlaceOutput("target", {DType::Float32, DType::Float64, DType::Int32, DType::Int64})
                       .integer("fromWorld").integer("fromRank").integer("toWorld").integer("toRank").integer("firstRow"));

HB_REGISTER_KERNEL(KernelDef("shard_ids", shardIdsKernel, KernelPlacement::Host)
                       .input("ids", ids()).sizedOutput("rows", ids())
                       .integer("worldSize").integer("rank").integer("rows"));

}  // namespace hb
