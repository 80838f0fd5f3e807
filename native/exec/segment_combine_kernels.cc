// segment_combine: the combiner of tf.nn.embedding_lookup_sparse (sparse_segment_sum /
// mean / sqrt_n): out[b] = sum over the bag's entries j of w_j * rows[idx_j], divided
// by the sum of weights (mean) or the root of the sum of squared weights (sqrtn). Entries
// come pruned (prune_ids); an empty bag gives a zero row. The float operations and their
// order are the fused lookup's (native/kernels/embedding_lookup_cpu_impl.h), so both give
// the same bits. segment_combine_grad is its gradient with respect to the rows:
// contributions summed per row in entry order, blocked as the fused backward does
// (lookup_gradient.h's BlockedRunningSum).
//
// Rows on a device (a dynamic table's rows gathered on the GPU) are combined there: the
// combine is the lookup over the gathered rows with idx as its ids, so the device runs
// the fused lookup's CUDA kernels and their backward, which give the CPU's bits.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/embedding/embedding_lookup.h"
#include "native/exec/kernel_def.h"
#include "native/train/embedding_backward.h"
#include "native/exec/ragged_checks.h"
#include "native/kernels/embedding_combine.h"
#include "native/kernels/lookup_gradient.h"

namespace hb {

namespace {

// The entries' rows: idx[j] when given (unique rows), else j itself.
struct EntryRows {
  const int32_t* idx = nullptr;
  int64_t at(int64_t j) const { return idx ? idx[j] : j; }
};

// Shared checks; returns the number of entries.
int64_t checkSegments(const KernelArgs& args, const Tensor& splits, int64_t rows, bool hasIdx, bool hasWeights,
                      size_t idxIndex, size_t weightsIndex) {
  const int64_t entries = splits.dtype == DType::Int32 && splits.size() > 0 ? splits.data<int32_t>()[splits.size() - 1] : 0;
  checkRowSplits(splits, entries, args.name);
  if (hasIdx) {
    const Tensor& idx = args.in[idxIndex];
    HB_CHECK_CODE(idx.dtype == DType::Int32 && idx.size() == entries, Shape, args.name, ": idx must be int32 with one ",
                  "value per entry (", entries, "), got ", dtypeName(idx.dtype), " ", idx.shapeString());
    const int32_t* p = idx.data<int32_t>();
    for (int64_t j = 0; j < entries; ++j) {
      HB_CHECK_CODE(p[j] >= 0 && p[j] < rows, OutOfRange, args.name, ": idx[", j, "] = ", p[j], " is not a row of the ",
                    rows, " rows");
    }
  } else {
    HB_CHECK_CODE(rows == entries, Shape, args.name, ": without idx there must be one row per entry (", entries,
                  "), got ", rows);
  }
  if (hasWeights) checkEntryWeights(args.in[weightsIndex], entries, args.name);
  return entries;
}

// The combine as a lookup of `table` (the gathered rows, or a stand-in of their shape for
// the backward): entry j reads row idx[j] (j itself without idx).
SparseLookupRequest entryLookup(const KernelArgs& args, const Tensor& table, bool hasIdx, bool weighted, size_t weightsIndex) {
  SparseLookupRequest r;
  r.name = args.name;
  r.table = table;
  r.rowSplits = args.in[1];
  r.combiner = Combiner(int32_t(args.attrs[0]));
  if (hasIdx) {
    r.ids = args.in[2];
  } else {
    const int64_t entries = table.shape[0];
    r.ids = Tensor{Buffer::allocate(Device::cpu(), size_t(std::max<int64_t>(entries, 1)) * 4), DType::Int32, {entries}};
    for (int64_t j = 0; j < entries; ++j) r.ids.data<int32_t>()[j] = int32_t(j);
  }
  r.hasWeights = weighted;
  if (weighted) r.weights = args.in[weightsIndex];
  return r;
}

// Whether the lookup kernels compute this combine: they prune an entry whose weight is not
// > 0 under 'mean' / 'sqrtn' (prune_ids does so before a chain's combine), which this op
// counts; such entries go the host way.
bool lookupComputesIt(const KernelArgs& args, bool weighted, size_t weightsIndex) {
  if (!weighted || Combiner(int32_t(args.attrs[0])) == Combiner::Sum) return true;
  const Tensor& w = args.in[weightsIndex];
  const float* p = w.data<float>();
  return std::all_of(p, p + w.size(), [](float x) { return x > 0.0f; });
}

// Host memory for a result whose place is `out`: out itself, or a host buffer to copy there.
Tensor hostSide(const Tensor& out) {
  if (!out.device().isCuda()) return out;
  Tensor t{nullptr, out.dtype, out.shape};
  t.buffer = Buffer::allocate(Device::cpu(), std::max<size_t>(out.bytes(), 1));
  return t;
}

void copyBack(const Tensor& host, const Tensor& out) {
  if (host.buffer != out.buffer && out.bytes()) copyBytes(out.buffer->data(), out.device(), host.buffer->data(), Device::cpu(), out.bytes());
}

void segmentCombineKernel(KernelArgs& args) {
  const Tensor& rows = args.in[0];
  const Tensor& splits = args.in[1];
  const bool hasIdx = hasInput(args, 2);
  const bool weighted = hasInput(args, 3);
  const Combiner combiner = Combiner(int32_t(args.attrs[0]));
  HB_CHECK_CODE(rows.shape.size() == 2, Shape, args.name, ": rows must be [rows, dim], got ", rows.shapeString());
  const int64_t dim = rows.shape[1];
  checkSegments(args, splits, rows.shape[0], hasIdx, weighted, 2, 3);
  const int64_t batch = splits.size() - 1;
  const Tensor& out = args.out[0];
  HB_CHECK_CODE(out.shape.size() == 2 && out.shape[0] == batch, Shape, "feature '", args.name, "' has ", batch,
                " rows but the batch has ", out.shape.empty() ? 0 : out.shape[0]);
  HB_CHECK_CODE(out.shape[1] == dim, Shape, args.name, ": the output must be [", batch, ", ", dim, "], got ",
                out.shapeString());
  if (rows.device().isCuda() && out.device() == rows.device() && lookupComputesIt(args, weighted, 3)) {
    runSparseLookupInto(entryLookup(args, rows, hasIdx, weighted, 3), out);
    return;
  }
  const Tensor hostRows = onDevice(rows, Device::cpu());
  const Tensor result = hostSide(out);
  const float* r = hostRows.data<float>();
  const int32_t* s = splits.data<int32_t>();
  const EntryRows entry{hasIdx ? args.in[2].data<int32_t>() : nullptr};
  const float* w = weighted ? args.in[3].data<float>() : nullptr;
  float* o = result.data<float>();
  parallelFor(batch, 64, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* acc = o + b * dim;
      for (int64_t k = 0; k < dim; ++k) acc[k] = 0.0f;
      float weightSum = 0.0f, squaredWeightSum = 0.0f;
      for (int64_t j = s[b]; j < s[b + 1]; ++j) {
        const float* row = r + entry.at(j) * dim;
        const float weight = weighted ? w[j] : 1.0f;
        if (weighted) {
          for (int64_t k = 0; k < dim; ++k) acc[k] = addRn(acc[k], mulRn(row[k], weight));
        } else {
          for (int64_t k = 0; k < dim; ++k) acc[k] = addRn(acc[k], row[k]);
        }
        weightSum = addRn(weightSum, weight);
        squaredWeightSum = addRn(squaredWeightSum, mulRn(weight, weight));
      }
      if (s[b + 1] > s[b] && combiner != Combiner::Sum) {
        const float divisor = combinerDivisor(combiner, weightSum, squaredWeightSum);
        for (int64_t k = 0; k < dim; ++k) acc[k] = divRn(acc[k], divisor);
      }
    }
  });
  copyBack(result, out);
}

// inputs: dy [batch, dim], rowSplits, idx?, weights?, rowIds? (the ids of the forward's
// rows, the unique ids: only their count is read, which idx alone cannot tell; needed
// with idx).
void segmentCombineGradKernel(KernelArgs& args) {
  const Tensor& dy = args.in[0];
  const Tensor& splits = args.in[1];
  const bool hasIdx = hasInput(args, 2);
  const bool weighted = hasInput(args, 3);
  const Combiner combiner = Combiner(int32_t(args.attrs[0]));
  HB_CHECK_CODE(dy.dtype == DType::Float32 && dy.shape.size() == 2 && dy.shape[0] == splits.size() - 1, Shape, args.name,
                ": dy must be float32 [batch, dim] with one row per bag, got ", dy.shapeString());
  HB_CHECK(!hasIdx || hasInput(args, 4), args.name, ": with idx, segment_combine_grad needs the rows' ids (input 4)");
  const int64_t dim = dy.shape[1];
  const int64_t entries = splits.size() > 0 && splits.dtype == DType::Int32 ? splits.data<int32_t>()[splits.size() - 1] : 0;
  const int64_t rows = hasIdx ? (args.in[4].shape.empty() ? 1 : args.in[4].shape[0]) : entries;
  checkSegments(args, splits, rows, hasIdx, weighted, 2, 3);
  Tensor& out = allocateOutput(args, 0, {rows, dim});
  if (dy.device().isCuda() && out.device() == dy.device() && lookupComputesIt(args, weighted, 3)) {
    // The lookup's backward over a table of the rows' shape (out stands in: with no
    // clipping the backward reads no row), then each distinct row's sum put in place.
    const LookupGradient g = runLookupBackward(entryLookup(args, out, hasIdx, weighted, 3), dy);
    const int device = out.device().index;
    if (g.indices.size() < rows) cuda::fill(device, out.data<float>(), rows * dim, FillSpec{});
    cuda::placeRows(device, out.data<float>(), dim, g.indices.data<int64_t>(), g.indices.size(), g.values.data<float>());
    return;
  }
  const Tensor hostGrad = onDevice(dy, Device::cpu());
  const Tensor result = hostSide(out);
  float* o = result.data<float>();
  const float* g = hostGrad.data<float>();
  const int32_t* s = splits.data<int32_t>();
  const EntryRows entry{hasIdx ? args.in[2].data<int32_t>() : nullptr};
  const float* w = weighted ? args.in[3].data<float>() : nullptr;
  const int64_t batch = splits.size() - 1;
  std::vector<BagGradientFactors> factors(size_t(std::max<int64_t>(batch, 0)));
  parallelFor(batch, 1024, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float weightSum = 0.0f, squaredWeightSum = 0.0f;
      for (int64_t j = s[b]; j < s[b + 1]; ++j) {
        const float weight = weighted ? w[j] : 1.0f;
        weightSum = addRn(weightSum, weight);
        squaredWeightSum = addRn(squaredWeightSum, mulRn(weight, weight));
      }
      factors[size_t(b)] = gradientFactors(weighted, weightSum, squaredWeightSum, combiner);
    }
  });
  // Rows of more than kSumBlock entries (possible only through idx) are summed in blocks:
  // each has a block row, and every kSumBlock entries its block is added into the row.
  // No row can be long with kSumBlock entries or fewer in all: then nothing is counted.
  const bool mayBeLong = hasIdx && entries > kSumBlock;
  std::vector<int32_t> terms(mayBeLong ? size_t(rows) : 0, 0);
  std::vector<int32_t> blockSlot(terms.size(), -1);
  int64_t blockRows = 0;
  if (mayBeLong) {
    for (int64_t j = 0; j < entries; ++j) ++terms[size_t(entry.at(j))];
    for (int64_t r = 0; r < rows; ++r) {
      if (terms[size_t(r)] > kSumBlock) blockSlot[size_t(r)] = int32_t(blockRows++);
      terms[size_t(r)] = 0;  // from here: the entries added so far
    }
  }
  std::vector<float> blocks(size_t(blockRows * dim), 0.0f);
  // Each thread owns a range of rows and walks every entry in order, adding only into its
  // own rows: a row's contributions add in entry order (the same bits on any number of
  // threads, and as the device's backward), with no two threads writing one row.
  const int64_t owners = entries * dim >= (int64_t(1) << 16) ? std::min<int64_t>(threadPoolSize(), rows) : 1;
  parallelFor(owners, 1, [&](int64_t first, int64_t last) {
    for (int64_t owner = first; owner < last; ++owner) {
      const int64_t rowBegin = rows * owner / owners;
      const int64_t rowEnd = rows * (owner + 1) / owners;
      if (rowEnd > rowBegin) std::memset(o + rowBegin * dim, 0, size_t((rowEnd - rowBegin) * dim) * sizeof(float));
      for (int64_t b = 0; b < batch; ++b) {
        const BagGradientFactors& f = factors[size_t(b)];
        const float* gb = g + b * dim;
        for (int64_t j = s[b]; j < s[b + 1]; ++j) {
          const int64_t r = entry.at(j);
          if (r < rowBegin || r >= rowEnd) continue;
          float* row = o + r * dim;
          const int32_t slot = blockRows ? blockSlot[size_t(r)] : -1;
          if (slot >= 0) {
            float* block = blocks.data() + int64_t(slot) * dim;
            const int32_t before = terms[size_t(r)]++;
            if (before > 0 && before % kSumBlock == 0) {
              for (int64_t k = 0; k < dim; ++k) row[k] = addRn(row[k], block[k]);
              std::fill(block, block + dim, 0.0f);
            }
            row = block;
          }
          const float weight = weighted ? w[j] : 1.0f;
          for (int64_t k = 0; k < dim; ++k) row[k] = addRn(row[k], lookupGradContribution(gb[k], weighted, combiner, f, weight));
        }
      }
      for (int64_t r = rowBegin; r < rowEnd && blockRows; ++r) {
        const int32_t slot = blockSlot[size_t(r)];
        if (slot < 0) continue;
        float* row = o + r * dim;
        const float* block = blocks.data() + int64_t(slot) * dim;
        for (int64_t k = 0; k < dim; ++k) row[k] = addRn(row[k], block[k]);
      }
    }
  });
  copyBack(result, out);
}

std::vector<std::string> combinerNames() { return {std::begin(kCombinerNames), std::end(kCombinerNames)}; }

}  // namespace

HB_REGISTER_KERNEL(KernelDef("segment_combine", segmentCombineKernel, KernelPlacement::Any)
                       .input("rows", f32()).hostInput("rowSplits", i32()).hostInput("idx", i32(), true)
                       .hostInput("weights", f32(), true).output("out", f32()).enumeration("combiner", combinerNames()));
HB_REGISTER_KERNEL(KernelDef("segment_combine_grad", segmentCombineGradKernel, KernelPlacement::Any)
                       .input("dy", f32()).hostInput("rowSplits", i32()).hostInput("idx", i32(), true)
                       .hostInput("weights", f32(), true).hostInput("rowIds", ids(), true).sizedOutput("dRows", f32())
                       .enumeration("combiner", combinerNames()));

}  // namespace hb
