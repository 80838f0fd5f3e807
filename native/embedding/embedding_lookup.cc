#include "native/embedding/embedding_lookup.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/kernels/embedding_lookup.h"

namespace hb {

namespace {

// Finds the first index in [0, n) where `bad` holds, scanning in parallel; -1 if none.
template <typename Predicate>
int64_t firstViolation(int64_t n, Predicate bad) {
  std::atomic<int64_t> first{std::numeric_limits<int64_t>::max()};
  parallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && i < first.load(std::memory_order_relaxed); ++i) {
      if (bad(i)) {
        int64_t seen = first.load();
        while (i < seen && !first.compare_exchange_weak(seen, i)) {
        }
        return;
      }
    }
  });
  const int64_t found = first.load();
  return found == std::numeric_limits<int64_t>::max() ? -1 : found;
}

template <typename Id>
void checkIdsInRange(const SparseLookupRequest& r, int64_t rows) {
  const Id* ids = r.ids.data<Id>();
  const int64_t bad = firstViolation(r.ids.size(), [&](int64_t i) { return int64_t(ids[i]) >= rows; });
  HB_CHECK(bad < 0, "embeddingLookupSparse(", r.name, "): ids.values[", bad, "] = ", int64_t(ids[bad]),
           " is out of range: the table has ", rows, " rows (valid ids are 0..", rows - 1,
           "; negative ids are pruned)");
}

}  // namespace

void checkLookupValues(const SparseLookupRequest& r) {
  const int64_t numIds = r.ids.size();
  const int64_t batch = r.rowSplits.size() - 1;
  const int32_t* splits = r.rowSplits.data<int32_t>();
  const int64_t descending = firstViolation(batch, [&](int64_t b) { return splits[b + 1] < splits[b]; });
  HB_CHECK(descending < 0, "embeddingLookupSparse(", r.name, "): ids.rowSplits must be non-decreasing, but rowSplits[",
           descending + 1, "] = ", descending >= 0 ? splits[descending + 1] : 0, " < rowSplits[", descending,
           "] = ", descending >= 0 ? splits[descending] : 0);
  const int64_t rows = r.table.shape[0];
  if (r.ids.dtype == DType::Int64) checkIdsInRange<int64_t>(r, rows);
  else checkIdsInRange<int32_t>(r, rows);
  if (r.hasWeights) {
    const float* w = r.weights.data<float>();
    const int64_t nan = firstViolation(numIds, [&](int64_t i) { return std::isnan(w[i]); });
    HB_CHECK(nan < 0, "embeddingLookupSparse(", r.name, "): ids.weights[", nan, "] is NaN");
  }
}

void checkLookupShapes(const SparseLookupRequest& r) {
  const char* op = "embeddingLookupSparse";
  HB_CHECK_CODE(r.table.dtype == DType::Float32, Type, op, "(", r.name,
                "): params must be a float32 [rows, dim] variable, got ", dtypeName(r.table.dtype), " ",
                r.table.shapeString());
  HB_CHECK_CODE(r.table.shape.size() == 2, Shape, op, "(", r.name,
                "): params must be a float32 [rows, dim] variable, got ", dtypeName(r.table.dtype), " ",
                r.table.shapeString());
  const int64_t dim = r.table.shape[1];
  HB_CHECK(dim > 0 && dim <= (int64_t(1) << 24), op, "(", r.name, "): the table's dim must be in [1, 2^24], got ", dim);
  HB_CHECK_CODE(r.ids.dtype == DType::Int64 || r.ids.dtype == DType::Int32, Type, op, "(", r.name,
           "): ids.values must hold int64 (BigInt64Array) or int32 ids, got ", dtypeName(r.ids.dtype));
  HB_CHECK(r.ids.shape.size() == 1, op, "(", r.name, "): ids.values must be 1-D");
  HB_CHECK(!r.ids.device().isCuda() && !r.rowSplits.device().isCuda() &&
               (!r.hasWeights || !r.weights.device().isCuda()),
           op, "(", r.name, "): ids must be host arrays");
  HB_CHECK_CODE(r.rowSplits.dtype == DType::Int32, Type, op, "(", r.name, "): ids.rowSplits must be an Int32Array, got ",
                dtypeName(r.rowSplits.dtype));
  HB_CHECK_CODE(r.rowSplits.shape.size() == 1, Shape, op, "(", r.name, "): ids.rowSplits must be 1-D");
  const int64_t numSplits = r.rowSplits.size();
  HB_CHECK(numSplits >= 1, op, "(", r.name, "): ids.rowSplits must hold at least one value (0)");
  const int32_t* splits = r.rowSplits.data<int32_t>();
  HB_CHECK(splits[0] == 0, op, "(", r.name, "): ids.rowSplits[0] must be 0, got ", splits[0]);
  HB_CHECK(splits[numSplits - 1] == r.ids.size(), op, "(", r.name, "): ids.rowSplits ends at ",
           splits[numSplits - 1], " but ids.values has ", r.ids.size(), " values");
  shapeSize({numSplits - 1, dim}, "embeddingLookupSparse: output");
  if (r.hasWeights) {
    HB_CHECK_CODE(r.weights.dtype == DType::Float32, Type, op, "(", r.name,
             "): ids.weights must be a Float32Array, got ", dtypeName(r.weights.dtype));
    HB_CHECK(r.weights.size() == r.ids.size(), op, "(", r.name, "): ids.weights has ", r.weights.size(),
             " values but ids.values has ", r.ids.size());
  }
  HB_CHECK(r.combiner == Combiner::Sum || r.combiner == Combiner::Mean || r.combiner == Combiner::SqrtN, op,
           "(", r.name, "): combiner must be 'sum', 'mean' or 'sqrtn'");
  HB_CHECK(std::isfinite(r.maxNorm) && r.maxNorm >= 0.0f, op, "(", r.name,
           "): maxNorm must be a finite number >= 0 (0: no clipping), got ", r.maxNorm);
}

Tensor runSparseLookup(const SparseLookupRequest& r) {
  Tensor out;
  out.dtype = DType::Float32;
  out.shape = {r.rowSplits.size() - 1, r.table.shape[1]};
  out.buffer = Buffer::allocate(r.table.device(), std::max<size_t>(out.bytes(), 1));
  runSparseLookupInto(r, out);
  return out;
}

void runSparseLookupInto(const SparseLookupRequest& r, const Tensor& out) {
  const Device device = r.table.device();
  const int64_t batch = r.rowSplits.size() - 1;
  const int64_t dim = r.table.shape[1];
  HB_CHECK_CODE(out.dtype == DType::Float32 && out.shape == std::vector<int64_t>({batch, dim}) && out.device() == device,
                Internal, "embeddingLookupSparse(", r.name, "): the output must be float32 [", batch, ", ", dim,
                "] on ", device.str(), ", got ", dtypeName(out.dtype), " ", out.shapeString(), " on ",
                out.device().str());

  EmbeddingLookupArgs args;
  args.table = r.table.data<float>();
  args.rows = r.table.shape[0];
  args.dim = dim;
  args.idsAreInt64 = r.ids.dtype == DType::Int64;
  args.numIds = r.ids.size();
  args.batch = batch;
  args.combiner = r.combiner;
  args.maxNorm = r.maxNorm;
  args.out = out.data<float>();
  if (!device.isCuda()) {
    args.ids = r.ids.buffer->data();
    args.rowSplits = r.rowSplits.data<int32_t>();
    args.weights = r.hasWeights ? r.weights.data<float>() : nullptr;
    // The CPU kernel checks the values as it reads them; the checks that name the
    // offending value run only when it found one.
    if (!embeddingLookupCpu(args)) {
      checkLookupValues(r);
      HB_CHECK_CODE(false, Internal, "embeddingLookupSparse(", r.name,
                    "): the lookup kernel refused values that checkLookupValues accepts");
    }
    return;
  }
  checkLookupValues(r);
  // The ids come from JS arrays on the host: stage them on the table's device. The
  // staging buffers are freed in stream order after the kernel.
  auto stage = [&](const Tensor& host) {
    auto staged = Buffer::allocate(device, host.bytes());
    copyBytes(staged->data(), device, host.buffer->data(), Device::cpu(), host.bytes());
    return staged;
  };
  auto ids = stage(r.ids);
  auto splits = stage(r.rowSplits);
  std::shared_ptr<Buffer> weights = r.hasWeights ? stage(r.weights) : nullptr;
  args.ids = ids->data();
  args.rowSplits = static_cast<const int32_t*>(splits->data());
  args.weights = weights ? static_cast<const float*>(weights->data()) : nullptr;
  cuda::embeddingLookup(device.index, args);
}

SparseLookupRequest oneRowPerBag(const Tensor& table, const Tensor& ids, const std::string& name, float maxNorm) {
  SparseLookupRequest r;
  r.table = table;
  r.name = name;
  r.ids = ids;
  r.combiner = Combiner::Sum;
  r.maxNorm = maxNorm;
  const int64_t n = ids.size();
  HB_CHECK_CODE(n < (int64_t(1) << 31), OutOfRange, name, ": at most 2^31 - 1 ids, got ", n);
  r.rowSplits = Tensor{Buffer::allocate(Device::cpu(), size_t(n + 1) * 4), DType::Int32, {n + 1}};
  int32_t* splits = r.rowSplits.data<int32_t>();
  for (int64_t i = 0; i <= n; ++i) splits[i] = int32_t(i);
  checkLookupShapes(r);
  return r;
}

}  // namespace hb
