// "reduce_to_shape" (sums over broadcast dims: reduce_sum / reduce_mean and the
// gradients of broadcasting ops, bias gradients first of all), its mirror
// "broadcast_to", and "activation_grad_bias" (a dense layer's activation gradient and
// bias gradient, in one pass on the CPU), with "matmul_activation_grad_bias" (the same
// after the GEMM that makes the activation's gradient). Sums are dense_math.h's blocked sums, so a result does not
// depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/exec/kernel_def.h"
#include "native/exec/matmul.h"
#include "native/exec/unary_grad.h"
#include "native/kernels/dense_math.h"

namespace hb {

namespace {

constexpr int64_t kGrain = 1 << 15;
// Output columns one task of a column sum keeps in its accumulator.
constexpr int64_t kColumnBlock = 256;

// The big shape S and the small shape T (T broadcasts to S) as runs of dims that are all
// kept or all broadcast (reduced); dims of size 1 in S join either kind and are dropped.
struct Runs {
  std::vector<int64_t> size;
  std::vector<bool> reduced;
};

// Checks that `small` broadcasts to `big` (right-aligned; each dim of small is 1 or
// big's), naming `kernel` and the two shapes otherwise.
Runs broadcastRuns(const KernelArgs& args, const char* kernel, const Tensor& big, const Tensor& small) {
  const auto& s = big.shape;
  const auto& t = small.shape;
  HB_CHECK(t.size() <= s.size(), args.name, ": ", kernel, ": shape ", small.shapeString(), " does not broadcast to ",
           big.shapeString(), " (higher rank)");
  Runs runs;
  for (size_t d = 0; d < s.size(); ++d) {
    const size_t lead = s.size() - t.size();
    const int64_t td = d < lead ? 1 : t[d - lead];
    HB_CHECK(td == s[d] || td == 1, args.name, ": ", kernel, ": shape ", small.shapeString(), " does not broadcast to ",
             big.shapeString(), " (dim ", d, ")");
    if (s[d] == 1) continue;
    const bool reduced = td == 1;
    if (!runs.size.empty() && runs.reduced.back() == reduced) {
      runs.size.back() *= s[d];
    } else {
      runs.size.push_back(s[d]);
      runs.reduced.push_back(reduced);
    }
  }
  return runs;
}

void scaledCopy(const float* in, float* out, int64_t n, float scale) {
  parallelFor(n, kGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = mulRn(in[i], scale);
  });
}

// Column sums: out[o, c] = scale * sum over r of row(o, r)[c], for inner > 1. A task adds
// up to kSumBlock rows of up to `columnBlock` columns, row by row (contiguous loads); with
// more than one row block the block sums go to `partial` and are combined in order
// afterwards. Each column's terms are added in r order whatever the blocks, so the bits
// do not depend on columnBlock. rowAt(o, r, c0, width) gives the `width` values of row
// (o, r) from column c0; it is asked once for each, so it may compute them
// (activation_grad_bias does, over whole rows where it can: narrower blocks walk its
// inputs in strided pieces, which cost it 1.2-1.6x on [4096, 512]).
template <typename RowAt>
void sumColumns(int64_t outer, int64_t reduce, int64_t inner, float scale, float* out, const RowAt& rowAt,
                int64_t columnBlock = kColumnBlock) {
  const int64_t rowBlocks = (reduce + kSumBlock - 1) / kSumBlock;
  const int64_t colBlocks = (inner + columnBlock - 1) / columnBlock;
  std::vector<float> partial(rowBlocks > 1 ? size_t(outer * rowBlocks * inner) : 0);
  const int64_t rowsPerTask = std::min(reduce, kSumBlock);
  const int64_t taskElements = rowsPerTask * std::min(inner, columnBlock);
  parallelFor(outer * rowBlocks * colBlocks, std::max<int64_t>(1, kGrain / taskElements), [&](int64_t t0, int64_t t1) {
    std::vector<float> acc(size_t(std::min(inner, columnBlock)));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t cb = t % colBlocks;
      const int64_t rb = (t / colBlocks) % rowBlocks;
      const int64_t o = t / (colBlocks * rowBlocks);
      const int64_t c0 = cb * columnBlock;
      const int64_t width = std::min(columnBlock, inner - c0);
      const int64_t r0 = rb * kSumBlock;
      const int64_t r1 = std::min(reduce, r0 + kSumBlock);
      float* sums = acc.data();
      std::fill(sums, sums + width, 0.0f);
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = rowAt(o, r, c0, width);
        for (int64_t c = 0; c < width; ++c) sums[c] = addRn(sums[c], row[c]);
      }
      if (rowBlocks == 1) {
        for (int64_t c = 0; c < width; ++c) out[o * inner + c0 + c] = mulRn(sums[c], scale);
      } else {
        std::copy(sums, sums + width, partial.data() + (o * rowBlocks + rb) * inner + c0);
      }
    }
  });
  if (rowBlocks == 1) return;
  parallelFor(outer * inner, std::max<int64_t>(1, kGrain / rowBlocks), [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) {
      const int64_t o = e / inner, c = e % inner;
      float total = 0.0f;
      for (int64_t rb = 0; rb < rowBlocks; ++rb) total = addRn(total, partial[size_t((o * rowBlocks + rb) * inner + c)]);
      out[e] = mulRn(total, scale);
    }
  });
}

// out[o, i] = scale * sum over r of in[o, r, i]: one run of reduced dims between kept
// ones. Each output element's terms are summed in r order, blocked by kSumBlock.
void reduceMiddle(const float* in, float* out, int64_t outer, int64_t reduce, int64_t inner, float scale) {
  if (inner == 1) {
    if (outer == 1) {
      out[0] = mulRn(blockedSum(reduce, [&](int64_t r) { return in[r]; }), scale);
      return;
    }
    parallelFor(outer, std::max<int64_t>(1, kGrain / reduce), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const float* row = in + o * reduce;
        out[o] = mulRn(blockedSumSerial(reduce, [&](int64_t r) { return row[r]; }), scale);
      }
    });
    return;
  }
  sumColumns(outer, reduce, inner, scale, out,
             [&](int64_t o, int64_t r, int64_t c0, int64_t) { return in + (o * reduce + r) * inner + c0; });
}

// Several runs of reduced dims (say [A, B, C] -> [1, B, 1]): each output element walks
// its terms in row-major order of the reduced dims. Rare, so plain index arithmetic.
void reduceGeneral(const Runs& runs, const float* in, float* out, int64_t outCount, float scale) {
  const size_t rank = runs.size.size();
  std::vector<int64_t> stride(rank);
  int64_t s = 1;
  for (size_t k = rank; k-- > 0;) {
    stride[k] = s;
    s *= runs.size[k];
  }
  int64_t terms = 1;
  for (size_t k = 0; k < rank; ++k) terms *= runs.reduced[k] ? runs.size[k] : 1;
  parallelFor(outCount, std::max<int64_t>(1, kGrain / terms), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t base = 0, rest = o;
      for (size_t k = rank; k-- > 0;) {
        if (runs.reduced[k]) continue;
        base += (rest % runs.size[k]) * stride[k];
        rest /= runs.size[k];
      }
      const float sum = blockedSumSerial(terms, [&](int64_t j) {
        int64_t offset = base;
        for (size_t k = rank; k-- > 0;) {
          if (!runs.reduced[k]) continue;
          offset += (j % runs.size[k]) * stride[k];
          j /= runs.size[k];
        }
        return in[offset];
      });
      out[o] = mulRn(sum, scale);
    }
  });
}

// The runs as the CUDA kernels take them; throws naming the kernel when there are more
// than they index.
cuda::RunLayout deviceRuns(const KernelArgs& args, const char* kernel, const Runs& runs) {
  HB_CHECK(runs.size.size() <= size_t(cuda::kMaxKernelRank), args.name, ": ", kernel, " on CUDA handles at most ",
           cuda::kMaxKernelRank, " alternating kept and reduced dims, got ", runs.size.size());
  cuda::RunLayout layout;
  layout.rank = int32_t(runs.size.size());
  for (size_t k = 0; k < runs.size.size(); ++k) {
    layout.size[k] = runs.size[k];
    layout.reduced[k] = runs.reduced[k];
  }
  return layout;
}

// out (shape T) = scale * in (shape S) summed over the dims T broadcasts along.
void reduceToShapeOn(const KernelArgs& args, const char* kernel, const Tensor& in, const Tensor& out, float scale) {
  const Runs runs = broadcastRuns(args, kernel, in, out);
  const float* pin = in.data<float>();
  float* pout = out.data<float>();
  const Device device = kernelDevice(args, kernel);
  if (device.isCuda()) {
    bool reduces = false;
    for (bool r : runs.reduced) reduces = reduces || r;
    // Without a reduced dim the CPU copies (keeping a -0.0 as it is); so does the GPU.
    if (!reduces) return cuda::scaledCopy(device.index, pin, pout, out.size(), scale);
    return cuda::reduceToShape(device.index, deviceRuns(args, kernel, runs), pin, pout, scale);
  }
  if (in.size() == 0) {
    // A sum of nothing: zeros (T may still have elements where S has a 0 dim T lacks).
    if (out.size()) std::memset(pout, 0, out.bytes());
    return;
  }
  size_t reducedRuns = 0, first = 0;
  for (size_t k = 0; k < runs.size.size(); ++k) {
    if (runs.reduced[k] && reducedRuns++ == 0) first = k;
  }
  if (reducedRuns == 0) return scaledCopy(pin, pout, in.size(), scale);
  if (reducedRuns == 1) {
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < first; ++k) outer *= runs.size[k];
    for (size_t k = first + 1; k < runs.size.size(); ++k) inner *= runs.size[k];
    return reduceMiddle(pin, pout, outer, runs.size[first], inner, scale);
  }
  reduceGeneral(runs, pin, pout, out.size(), scale);
}

void reduceToShapeKernel(KernelArgs& args) {
  checkArity(args, 1, 1, "reduce_to_shape");
  checkFloat32(args, "reduce_to_shape");
  reduceToShapeOn(args, "reduce_to_shape", args.in[0], args.out[0], float(attrOr(args, 0, 1.0)));
}

// A dense layer's backward through its activation and bias: dz = unary_grad(op, dy, v)
// and db = reduce_to_shape(dz, [N]) (dz summed over every dim but the last, N), the same
// bits as those two kernels. On the CPU, for [rows > 1, N > 1], in one pass: dz is made
// inside the column sums, block by block, so db is summed from values still in cache.
// Elsewhere (a GPU, one row or column, nothing to sum) the two kernels' work in turn.
void activationGradBiasKernel(KernelArgs& args) {
  checkArity(args, 2, 2, "activation_grad_bias");
  checkFloat32(args, "activation_grad_bias");
  HB_CHECK(!args.attrs.empty() && args.attrs[0] == std::floor(args.attrs[0]) && args.attrs[0] >= 0 &&
               args.attrs[0] < kUnaryOpCount,
           args.name, ": kernel activation_grad_bias attrs[0] (the op) must be an integer in [0, ", kUnaryOpCount,
           "), got ", args.attrs.empty() ? std::nan("") : args.attrs[0]);
  const int32_t op = int32_t(args.attrs[0]);
  HB_CHECK(unaryHasGrad(op), args.name, ": activation_grad_bias: op '", kUnaryOpNames[op],
           "' has no gradient kernel (relu, sigmoid, tanh, exp, log, square, sqrt have)");
  const Tensor& dy = args.in[0];
  const Tensor& v = args.in[1];
  const Tensor& dz = args.out[0];
  const Tensor& db = args.out[1];
  HB_CHECK(!dy.shape.empty() && dy.shape == v.shape && dy.shape == dz.shape, args.name,
           ": activation_grad_bias: dy ", dy.shapeString(), ", ", unaryGradReadsOutput(op) ? "y " : "x ",
           v.shapeString(), " and dz ", dz.shapeString(), " must have one shape, of rank >= 1");
  const int64_t n = dy.shape.back();
  HB_CHECK(db.shape == std::vector<int64_t>{n}, args.name, ": activation_grad_bias: the bias gradient has shape ",
           db.shapeString(), ", expected [", n, "] (dy's last dim)");
  const Runs runs = broadcastRuns(args, "activation_grad_bias", dz, db);
  const Device device = kernelDevice(args, "activation_grad_bias");
  const bool columns = dz.size() > 0 && runs.size.size() == 2 && runs.reduced[0] && !runs.reduced[1];
  if (device.isCuda() || !columns) {
    // An empty dz, one row or one column, or a GPU: the two kernels' work in turn.
    runUnaryGrad(device, op, dy.data<float>(), v.data<float>(), dz.data<float>(), dz.size());
    return reduceToShapeOn(args, "activation_grad_bias", dz, db, 1.0f);
  }
  const float* pdy = dy.data<float>();
  const float* pv = v.data<float>();
  float* pdz = dz.data<float>();
  // Whole rows per task where there are row blocks enough for every thread; with fewer
  // (a short, wide dz), column blocks keep the threads busy.
  const int64_t rowBlocks = (runs.size[0] + kSumBlock - 1) / kSumBlock;
  const int64_t columnBlock = rowBlocks >= threadPoolSize() ? n : kColumnBlock;
  withUnaryOp(op, [&](auto tag) {
    constexpr UnaryOp Op = decltype(tag)::value;
    sumColumns(1, runs.size[0], n, 1.0f, db.data<float>(), [&](int64_t, int64_t r, int64_t c0, int64_t width) {
      const int64_t at = r * n + c0;
      for (int64_t c = 0; c < width; ++c) pdz[at + c] = unaryGradOf<Op>(pdy[at + c], pv[at + c]);
      return pdz + at;
    }, columnBlock);
  });
}

// A dense layer's backward from the GEMM that makes dy (the layer above's dX = dZ W^T):
// dz = unary_grad(op, dy, v) and db = dz summed over the rows, the same bits as matmul then
// activation_grad_bias. On the CPU each piece of the product becomes dz as the GEMM
// finishes it, while it is in cache, and db is summed from dz after; dy is never written
// out. On a GPU the three kernels' work in turn.
void matmulActivationGradBiasKernel(KernelArgs& args) {
  const char* kernel = "matmul_activation_grad_bias";
  checkArity(args, 3, 2, kernel);
  const int32_t op = activationAttr(args, 2, kernel);
  HB_CHECK(unaryHasGrad(op), args.name, ": ", kernel, ": op '", kUnaryOpNames[op],
           "' has no gradient kernel (relu, sigmoid, tanh, exp, log, square, sqrt have)");
  const Tensor& v = args.in[2];
  const Tensor& dz = args.out[0];
  const Tensor& db = args.out[1];
  HB_CHECK(v.shape == dz.shape, args.name, ": ", kernel, ": ", unaryGradReadsOutput(op) ? "y " : "x ", v.shapeString(),
           " and dz ", dz.shapeString(), " must have one shape");
  HB_CHECK(dz.shape.size() == 2, args.name, ": kernel ", kernel, " writes a [M, N] dz, got ", dz.shapeString());
  HB_CHECK(db.shape == std::vector<int64_t>{dz.shape[1]}, args.name, ": ", kernel, ": the bias gradient has shape ",
           db.shapeString(), ", expected [", dz.shape[1], "] (dz's columns)");
  const Device device = kernelDevice(args, kernel);
  if (device.isCuda()) {
    matmulInto(args, kernel, 0.0f);
    runUnaryGrad(device, op, dz.data<float>(), v.data<float>(), dz.data<float>(), dz.size());
    return reduceToShapeOn(args, kernel, dz, db, 1.0f);
  }
  const int64_t n = dz.shape[1];
  const float* pv = v.data<float>();
  float* pdz = dz.data<float>();
  const SgemmEpilogue epilogue = [=](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    withUnaryOp(op, [&](auto tag) {
      constexpr UnaryOp Op = decltype(tag)::value;
      for (int64_t r = m0; r < m1; ++r) {
        for (int64_t c = r * n + n0; c < r * n + n1; ++c) pdz[c] = unaryGradOf<Op>(pdz[c], pv[c]);
      }
    });
  };
  matmulInto(args, kernel, 0.0f, &epilogue);
  reduceToShapeOn(args, kernel, dz, db, 1.0f);
}

// out (shape S) = in (shape T, broadcast) * scale.
void broadcastToKernel(KernelArgs& args) {
  checkArity(args, 1, 1, "broadcast_to");
  checkFloat32(args, "broadcast_to");
  const Tensor& in = args.in[0];
  const Tensor& out = args.out[0];
  const Runs runs = broadcastRuns(args, "broadcast_to", out, in);
  const float scale = float(attrOr(args, 0, 1.0));
  if (out.size() == 0) return;
  const Device device = kernelDevice(args, "broadcast_to");
  if (device.isCuda()) {
    return cuda::broadcastTo(device.index, deviceRuns(args, "broadcast_to", runs), in.data<float>(), out.data<float>(), scale);
  }
  const float* pin = in.data<float>();
  float* pout = out.data<float>();
  const size_t rank = runs.size.size();
  if (rank == 0 || (rank == 1 && !runs.reduced[0])) return scaledCopy(pin, pout, out.size(), scale);
  // Strides into `in` over the runs (0 along broadcast runs); rows of the last run are
  // the parallel unit.
  std::vector<int64_t> stride(rank);
  int64_t s = 1;
  for (size_t k = rank; k-- > 0;) {
    stride[k] = runs.reduced[k] ? 0 : s;
    if (!runs.reduced[k]) s *= runs.size[k];
  }
  const int64_t cols = runs.size[rank - 1];
  const int64_t innerStride = stride[rank - 1];
  parallelFor(out.size() / cols, std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t offset = 0, rest = r;
      for (size_t k = rank - 1; k-- > 0;) {
        offset += (rest % runs.size[k]) * stride[k];
        rest /= runs.size[k];
      }
      float* row = pout + r * cols;
      if (innerStride == 0) {
        const float v = mulRn(pin[offset], scale);
        std::fill(row, row + cols, v);
      } else {
        for (int64_t c = 0; c < cols; ++c) row[c] = mulRn(pin[offset + c], scale);
      }
    }
  });
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("reduce_to_shape", reduceToShapeKernel, KernelPlacement::Device)
                       .input("x", f32()).output("out", f32()).number("scale", 1));
// in[1] is the activation's output y, or its input x for log and square (see unary_grad).
HB_REGISTER_KERNEL(KernelDef("activation_grad_bias", activationGradBiasKernel, KernelPlacement::Device)
                       .input("dy", f32()).input("yOrX", f32()).output("dz", f32()).output("db", f32())
                       .enumeration("op", {std::begin(kUnaryOpNames), std::end(kUnaryOpNames)}));
// dz, db = activation_grad_bias(op(a) * op(b), yOrX)
HB_REGISTER_KERNEL(KernelDef("matmul_activation_grad_bias", matmulActivationGradBiasKernel, KernelPlacement::Device)
                       .input("a", f32()).input("b", f32()).input("yOrX", f32()).output("dz", f32()).output("db", f32())
                       .boolean("transposeA", false).boolean("transposeB", false)
                       .enumeration("op", {std::begin(kUnaryOpNames), std::end(kUnaryOpNames)}));
HB_REGISTER_KERNEL(KernelDef("broadcast_to", broadcastToKernel, KernelPlacement::Device)
                       .input("x", f32()).output("out", f32()).number("scale", 1));

}  // namespace hb
