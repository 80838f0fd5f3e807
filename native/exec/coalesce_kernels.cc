// Coalesced lookups (HybridBackend's embNumGroups): the sharded lookups of a group of
// columns share one exchange of ids and one of rows, instead of a pair per column. What
// goes to each rank is the columns' parts for it side by side:
//
//   pack_by_owner     ids:  per destination p, [n_1p, ..., n_kp, column 1's ids for p,
//                     ..., column k's ids for p] (int64); its send counts, and the k x W
//                     counts it packed (how the rows coming back are laid out)
//   unpack_by_source  what came from each source, split into each column's ids (in
//                     source order), with the k x W counts per source
//   pack_rows         float rows of k columns of widths d_i, per destination q the
//                     columns' rows for q (layout: k x W rows per column and rank) as one
//                     flat float run; its send counts in floats
//   unpack_rows       the inverse: a flat run split into each column's rows by a layout
//
// pack_rows and unpack_rows are each other's gradient. Every count that came from a peer
// is checked before anything is read, so a corrupt message is an Error, not a wild read.
#include <algorithm>
#include <cstring>
#include <vector>

#include "native/core/status.h"
#include "native/exec/kernel_def.h"

namespace hb {

namespace {

int64_t worldOf(const KernelArgs& args, const Tensor& counts, const char* what) {
  HB_CHECK_CODE(counts.dtype == DType::Int32 && counts.shape.size() == 1 && counts.size() >= 1, Shape, args.name, ": ",
                what, " must be int32 [worldSize], got ", counts.shapeString());
  return counts.size();
}

// One id as int64, whatever the column's id dtype.
int64_t idAt(const Tensor& ids, int64_t i) {
  return ids.dtype == DType::Int64 ? ids.data<int64_t>()[i] : int64_t(ids.data<int32_t>()[i]);
}

// inputs: (ids_i, sizes_i) per column; outputs: packed, sendCounts [W], layout [k, W].
void packByOwnerKernel(KernelArgs& args) {
  HB_CHECK(args.in.size() >= 2 && args.in.size() % 2 == 0, args.name, ": takes (ids, sizes) pairs");
  const int64_t k = int64_t(args.in.size() / 2);
  const int64_t W = worldOf(args, args.in[1], "sizes");
  HB_CHECK_CODE(args.out[1].size() == W && args.out[2].size() == k * W, Shape, args.name, ": outputs must be int32 [",
                W, "] and [", k, ", ", W, "]");
  int64_t total = k * W;
  for (int64_t c = 0; c < k; ++c) {
    const Tensor& ids = args.in[size_t(2 * c)];
    const Tensor& sizes = args.in[size_t(2 * c + 1)];
    HB_CHECK_CODE(worldOf(args, sizes, "sizes") == W, Shape, args.name, ": column ", c, "'s sizes are for another world");
    int64_t sum = 0;
    for (int64_t p = 0; p < W; ++p) {
      HB_CHECK_CODE(sizes.data<int32_t>()[p] >= 0, OutOfRange, args.name, ": column ", c, " sends a negative count");
      sum += sizes.data<int32_t>()[p];
    }
    HB_CHECK_CODE(sum == ids.size(), Shape, args.name, ": column ", c, "'s sizes add up to ", sum, " but it has ",
                  ids.size(), " ids");
    total += ids.size();
  }
  Tensor& packed = allocateOutput(args, 0, {total});
  int64_t* out = packed.data<int64_t>();
  int32_t* send = args.out[1].data<int32_t>();
  int32_t* layout = args.out[2].data<int32_t>();
  std::vector<int64_t> from(static_cast<size_t>(k), 0);  // where each column's ids for the next rank begin
  int64_t at = 0;
  for (int64_t p = 0; p < W; ++p) {
    const int64_t begin = at;
    for (int64_t c = 0; c < k; ++c) {
      const int32_t n = args.in[size_t(2 * c + 1)].data<int32_t>()[p];
      out[at++] = n;
      layout[c * W + p] = n;
    }
    for (int64_t c = 0; c < k; ++c) {
      const Tensor& ids = args.in[size_t(2 * c)];
      const int32_t n = args.in[size_t(2 * c + 1)].data<int32_t>()[p];
      for (int32_t i = 0; i < n; ++i) out[at++] = idAt(ids, from[size_t(c)] + i);
      from[size_t(c)] += n;
    }
    HB_CHECK_CODE(at - begin <= INT32_MAX, OutOfRange, args.name, ": more than 2^31 - 1 values for rank ", p);
    send[p] = int32_t(at - begin);
  }
}

// inputs: received (int64), recvCounts [W]; outputs: ids per column (repeated), then the
// layout [k, W] first. Output order: layout, ids_1, ..., ids_k.
void unpackBySourceKernel(KernelArgs& args) {
  const Tensor& received = args.in[0];
  const int64_t W = worldOf(args, args.in[1], "recvCounts");
  HB_CHECK_CODE(received.dtype == DType::Int64 && received.shape.size() == 1, Type, args.name,
                ": received must be 1-D int64, got ", received.shapeString());
  const int64_t k = int64_t(args.out.size()) - 1;
  HB_CHECK(k >= 1, args.name, ": at least one column");
  HB_CHECK_CODE(args.out[0].size() == k * W, Shape, args.name, ": the layout must be int32 [", k, ", ", W, "]");
  const int32_t* recv = args.in[1].data<int32_t>();
  const int64_t* in = received.data<int64_t>();
  int32_t* layout = args.out[0].data<int32_t>();
  // Checked in full first: the counts came from the peers.
  std::vector<int64_t> perColumn(static_cast<size_t>(k), 0);
  int64_t at = 0;
  for (int64_t q = 0; q < W; ++q) {
    HB_CHECK_CODE(recv[q] >= k, Corrupt, args.name, ": rank ", q, " sent ", recv[q], " values, fewer than the ", k,
                  " counts every part begins with");
    HB_CHECK_CODE(at + recv[q] <= received.size(), Corrupt, args.name, ": the counts exceed what was received");
    int64_t sum = 0;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t n = in[at + c];
      HB_CHECK_CODE(n >= 0 && n <= recv[q], Corrupt, args.name, ": rank ", q, " sent a bad count ", n);
      layout[c * W + q] = int32_t(n);
      perColumn[size_t(c)] += n;
      sum += n;
    }
    HB_CHECK_CODE(sum + k == recv[q], Corrupt, args.name, ": rank ", q, "'s counts add up to ", sum, " ids but it sent ",
                  recv[q] - k);
    at += recv[q];
  }
  HB_CHECK_CODE(at == received.size(), Corrupt, args.name, ": ", received.size(), " values received, ", at, " counted");
  std::vector<int64_t*> out(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) out[size_t(c)] = allocateOutput(args, size_t(1 + c), {perColumn[size_t(c)]}).data<int64_t>();
  at = 0;
  for (int64_t q = 0; q < W; ++q) {
    at += k;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t n = layout[c * W + q];
      if (n > 0) std::memcpy(out[size_t(c)], in + at, size_t(n) * sizeof(int64_t));
      out[size_t(c)] += n;
      at += n;
    }
  }
}

struct RowLayout {
  int64_t k = 0, W = 0;
  const int32_t* counts = nullptr;  // [k, W]: rows of column c for rank q
};

RowLayout layoutOf(const KernelArgs& args, const Tensor& layout, int64_t k) {
  HB_CHECK_CODE(layout.dtype == DType::Int32 && layout.shape.size() == 2 && layout.shape[0] == k, Shape, args.name,
                ": the layout must be int32 [", k, ", worldSize], got ", layout.shapeString());
  RowLayout r{k, layout.shape[1], layout.data<int32_t>()};
  for (int64_t i = 0; i < k * r.W; ++i) HB_CHECK_CODE(r.counts[i] >= 0, OutOfRange, args.name, ": a negative count in the layout");
  return r;
}

// inputs: layout [k, W], rows_1 .. rows_k; outputs: packed [sum], sendCounts [W].
void packRowsKernel(KernelArgs& args) {
  const int64_t k = int64_t(args.in.size()) - 1;
  HB_CHECK(k >= 1, args.name, ": at least one column of rows");
  const RowLayout L = layoutOf(args, args.in[0], k);
  HB_CHECK_CODE(args.out[1].size() == L.W, Shape, args.name, ": sendCounts must be int32 [", L.W, "]");
  std::vector<int64_t> width(static_cast<size_t>(k));
  int64_t total = 0;
  for (int64_t c = 0; c < k; ++c) {
    const Tensor& rows = args.in[size_t(1 + c)];
    HB_CHECK_CODE(rows.shape.size() == 2, Shape, args.name, ": column ", c, "'s rows must be [n, dim], got ", rows.shapeString());
    width[size_t(c)] = rows.shape[1];
    int64_t n = 0;
    for (int64_t q = 0; q < L.W; ++q) n += L.counts[c * L.W + q];
    HB_CHECK_CODE(n == rows.shape[0], Shape, args.name, ": the layout has ", n, " rows of column ", c, ", it has ", rows.shape[0]);
    total += rows.size();
  }
  Tensor& packed = allocateOutput(args, 0, {total});
  float* out = packed.data<float>();
  int32_t* send = args.out[1].data<int32_t>();
  std::vector<int64_t> from(static_cast<size_t>(k), 0);
  int64_t at = 0;
  for (int64_t q = 0; q < L.W; ++q) {
    const int64_t begin = at;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t values = int64_t(L.counts[c * L.W + q]) * width[size_t(c)];
      if (values > 0) std::memcpy(out + at, args.in[size_t(1 + c)].data<float>() + from[size_t(c)], size_t(values) * sizeof(float));
      from[size_t(c)] += values;
      at += values;
    }
    HB_CHECK_CODE(at - begin <= INT32_MAX, OutOfRange, args.name, ": more than 2^31 - 1 values for rank ", q);
    send[q] = int32_t(at - begin);
  }
}

// inputs: packed [m], layout [k, W]; attrs: dims (k widths); outputs: rows_1 .. rows_k.
void unpackRowsKernel(KernelArgs& args) {
  const Tensor& packed = args.in[0];
  const std::vector<double>& dims = args.listAttrs.at(0);
  const int64_t k = int64_t(dims.size());
  HB_CHECK(k >= 1 && int64_t(args.out.size()) == k, args.name, ": one output per width in dims");
  const RowLayout L = layoutOf(args, args.in[1], k);
  HB_CHECK_CODE(packed.dtype == DType::Float32 && packed.shape.size() == 1, Type, args.name, ": packed rows must be 1-D float32");
  int64_t total = 0;
  std::vector<float*> out(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c) {
    const double d = dims[size_t(c)];
    HB_CHECK(d >= 1 && d < 2147483648.0 && d == double(int64_t(d)), args.name, ": dims must be integers in [1, 2^31), got ", d);
    int64_t n = 0;
    for (int64_t q = 0; q < L.W; ++q) n += L.counts[c * L.W + q];
    // n < 2^31 * W and d < 2^31: a product past what arrived is refused before it could wrap.
    HB_CHECK_CODE(n == 0 || int64_t(d) <= packed.size() / n, Corrupt, args.name,
                  ": the layout describes more values than the ", packed.size(), " that arrived");
    total += n * int64_t(d);
  }
  HB_CHECK_CODE(total == packed.size(), Corrupt, args.name, ": the layout describes ", total, " values, not the ",
                packed.size(), " that arrived");
  for (int64_t c = 0; c < k; ++c) {
    int64_t n = 0;
    for (int64_t q = 0; q < L.W; ++q) n += L.counts[c * L.W + q];
    out[size_t(c)] = allocateOutput(args, size_t(c), {n, int64_t(dims[size_t(c)])}).data<float>();
  }
  const float* in = packed.data<float>();
  int64_t at = 0;
  for (int64_t q = 0; q < L.W; ++q) {
    for (int64_t c = 0; c < k; ++c) {
      const int64_t values = int64_t(L.counts[c * L.W + q]) * int64_t(dims[size_t(c)]);
      if (values > 0) std::memcpy(out[size_t(c)], in + at, size_t(values) * sizeof(float));
      out[size_t(c)] += values;
      at += values;
    }
  }
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("pack_by_owner", packByOwnerKernel, KernelPlacement::Host)
                       .input("ids", ids()).input("sizes", i32()).repeatInputs(0)
                       .sizedOutput("packed", i64()).output("sendCounts", i32()).output("layout", i32()));
HB_REGISTER_KERNEL(KernelDef("unpack_by_source", unpackBySourceKernel, KernelPlacement::Host)
                       .input("received", i64()).input("recvCounts", i32())
                       .output("layout", i32()).sizedOutput("ids", i64()).repeatOutputs(1));
HB_REGISTER_KERNEL(KernelDef("pack_rows", packRowsKernel, KernelPlacement::Host)
                       .input("layout", i32()).input("rows", f32()).repeatInputs(1)
                       .sizedOutput("packed", f32()).output("sendCounts", i32()));
HB_REGISTER_KERNEL(KernelDef("unpack_rows", unpackRowsKernel, KernelPlacement::Host)
                       .input("packed", f32()).input("layout", i32())
                       .sizedOutput("rows", f32()).repeatOutputs(0)
                       .numberList("dims"));

}  // namespace hb
