// Per-element math of the dense graph kernels (native/exec/*_kernels.cc), shared with
// the CUDA kernels that mirror them, so the CPU tests check what the GPU runs. Every
// mul-then-add is spelled with mulRn/addRn: nvcc would otherwise fuse it into an FMA
// and the two backends would round differently.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "native/core/thread_pool.h"
#include "native/kernels/hb_host_device.h"

namespace hb {

// attrs[0] of the "binary" kernel.
enum class BinaryOp : int32_t {
  Add = 0,
  Sub = 1,
  Mul = 2,
  Div = 3,
  SquaredDifference = 4,
  Equal = 5,
  Greater = 6,
  Maximum = 7,
};
constexpr int32_t kBinaryOpCount = 8;
// The names plans give these ops (the "op" attr of the binary kernel), in code order.
constexpr const char* kBinaryOpNames[kBinaryOpCount] = {"add", "sub", "mul", "div", "squaredDifference", "equal", "greater", "maximum"};

// attrs[0] of the "unary" and "unary_grad" kernels.
enum class UnaryOp : int32_t {
  Relu = 0,
  Sigmoid = 1,
  Tanh = 2,
  Neg = 3,
  Scale = 4,
  Exp = 5,
  Log = 6,
  Square = 7,
  Sqrt = 8,
  AddConstant = 9,
};
constexpr int32_t kUnaryOpCount = 10;
// The names plans give these ops (the "op" attr of unary / unary_grad), in code order.
constexpr const char* kUnaryOpNames[kUnaryOpCount] = {"relu", "sigmoid", "tanh", "neg", "scale", "exp", "log", "square", "sqrt", "addConstant"};

// Calls body(std::integral_constant<BinaryOp, op>) so the loops (CPU) and kernels (CUDA)
// see a constant op; op is checked by the caller.
template <typename Body>
void withBinaryOp(int32_t op, Body&& body) {
  using B = BinaryOp;
  switch (B(op)) {
    case B::Add: return body(std::integral_constant<B, B::Add>());
    case B::Sub: return body(std::integral_constant<B, B::Sub>());
    case B::Mul: return body(std::integral_constant<B, B::Mul>());
    case B::Div: return body(std::integral_constant<B, B::Div>());
    case B::SquaredDifference: return body(std::integral_constant<B, B::SquaredDifference>());
    case B::Equal: return body(std::integral_constant<B, B::Equal>());
    case B::Greater: return body(std::integral_constant<B, B::Greater>());
    case B::Maximum: return body(std::integral_constant<B, B::Maximum>());
  }
}

template <typename Body>
void withUnaryOp(int32_t op, Body&& body) {
  using U = UnaryOp;
  switch (U(op)) {
    case U::Relu: return body(std::integral_constant<U, U::Relu>());
    case U::Sigmoid: return body(std::integral_constant<U, U::Sigmoid>());
    case U::Tanh: return body(std::integral_constant<U, U::Tanh>());
    case U::Neg: return body(std::integral_constant<U, U::Neg>());
    case U::Scale: return body(std::integral_constant<U, U::Scale>());
    case U::Exp: return body(std::integral_constant<U, U::Exp>());
    case U::Log: return body(std::integral_constant<U, U::Log>());
    case U::Square: return body(std::integral_constant<U, U::Square>());
    case U::Sqrt: return body(std::integral_constant<U, U::Sqrt>());
    case U::AddConstant: return body(std::integral_constant<U, U::AddConstant>());
  }
}

// A compile-time op, so the loops over a tensor vectorise and the switch is decided
// once per kernel call rather than per element.
template <BinaryOp Op>
HB_HOST_DEVICE float binaryOf(float a, float b) {
  switch (Op) {
    case BinaryOp::Add: return addRn(a, b);
    case BinaryOp::Sub: return addRn(a, -b);
    case BinaryOp::Mul: return mulRn(a, b);
    case BinaryOp::Div: return divRn(a, b);
    case BinaryOp::SquaredDifference: {
      const float d = addRn(a, -b);
      return mulRn(d, d);
    }
    case BinaryOp::Equal: return a == b ? 1.0f : 0.0f;
    case BinaryOp::Greater: return a > b ? 1.0f : 0.0f;
    // Eigen's (and std::max's) choice: a NaN in `a` comes through, one in `b` does not.
    case BinaryOp::Maximum: return a < b ? b : a;
  }
  return 0.0f;
}

// The logistic function without overflow: exp() only ever sees a non-positive argument.
HB_HOST_DEVICE float stableSigmoid(float x) {
  if (x >= 0.0f) return divRn(1.0f, addRn(1.0f, expf(-x)));
  const float e = expf(x);
  return divRn(e, addRn(1.0f, e));
}

// `c` is the constant of Scale and AddConstant (attrs[1]).
template <UnaryOp Op>
HB_HOST_DEVICE float unaryOf(float x, float c) {
  switch (Op) {
    // max(x, 0) as Eigen writes it, so a NaN stays a NaN.
    case UnaryOp::Relu: return x < 0.0f ? 0.0f : x;
    case UnaryOp::Sigmoid: return stableSigmoid(x);
    case UnaryOp::Tanh: return tanhf(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Scale: return mulRn(x, c);
    case UnaryOp::Exp: return expf(x);
    case UnaryOp::Log: return logf(x);
    case UnaryOp::Square: return mulRn(x, x);
    case UnaryOp::Sqrt: return sqrtf(x);
    case UnaryOp::AddConstant: return addRn(x, c);
  }
  return 0.0f;
}

// Which ops have a "unary_grad", and whether that gradient reads the op's output y
// (true) or its input x (false).
HB_HOST_DEVICE bool unaryHasGrad(int32_t op) {
  return op == 0 || op == 1 || op == 2 || op == 5 || op == 6 || op == 7 || op == 8;
}
HB_HOST_DEVICE bool unaryGradReadsOutput(int32_t op) { return op != 6 && op != 7; }

// d input from dy and `v`, the op's output or input as unaryGradReadsOutput says; the
// rounding order is that of TF's *Grad kernels (SigmoidGrad: dy * y * (1 - y), ...).
template <UnaryOp Op>
HB_HOST_DEVICE float unaryGradOf(float dy, float v) {
  switch (Op) {
    case UnaryOp::Relu: return v > 0.0f ? dy : 0.0f;
    case UnaryOp::Sigmoid: return mulRn(mulRn(dy, v), addRn(1.0f, -v));
    case UnaryOp::Tanh: return mulRn(dy, addRn(1.0f, -mulRn(v, v)));
    case UnaryOp::Exp: return mulRn(dy, v);
    case UnaryOp::Log: return divRn(dy, v);
    case UnaryOp::Square: return mulRn(dy, mulRn(2.0f, v));
    case UnaryOp::Sqrt: return divRn(mulRn(0.5f, dy), v);
    default: return 0.0f;
  }
}

// tf.nn.sigmoid_cross_entropy_with_logits for label z and logit x:
// max(x, 0) - x * z + log1p(exp(-|x|)), in TF's order.
HB_HOST_DEVICE float sigmoidCrossEntropy(float z, float x) {
  const float relu = x >= 0.0f ? x : 0.0f;
  const float negAbs = x >= 0.0f ? -x : x;
  return addRn(addRn(relu, -mulRn(x, z)), log1pf(expf(negAbs)));
}

// d loss / d x = dy * (sigmoid(x) - z).
HB_HOST_DEVICE float sigmoidCrossEntropyGrad(float dy, float z, float x) {
  return mulRn(dy, addRn(stableSigmoid(x), -z));
}

// DLRM's pairwise interaction without self pairs: pair (i, j), j < i, is output column
// i * (i - 1) / 2 + j, so columns run i = 1..F-1, j = 0..i-1.
HB_HOST_DEVICE int64_t interactionPairCount(int64_t features) { return features * (features - 1) / 2; }
HB_HOST_DEVICE int64_t interactionPairIndex(int64_t i, int64_t j) { return i * (i - 1) / 2 + j; }

// a . b summed in index order.
HB_HOST_DEVICE float dotInOrder(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t k = 0; k < n; ++k) s = addRn(s, mulRn(a[k], b[k]));
  return s;
}

// dT[i, k] of one example (t: F rows of width D; dz: its P pair gradients): the pairs
// holding i contribute dz * t[j, k], j ascending, summed from 0 (the CPU's
// dot_interaction_cpu_impl.h adds in the same order, a row at a time). A GPU thread
// computes one element; Index is int32_t where an example's F x D fits in it.
template <typename Index>
HB_HOST_DEVICE float dotInteractionGradElement(const float* dz, const float* t, Index features, Index width, Index i,
                                               Index k) {
  float sum = 0.0f;
  for (Index j = 0; j < features; ++j) {
    if (j == i) continue;
    const float g = dz[j < i ? i * (i - 1) / 2 + j : j * (j - 1) / 2 + i];
    sum = addRn(sum, mulRn(g, t[j * width + k]));
  }
  return sum;
}

// Sums of many terms (reductions, losses, metrics) are blocked: the terms, in index
// order, are cut into blocks of kSumBlock; each block is summed in order from 0, and the
// block sums are added in order. The result depends on nothing but the values, whatever
// the thread count, and a GPU reduction that sums each block in order reproduces it.
// 256 terms a block: a GPU sums a [4096, n] bias gradient with 16 threads per output
// instead of one running 4096 dependent adds (4 ms of a DLRM step on an H100 at 4096).
constexpr int64_t kSumBlock = 256;

template <typename Term>
HB_HOST_DEVICE float sumInOrder(Term term, int64_t first, int64_t last) {
  float s = 0.0f;
  for (int64_t i = first; i < last; ++i) s = addRn(s, term(i));
  return s;
}

// The blocked sum of term(0) .. term(n - 1) on one thread.
template <typename Term>
HB_HOST_DEVICE float blockedSumSerial(int64_t n, Term term) {
  float total = 0.0f;
  for (int64_t first = 0; first < n; first += kSumBlock) {
    total = addRn(total, sumInOrder(term, first, n - first < kSumBlock ? n : first + kSumBlock));
  }
  return total;
}

// The same sum, its blocks summed on the host thread pool. Host only, and not from
// inside another parallelFor body (the pool does not nest).
template <typename Term>
inline float blockedSum(int64_t n, Term term) {
  if (n <= kSumBlock) return blockedSumSerial(n, term);
  const int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  std::vector<float> partial(size_t(blocks), 0.0f);
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      partial[size_t(b)] = sumInOrder(term, b * kSumBlock, b + 1 == blocks ? n : (b + 1) * kSumBlock);
    }
  });
  float total = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) total = addRn(total, partial[size_t(b)]);
  return total;
}

}  // namespace hb
