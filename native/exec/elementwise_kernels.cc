// Element-wise kernels: "binary" (NumPy broadcasting), "unary", "unary_grad", and
// "bias_activation" (a dense layer's bias add and activation, in one pass on the CPU). The
// math per element is native/kernels/dense_math.h's; this file picks the loop shape.
#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/exec/bias_activation.h"
#include "native/exec/kernel_def.h"
#include "native/exec/unary_grad.h"
#include "native/kernels/dense_math.h"

namespace hb {

namespace {

// Elements per parallel chunk: below this a loop runs inline on the calling thread.
constexpr int64_t kGrain = 1 << 15;
// The general broadcasting path keeps its strides on the stack.
constexpr size_t kMaxBroadcastRank = 6;
static_assert(kMaxBroadcastRank <= size_t(cuda::kMaxKernelRank), "the CUDA kernel indexes fewer dims");

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<std::string> binaryOpNames() { return {std::begin(kBinaryOpNames), std::end(kBinaryOpNames)}; }
std::vector<std::string> unaryOpNames() { return {std::begin(kUnaryOpNames), std::end(kUnaryOpNames)}; }

// attrs[index] as an op code in [0, count).
int32_t opAttr(const KernelArgs& args, const char* kernel, int32_t count) {
  HB_CHECK(!args.attrs.empty(), args.name, ": kernel ", kernel, " needs attrs[0] (the op)");
  const double op = args.attrs[0];
  HB_CHECK(op == std::floor(op) && op >= 0 && op < count, args.name, ": kernel ", kernel,
           " attrs[0] (the op) must be an integer in [0, ", count, "), got ", op);
  return int32_t(op);
}

// NumPy's broadcast of two shapes (right-aligned; a 1 stretches); false if they clash.
bool broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) return false;
    (*out)[rank - 1 - k] = da == 1 ? db : da;
  }
  return true;
}

// How "binary" walks its operands; chosen (and checked) before any memory is read.
enum class BinaryLoop {
  Same,     // a, b and out have the same elements
  ScalarB,  // b has one element
  ScalarA,  // a has one element
  RowB,     // b is one row of out's last dim (a bias)
  ColumnB,  // b has one element per row of out ([rows, 1] against [rows, cols])
  General,  // strides, rank <= kMaxBroadcastRank
};

BinaryLoop chooseBinaryLoop(const Tensor& a, const Tensor& b, const std::vector<int64_t>& out) {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  const int64_t cols = out.empty() ? 1 : out.back();
  // Operands as big as the output that broadcast to it have its layout.
  if (a.size() == n && b.size() == n) return BinaryLoop::Same;
  if (b.size() == 1) return BinaryLoop::ScalarB;
  if (a.size() == 1) return BinaryLoop::ScalarA;
  if (a.size() == n && !b.shape.empty()) {
    // b broadcasts to out, so a size equal to its last dim leaves only 1s before it,
    // and a size of out's row count with a trailing 1 leaves out's leading dims.
    if (b.shape.back() == cols && b.size() == cols) return BinaryLoop::RowB;
    if (b.shape.back() == 1 && cols > 0 && b.size() == n / cols) return BinaryLoop::ColumnB;
  }
  return BinaryLoop::General;
}

template <BinaryOp Op>
void runBinary(BinaryLoop loop, const Tensor& a, const Tensor& b, const Tensor& out) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  const int64_t n = out.size();
  const int64_t cols = out.shape.empty() ? 1 : out.shape.back();
  switch (loop) {
    case BinaryLoop::Same:
      parallelFor(n, kGrain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) po[i] = binaryOf<Op>(pa[i], pb[i]);
      });
      return;
    case BinaryLoop::ScalarB: {
      const float s = pb[0];
      parallelFor(n, kGrain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) po[i] = binaryOf<Op>(pa[i], s);
      });
      return;
    }
    case BinaryLoop::ScalarA: {
      const float s = pa[0];
      parallelFor(n, kGrain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) po[i] = binaryOf<Op>(s, pb[i]);
      });
      return;
    }
    case BinaryLoop::RowB:
      parallelFor(n / cols, std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const float* ra = pa + r * cols;
          float* ro = po + r * cols;
          for (int64_t c = 0; c < cols; ++c) ro[c] = binaryOf<Op>(ra[c], pb[c]);
        }
      });
      return;
    case BinaryLoop::ColumnB:
      parallelFor(n / cols, std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const float* ra = pa + r * cols;
          float* ro = po + r * cols;
          const float s = pb[r];
          for (int64_t c = 0; c < cols; ++c) ro[c] = binaryOf<Op>(ra[c], s);
        }
      });
      return;
    case BinaryLoop::General: {
      // Right-align both operands to out's rank; a broadcast dim has stride 0. Rows of
      // out's last dim are the parallel unit.
      const size_t rank = out.shape.size();
      int64_t strideA[kMaxBroadcastRank] = {0}, strideB[kMaxBroadcastRank] = {0};
      int64_t sa = 1, sb = 1;
      for (size_t k = 0; k < rank; ++k) {
        const size_t d = rank - 1 - k;
        const int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
        const int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
        strideA[d] = da == 1 ? 0 : sa;
        strideB[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
      }
      const int64_t innerA = strideA[rank - 1], innerB = strideB[rank - 1];
      parallelFor(n / cols, std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t offA = 0, offB = 0, rest = r;
          for (size_t k = 1; k < rank; ++k) {
            const size_t d = rank - 1 - k;
            const int64_t index = rest % out.shape[d];
            rest /= out.shape[d];
            offA += index * strideA[d];
            offB += index * strideB[d];
          }
          float* ro = po + r * cols;
          for (int64_t c = 0; c < cols; ++c) ro[c] = binaryOf<Op>(pa[offA + c * innerA], pb[offB + c * innerB]);
        }
      });
      return;
    }
  }
}

// The CUDA kernel's view of a loop: the same walk as the CPU's, as strides over at most
// kMaxBroadcastRank dims (the simple loops flatten to one or two).
cuda::BroadcastIndex deviceIndex(BinaryLoop loop, const Tensor& a, const Tensor& b, const std::vector<int64_t>& out) {
  cuda::BroadcastIndex index;
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  const int64_t cols = out.empty() ? 1 : out.back();
  auto set = [&](std::initializer_list<int64_t> shape, std::initializer_list<int64_t> sa, std::initializer_list<int64_t> sb) {
    index.rank = int32_t(shape.size());
    std::copy(shape.begin(), shape.end(), index.shape);
    std::copy(sa.begin(), sa.end(), index.strideA);
    std::copy(sb.begin(), sb.end(), index.strideB);
  };
  switch (loop) {
    case BinaryLoop::Same: set({n}, {1}, {1}); break;
    case BinaryLoop::ScalarB: set({n}, {1}, {0}); break;
    case BinaryLoop::ScalarA: set({n}, {0}, {1}); break;
    case BinaryLoop::RowB: set({n / cols, cols}, {cols, 1}, {0, 1}); break;
    case BinaryLoop::ColumnB: set({n / cols, cols}, {cols, 1}, {1, 0}); break;
    case BinaryLoop::General: {
      const size_t rank = out.size();
      index.rank = int32_t(rank);
      int64_t sa = 1, sb = 1;
      for (size_t k = 0; k < rank; ++k) {
        const size_t d = rank - 1 - k;
        const int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
        const int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
        index.shape[d] = out[d];
        index.strideA[d] = da == 1 ? 0 : sa;
        index.strideB[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
      }
      break;
    }
  }
  return index;
}

void binaryKernel(KernelArgs& args) {
  checkArity(args, 2, 1, "binary");
  checkFloat32(args, "binary");
  const int32_t op = opAttr(args, "binary", kBinaryOpCount);
  const Tensor& a = args.in[0];
  const Tensor& b = args.in[1];
  const Tensor& out = args.out[0];
  std::vector<int64_t> shape;
  HB_CHECK(broadcastShapes(a.shape, b.shape, &shape), args.name, ": binary: shapes ", a.shapeString(), " and ",
           b.shapeString(), " do not broadcast");
  HB_CHECK(out.shape == shape, args.name, ": binary: the output has shape ", out.shapeString(), ", expected ",
           shapeText(shape), " (the broadcast of ", a.shapeString(), " and ", b.shapeString(), ")");
  if (out.size() == 0) return;
  const BinaryLoop loop = chooseBinaryLoop(a, b, shape);
  HB_CHECK(loop != BinaryLoop::General || shape.size() <= kMaxBroadcastRank, args.name, ": binary: broadcasting ",
           a.shapeString(), " against ", b.shapeString(), " needs rank <= ", kMaxBroadcastRank);
  const Device device = kernelDevice(args, "binary");
  if (device.isCuda()) {
    return cuda::binary(device.index, op, a.data<float>(), b.data<float>(), out.data<float>(), out.size(),
                        deviceIndex(loop, a, b, shape));
  }
  withBinaryOp(op, [&](auto tag) { runBinary<decltype(tag)::value>(loop, a, b, out); });
}

void unaryKernel(KernelArgs& args) {
  checkArity(args, 1, 1, "unary");
  checkFloat32(args, "unary");
  const int32_t op = opAttr(args, "unary", kUnaryOpCount);
  const bool needsConstant = UnaryOp(op) == UnaryOp::Scale || UnaryOp(op) == UnaryOp::AddConstant;
  HB_CHECK(!needsConstant || (args.attrs.size() >= 2 && !std::isnan(args.attrs[1])), args.name, ": unary op '",
           kUnaryOpNames[op], "' needs attr c (the constant)");
  const Tensor& x = args.in[0];
  const Tensor& y = args.out[0];
  HB_CHECK(x.size() == y.size(), args.name, ": unary: input ", x.shapeString(), " and output ", y.shapeString(),
           " differ in size");
  const float c = needsConstant ? float(args.attrs[1]) : 0.0f;
  const Device device = kernelDevice(args, "unary");
  if (device.isCuda()) return cuda::unary(device.index, op, c, x.data<float>(), y.data<float>(), x.size());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  withUnaryOp(op, [&](auto tag) {
    constexpr UnaryOp Op = decltype(tag)::value;
    parallelFor(x.size(), kGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) py[i] = unaryOf<Op>(px[i], c);
    });
  });
}

// A dense layer's y = op(x + bias) (bias [N] along x's last dim): the same bits as binary
// add then unary op. On the CPU in one pass, without writing x + bias out and reading it
// back; on a GPU the two kernels in turn (the second in place).
void biasActivationKernel(KernelArgs& args) {
  checkArity(args, 2, 1, "bias_activation");
  checkFloat32(args, "bias_activation");
  const int32_t op = opAttr(args, "bias_activation", kUnaryOpCount);
  checkBiasActivationOp(op, args.name, "bias_activation");
  const Tensor& x = args.in[0];
  const Tensor& bias = args.in[1];
  const Tensor& y = args.out[0];
  HB_CHECK(!x.shape.empty() && y.shape == x.shape, args.name, ": bias_activation: x ", x.shapeString(),
           " and y ", y.shapeString(), " must have one shape, of rank >= 1");
  const int64_t cols = x.shape.back();
  HB_CHECK(bias.shape == std::vector<int64_t>{cols}, args.name, ": bias_activation: the bias has shape ",
           bias.shapeString(), ", expected [", cols, "] (x's last dim)");
  if (y.size() == 0) return;
  const int64_t rows = y.size() / cols;
  const Device device = kernelDevice(args, "bias_activation");
  if (device.isCuda()) return biasActivationOnDevice(device.index, op, x, bias, y);
  parallelFor(rows, std::max<int64_t>(1, kGrain / cols), [&](int64_t r0, int64_t r1) {
    biasActivationRows(op, x.data<float>(), bias.data<float>(), y.data<float>(), cols, r0, r1, 0, cols);
  });
}

// in[1] is the forward op's output y, or its input x for log and square.
void unaryGradKernel(KernelArgs& args) {
  checkArity(args, 2, 1, "unary_grad");
  checkFloat32(args, "unary_grad");
  const int32_t op = opAttr(args, "unary_grad", kUnaryOpCount);
  HB_CHECK(unaryHasGrad(op), args.name, ": unary_grad: op '", kUnaryOpNames[op],
           "' has no gradient kernel (relu, sigmoid, tanh, exp, log, square, sqrt have)");
  const Tensor& dy = args.in[0];
  const Tensor& v = args.in[1];
  const Tensor& dx = args.out[0];
  HB_CHECK(dy.size() == v.size() && dy.size() == dx.size(), args.name, ": unary_grad: dy ", dy.shapeString(), ", ",
           unaryGradReadsOutput(op) ? "y " : "x ", v.shapeString(), " and dx ", dx.shapeString(), " differ in size");
  runUnaryGrad(kernelDevice(args, "unary_grad"), op, dy.data<float>(), v.data<float>(), dx.data<float>(), dx.size());
}

}  // namespace

void checkBiasActivationOp(int32_t op, const std::string& who, const char* kernel) {
  HB_CHECK(UnaryOp(op) != UnaryOp::Scale && UnaryOp(op) != UnaryOp::AddConstant, who, ": ", kernel, ": op '",
           kUnaryOpNames[op], "' takes a constant; use unary");
}

void biasActivationRows(int32_t op, const float* x, const float* bias, float* y, int64_t ld, int64_t r0, int64_t r1,
                        int64_t c0, int64_t c1) {
  withUnaryOp(op, [&](auto tag) {
    constexpr UnaryOp Op = decltype(tag)::value;
    for (int64_t r = r0; r < r1; ++r) {
      const float* rx = x + r * ld;
      float* ry = y + r * ld;
      for (int64_t c = c0; c < c1; ++c) ry[c] = unaryOf<Op>(binaryOf<BinaryOp::Add>(rx[c], bias[c]), 0.0f);
    }
  });
}

void biasActivationOnDevice(int device, int32_t op, const Tensor& x, const Tensor& bias, const Tensor& y) {
  cuda::binary(device, int32_t(BinaryOp::Add), x.data<float>(), bias.data<float>(), y.data<float>(), y.size(),
               deviceIndex(BinaryLoop::RowB, x, bias, y.shape));
  cuda::unary(device, op, 0.0f, y.data<float>(), y.data<float>(), y.size());
}

void runUnaryGrad(Device device, int32_t op, const float* dy, const float* v, float* dx, int64_t n) {
  if (device.isCuda()) return cuda::unaryGrad(device.index, op, dy, v, dx, n);
  withUnaryOp(op, [&](auto tag) {
    constexpr UnaryOp Op = decltype(tag)::value;
    parallelFor(n, kGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) dx[i] = unaryGradOf<Op>(dy[i], v[i]);
    });
  });
}

HB_REGISTER_KERNEL(KernelDef("binary", binaryKernel, KernelPlacement::Device)
                       .input("a", f32()).input("b", f32()).output("out", f32())
                       .enumeration("op", binaryOpNames()));
HB_REGISTER_KERNEL(KernelDef("unary", unaryKernel, KernelPlacement::Device)
                       .input("x", f32()).output("y", f32())
                       .enumeration("op", unaryOpNames()).number("c", std::nan("")));
HB_REGISTER_KERNEL(KernelDef("bias_activation", biasActivationKernel, KernelPlacement::Device)
                       .input("x", f32()).input("bias", f32()).output("y", f32())
                       .enumeration("op", unaryOpNames()));
// in[1] is the forward op's output y, or its input x for log and square.
HB_REGISTER_KERNEL(KernelDef("unary_grad", unaryGradKernel, KernelPlacement::Device)
                       .input("dy", f32()).input("yOrX", f32()).output("dx", f32())
                       .enumeration("op", unaryOpNames()));

}  // namespace hb
