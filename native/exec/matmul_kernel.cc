// matmul: out[0] = op(in[0]) * op(in[1]), rank-2 float32, where attrs transposeA /
// transposeB (default false) transpose the stored A / B. matmul_accumulate adds the
// product into out[0] instead (C += op(A) * op(B)): the backward pass sums gradients
// from several consumers into one buffer that way. matmul_bias_activation is a dense
// layer's forward, act(op(A) * op(B) + bias) (lib/graph/fusions/dense_activation.ts).
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/core/status.h"
#include "native/exec/bias_activation.h"
#include "native/exec/kernel_def.h"
#include "native/exec/matmul.h"
#include "native/kernels/dense_math.h"
#include "native/kernels/sgemm.h"

namespace hb {

namespace {

bool transposeAttr(const KernelArgs& args, size_t index, const char* kernel, const char* what) {
  const double value = attrOr(args, index, 0.0);
  HB_CHECK(value == 0.0 || value == 1.0, args.name, ": kernel ", kernel, " attribute ", what, " must be 0 or 1, got ",
           value);
  return value == 1.0;
}

}  // namespace

void matmulInto(const KernelArgs& args, const char* kernel, float beta, const SgemmEpilogue* epilogue) {
  checkFloat32(args, kernel);
  const Tensor& a = args.in[0];
  const Tensor& b = args.in[1];
  const Tensor& c = args.out[0];
  const bool transA = transposeAttr(args, 0, kernel, "transA");
  const bool transB = transposeAttr(args, 1, kernel, "transB");
  HB_CHECK(a.shape.size() == 2 && b.shape.size() == 2, args.name, ": kernel ", kernel,
           " multiplies rank-2 tensors, got A ", a.shapeString(), " and B ", b.shapeString());
  const int64_t M = transA ? a.shape[1] : a.shape[0];
  const int64_t K = transA ? a.shape[0] : a.shape[1];
  const int64_t kB = transB ? b.shape[1] : b.shape[0];
  const int64_t N = transB ? b.shape[0] : b.shape[1];
  HB_CHECK(K == kB, args.name, ": kernel ", kernel, " inner dimensions differ: A ", a.shapeString(),
           transA ? " (transposed)" : "", " and B ", b.shapeString(), transB ? " (transposed)" : "", " give ", K,
           " and ", kB);
  HB_CHECK(c.shape.size() == 2 && c.shape[0] == M && c.shape[1] == N, args.name, ": kernel ", kernel, " output of A ",
           a.shapeString(), transA ? " (transposed)" : "", " times B ", b.shapeString(), transB ? " (transposed)" : "",
           " must be [", M, ", ", N, "], got ", c.shapeString());
  // Leading dimensions of dense row-major storage; an empty dimension still makes a
  // valid (unused) stride.
  const Device device = kernelDevice(args, kernel);
  if (device.isCuda()) {
    return cuda::sgemm(device.index, transA, transB, M, N, K, 1.0f, a.data<float>(), a.shape[1], b.data<float>(),
                       b.shape[1], beta, c.data<float>(), N);
  }
  sgemmCpu(transA, transB, M, N, K, 1.0f, a.data<float>(), a.shape[1], b.data<float>(), b.shape[1], beta,
           c.data<float>(), N, epilogue);
}

int32_t activationAttr(const KernelArgs& args, size_t index, const char* kernel) {
  const double op = attrOr(args, index, -1.0);
  HB_CHECK(op == std::floor(op) && op >= 0 && op < kUnaryOpCount, args.name, ": kernel ", kernel, " needs attrs[", index,
           "] (the activation) in [0, ", kUnaryOpCount, "), got ", op);
  return int32_t(op);
}

namespace {

void matmul(KernelArgs& args) {
  checkArity(args, 2, 1, "matmul");
  matmulInto(args, "matmul", 0.0f);
}

void matmulAccumulate(KernelArgs& args) {
  checkArity(args, 2, 1, "matmul_accumulate");
  matmulInto(args, "matmul_accumulate", 1.0f);
}

// y = act(op(A) * op(B) + bias), bias [N]: the same bits as matmul, then bias_activation.
// On the CPU the bias and activation go over each piece of the product as the GEMM
// finishes it, while it is in cache, where bias_activation read the whole product back
// from memory; on a GPU, the GEMM and then bias_activation's kernels in place.
void matmulBiasActivation(KernelArgs& args) {
  const char* kernel = "matmul_bias_activation";
  checkArity(args, 3, 1, kernel);
  const int32_t op = activationAttr(args, 2, kernel);
  checkBiasActivationOp(op, args.name, kernel);
  const Tensor& bias = args.in[2];
  const Tensor& y = args.out[0];
  // (matmulInto checks the output's shape against the product's; the epilogue reads its
  // columns, so a rank that is not 2 stops here.)
  HB_CHECK(y.shape.size() == 2, args.name, ": kernel ", kernel, " writes a [M, N] output, got ", y.shapeString());
  HB_CHECK(bias.shape == std::vector<int64_t>{y.shape[1]}, args.name, ": kernel ", kernel, ": the bias has shape ",
           bias.shapeString(), ", expected [", y.shape[1], "] (the output's columns)");
  const Device device = kernelDevice(args, kernel);
  if (device.isCuda()) {
    matmulInto(args, kernel, 0.0f);
    if (y.size() > 0) biasActivationOnDevice(device.index, op, y, bias, y);
    return;
  }
  const int64_t ld = y.shape[1];
  const float* b = bias.data<float>();
  float* out = y.data<float>();
  const SgemmEpilogue epilogue = [=](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    biasActivationRows(op, out, b, out, ld, m0, m1, n0, n1);
  };
  matmulInto(args, kernel, 0.0f, &epilogue);
}

std::vector<std::string> activationNames() { return {std::begin(kUnaryOpNames), std::end(kUnaryOpNames)}; }

}  // namespace

HB_REGISTER_KERNEL(KernelDef("matmul", matmul, KernelPlacement::Device)
                       .input("a", f32()).input("b", f32()).output("out", f32())
                       .boolean("transposeA", false).boolean("transposeB", false));
// out += op(a) * op(b)
HB_REGISTER_KERNEL(KernelDef("matmul_accumulate", matmulAccumulate, KernelPlacement::Device)
                       .input("a", f32()).input("b", f32()).inPlaceOutput("out", f32())
                       .boolean("transposeA", false).boolean("transposeB", false));
// out = act(op(a) * op(b) + bias)
HB_REGISTER_KERNEL(KernelDef("matmul_bias_activation", matmulBiasActivation, KernelPlacement::Device)
                       .input("a", f32()).input("b", f32()).input("bias", f32()).output("out", f32())
                       .boolean("transposeA", false).boolean("transposeB", false)
                       .enumeration("op", activationNames()));

}  // namespace hb
