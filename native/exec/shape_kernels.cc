// Kernels that only move floats: "concat", "split_axis" (concat's gradient) and "copy"
// (reshape into a new buffer).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/exec/kernel_def.h"

namespace hb {

namespace {

// Bytes per parallel chunk of a copy.
constexpr int64_t kCopyGrain = 1 << 18;

int64_t axisAttr(const KernelArgs& args, const char* kernel, size_t rank) {
  HB_CHECK(!args.attrs.empty(), args.name, ": kernel ", kernel, " needs attrs[0] (the axis)");
  const double axis = args.attrs[0];
  HB_CHECK(axis == std::floor(axis) && axis >= 0 && axis < double(rank), args.name, ": ", kernel, ": axis ", axis,
           " must be an integer in [0, ", rank, ")");
  return int64_t(axis);
}

int64_t product(const std::vector<int64_t>& shape, size_t first, size_t last) {
  int64_t p = 1;
  for (size_t k = first; k < last; ++k) p *= shape[k];
  return p;
}

// A strided block copy: `rows` rows of `width` floats, from rows `inStride` apart to rows
// `outStride` apart, in the memory of `device`.
void copyRows(Device device, const float* in, int64_t inStride, float* out, int64_t outStride, int64_t rows,
              int64_t width) {
  if (rows == 0 || width == 0) return;
  if (device.isCuda()) return cuda::copyRows(device.index, in, inStride, out, outStride, rows, width);
  const int64_t bytes = width * int64_t(sizeof(float));
  parallelFor(rows, std::max<int64_t>(1, kCopyGrain / bytes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::memcpy(out + r * outStride, in + r * inStride, size_t(bytes));
  });
}

// One input's (or output's) part of each row of a concatenation: `width` floats per row.
struct RowPiece {
  float* data;
  int64_t width;
};

// out row r = the pieces' rows r side by side, for r < rows (host memory).
void joinRows(const std::vector<RowPiece>& pieces, float* out, int64_t outRow, int64_t rows) {
  const int64_t bytes = std::max<int64_t>(1, outRow * int64_t(sizeof(float)));
  parallelFor(rows, std::max<int64_t>(1, kCopyGrain / bytes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* to = out + r * outRow;
      for (const RowPiece& p : pieces) {
        std::memcpy(to, p.data + r * p.width, size_t(p.width) * sizeof(float));
        to += p.width;
      }
    }
  });
}

// The other way: each piece's row r from input row r.
void splitRows(const float* in, int64_t inRow, const std::vector<RowPiece>& pieces, int64_t rows) {
  const int64_t bytes = std::max<int64_t>(1, inRow * int64_t(sizeof(float)));
  parallelFor(rows, std::max<int64_t>(1, kCopyGrain / bytes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* from = in + r * inRow;
      for (const RowPiece& p : pieces) {
        std::memcpy(p.data + r * p.width, from, size_t(p.width) * sizeof(float));
        from += p.width;
      }
    }
  });
}

// `pieces` (a concat's inputs, a split's outputs) must match `whole` outside `axis` and add
// up to it along it; `pieceWord` / `wholeWord` say which side each is in messages.
void checkPiecesFit(const std::vector<Tensor>& pieces, const Tensor& whole, int64_t axis, const std::string& where,
                    const char* pieceWord, const char* wholeWord) {
  const size_t rank = whole.shape.size();
  int64_t total = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Tensor& t = pieces[k];
    bool match = t.shape.size() == rank;
    for (size_t d = 0; match && d < rank; ++d) match = int64_t(d) == axis || t.shape[d] == whole.shape[d];
    HB_CHECK(match, where, ": ", pieceWord, " ", k, " has shape ", t.shapeString(), ", which does not fit ", wholeWord,
             " ", whole.shapeString(), " along axis ", axis);
    total += t.shape[size_t(axis)];
  }
  HB_CHECK(total == whole.shape[size_t(axis)], where, ": the ", pieceWord, "s' dims on axis ", axis, " add up to ",
           total, ", but the ", wholeWord, " ", whole.shapeString(), " has ", whole.shape[size_t(axis)]);
}

void concatKernel(KernelArgs& args) {
  HB_CHECK(!args.in.empty() && args.out.size() == 1, args.name, ": kernel concat takes 1 or more inputs and 1 output, got ",
           args.in.size(), " and ", args.out.size());
  checkFloat32(args, "concat");
  const Tensor& out = args.out[0];
  const size_t rank = out.shape.size();
  const int64_t axis = axisAttr(args, "concat", rank);
  checkPiecesFit(args.in, out, axis, args.name + ": concat", "input", "output");
  const int64_t outer = product(out.shape, 0, size_t(axis));
  const int64_t inner = product(out.shape, size_t(axis) + 1, rank);
  const int64_t outRow = out.shape[size_t(axis)] * inner;
  const Device device = kernelDevice(args, "concat");
  if (device.isCuda()) {
    int64_t offset = 0;
    for (const Tensor& t : args.in) {
      const int64_t width = t.shape[size_t(axis)] * inner;
      copyRows(device, t.data<float>(), width, out.data<float>() + offset, outRow, outer, width);
      offset += width;
    }
    return;
  }
  // One pass over the output's rows, each written whole by one thread: one dispatch for
  // all inputs (DLRM concatenates 27), and every row's pieces stay in one cache.
  std::vector<RowPiece> pieces;
  for (const Tensor& t : args.in) pieces.push_back({t.data<float>(), t.shape[size_t(axis)] * inner});
  joinRows(pieces, out.data<float>(), outRow, outer);
}

// out[axis] split into the outputs' widths: concat's gradient in one pass ("split_axis").
void splitAxisKernel(KernelArgs& args) {
  HB_CHECK(args.in.size() == 1 && !args.out.empty(), args.name, ": kernel split_axis takes 1 input and 1 or more outputs, got ",
           args.in.size(), " and ", args.out.size());
  checkFloat32(args, "split_axis");
  const Tensor& in = args.in[0];
  const size_t rank = in.shape.size();
  const int64_t axis = axisAttr(args, "split_axis", rank);
  checkPiecesFit(args.out, in, axis, args.name + ": split_axis", "output", "input");
  const int64_t outer = product(in.shape, 0, size_t(axis));
  const int64_t inner = product(in.shape, size_t(axis) + 1, rank);
  const int64_t inRow = in.shape[size_t(axis)] * inner;
  const Device device = kernelDevice(args, "split_axis");
  if (device.isCuda()) {
    int64_t offset = 0;
    for (const Tensor& t : args.out) {
      const int64_t width = t.shape[size_t(axis)] * inner;
      copyRows(device, in.data<float>() + offset, inRow, t.data<float>(), width, outer, width);
      offset += width;
    }
    return;
  }
  std::vector<RowPiece> pieces;
  for (const Tensor& t : args.out) pieces.push_back({t.data<float>(), t.shape[size_t(axis)] * inner});
  splitRows(in.data<float>(), inRow, pieces, outer);
}

void copyKernel(KernelArgs& args) {
  checkArity(args, 1, 1, "copy");
  checkFloat32(args, "copy");
  const Tensor& in = args.in[0];
  const Tensor& out = args.out[0];
  HB_CHECK(in.size() == out.size(), args.name, ": copy: input ", in.shapeString(), " and output ", out.shapeString(),
           " differ in size");
  if (in.size() == 0 || in.data<float>() == out.data<float>()) return;
  const Device device = kernelDevice(args, "copy");
  if (device.isCuda()) return copyRows(device, in.data<float>(), in.size(), out.data<float>(), out.size(), 1, in.size());
  // Copied as rows of a flat view so big copies split across the pool.
  const int64_t width = 4096;
  const int64_t rows = in.size() / width;
  copyRows(Device::cpu(), in.data<float>(), width, out.data<float>(), width, rows, width);
  copyRows(Device::cpu(), in.data<float>() + rows * width, 0, out.data<float>() + rows * width, 0, 1, in.size() - rows * width);
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("concat", concatKernel, KernelPlacement::Device)
                       .input("x", f32()).repeatInputs(0).output("out", f32()).integer("axis"));
HB_REGISTER_KERNEL(KernelDef("split_axis", splitAxisKernel, KernelPlacement::Device)
                       .input("x", f32()).output("out", f32()).repeatOutputs(0).integer("axis"));
HB_REGISTER_KERNEL(KernelDef("copy", copyKernel, KernelPlacement::Device).input("x", f32()).output("out", f32()));

}  // namespace hb
