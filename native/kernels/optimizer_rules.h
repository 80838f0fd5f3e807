// Update rules of TensorFlow 1.15's optimizers (core/kernels/training_ops.cc), shared by
// the CPU and CUDA kernels. Each rule updates one row (`width` floats) of a variable and
// its slots from that row's gradient, with every float operation rounded once, in the
// order TF's kernels write them. Rows of a sparse update are visited once each, their
// duplicate gradients already summed (in the order the ids came).
#pragma once

#include <cmath>
#include <cstdint>

#include "native/kernels/hb_host_device.h"

namespace hb {

enum class OptimizerKind : int32_t {
  GradientDescent = 0,
  Momentum = 1,
  Adagrad = 2,
  Adam = 3,
  Ftrl = 4,
  RowwiseAdagrad = 5,
};
constexpr int32_t kOptimizerKindCount = 6;
// The names JavaScript gives these rules (an optimizer's hyperparameters' `rule`), in
// code order.
constexpr const char* kOptimizerRuleNames[kOptimizerKindCount] = {"gradientDescent", "momentum", "adagrad",
                                                                  "adam", "ftrl", "rowwiseAdagrad"};

struct OptimizerHyper {
  OptimizerKind kind = OptimizerKind::GradientDescent;
  float learningRate = 0.0f;
  // Momentum
  float momentum = 0.0f;
  bool nesterov = false;
  // Adam: alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t), computed once on the host.
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;  // Adam, RowwiseAdagrad
  float alpha = 0.0f;
  bool lazy = false;
  // Ftrl
  float learningRatePower = -0.5f;
  float l1 = 0.0f;
  float l2 = 0.0f;
  float l2Shrinkage = 0.0f;
  // Which of TF's kernels the rounding follows: the dense Apply* ops, the sparse ones
  // over rows of width > 1 (Eigen chips), or the sparse ones over width-1 rows (scalar
  // loops). Set by the caller for each update.
  bool sparse = false;
  bool scalarRows = false;
  // A GPU step's update is made only while this device flag (when given) holds 0: its
  // gradient's check (flagNonFinite) sets it where a value is not finite, so that no NaN
  // is written into the variable without the host waiting for the check. Null on the CPU.
  const int32_t* skip = nullptr;
};

// Whether the update is not to be made (OptimizerHyper::skip); read by every GPU update
// kernel before it writes.
HB_HOST_DEVICE bool updateSkipped(const OptimizerHyper& h) { return h.skip != nullptr && *h.skip != 0; }

HB_HOST_DEVICE float subRn(float a, float b) { return addRn(a, -b); }

// FTRL's accum^(-lr_power): TF takes sqrt for the default power -0.5.
HB_HOST_DEVICE float ftrlPower(float accum, float learningRatePower) {
  return learningRatePower == -0.5f ? sqrtf(accum) : powf(accum, -learningRatePower);
}

// One element of the element-wise rule K (a compile-time constant, so loops over a
// row vectorise). s0, s1: the slots (see slotSpecs in lib/train); Adam here is TF's
// dense ApplyAdam (sparse Adam: adamDecay / adamAccumulate / adamMove below).
template <OptimizerKind K>
HB_HOST_DEVICE void applyElementOf(const OptimizerHyper& h, float* var, float* s0, float* s1, float g) {
  const float lr = h.learningRate;
  switch (K) {
    case OptimizerKind::GradientDescent:
      *var = subRn(*var, mulRn(lr, g));
      return;
    case OptimizerKind::Momentum: {
      // accum = accum * momentum + grad; var -= nesterov ? grad*lr + accum*momentum*lr : accum*lr
      const float accum = addRn(mulRn(*s0, h.momentum), g);
      *s0 = accum;
      if (!h.nesterov) {
        *var = subRn(*var, mulRn(accum, lr));
      } else if (h.sparse) {
        // SparseApplyMomentum: var -= lr * grad + (lr * momentum) * accum
        *var = subRn(*var, addRn(mulRn(lr, g), mulRn(mulRn(lr, h.momentum), accum)));
      } else {
        // ApplyMomentum: var -= grad * lr + accum * momentum * lr
        *var = subRn(*var, addRn(mulRn(g, lr), mulRn(mulRn(accum, h.momentum), lr)));
      }
      return;
    }
    case OptimizerKind::Adagrad: {
      // accum += grad^2; var -= grad * lr * rsqrt(accum) (ApplyAdagrad, and
      // SparseApplyAdagrad over rows), or lr * grad / sqrt(accum) (SparseApplyAdagrad's
      // scalar loop for width-1 rows).
      const float accum = addRn(*s0, mulRn(g, g));
      *s0 = accum;
      *var = h.scalarRows ? subRn(*var, divRn(mulRn(lr, g), sqrtf(accum)))
                          : subRn(*var, mulRn(mulRn(g, lr), divRn(1.0f, sqrtf(accum))));
      return;
    }
    case OptimizerKind::Adam: {
      // m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2); var -= m * alpha / (sqrt(v) + eps)
      const float m = addRn(*s0, mulRn(subRn(g, *s0), subRn(1.0f, h.beta1)));
      const float v = addRn(*s1, mulRn(subRn(mulRn(g, g), *s1), subRn(1.0f, h.beta2)));
      *s0 = m;
      *s1 = v;
      *var = subRn(*var, divRn(mulRn(m, h.alpha), addRn(sqrtf(v), h.epsilon)));
      return;
    }
    case OptimizerKind::Ftrl: {
      // TF's ApplyFtrlV2 (V1 when l2Shrinkage == 0): the accumulator grows with grad^2,
      // the linear term with the shrunk gradient.
      const float accum = *s0;
      const float shrunk = h.l2Shrinkage > 0.0f ? addRn(g, mulRn(mulRn(2.0f, h.l2Shrinkage), *var)) : g;
      const float newAccum = addRn(accum, mulRn(g, g));
      // The scalar loop of the sparse kernel always uses pow(), and sums (l + g) first.
      const float newPower = h.scalarRows ? powf(newAccum, -h.learningRatePower) : ftrlPower(newAccum, h.learningRatePower);
      const float oldPower = h.scalarRows ? powf(accum, -h.learningRatePower) : ftrlPower(accum, h.learningRatePower);
      const float sigma = divRn(subRn(newPower, oldPower), lr);
      const float linear = h.scalarRows ? subRn(addRn(*s1, shrunk), mulRn(sigma, *var))
                                        : addRn(*s1, subRn(shrunk, mulRn(sigma, *var)));
      const float quadratic = addRn(divRn(newPower, lr), mulRn(2.0f, h.l2));
      *s1 = linear;
      *s0 = newAccum;
      if (h.sparse && !h.scalarRows) {
        // SparseApplyFtrl over rows: (clamp(linear, -l1, l1) - linear) / quadratic, which
        // keeps a NaN a NaN.
        const float clamped = linear < -h.l1 ? -h.l1 : (linear > h.l1 ? h.l1 : linear);
        *var = divRn(subRn(clamped, linear), quadratic);
      } else {
        const float sign = linear > 0.0f ? 1.0f : (linear < 0.0f ? -1.0f : 0.0f);
        *var = fabsf(linear) > h.l1 ? divRn(subRn(mulRn(h.l1, sign), linear), quadratic) : 0.0f;
      }
      return;
    }
    default:
      return;
  }
}

HB_HOST_DEVICE void applyElement(const OptimizerHyper& h, float* var, float* s0, float* s1, float g) {
  switch (h.kind) {
    case OptimizerKind::GradientDescent: return applyElementOf<OptimizerKind::GradientDescent>(h, var, s0, s1, g);
    case OptimizerKind::Momentum: return applyElementOf<OptimizerKind::Momentum>(h, var, s0, s1, g);
    case OptimizerKind::Adagrad: return applyElementOf<OptimizerKind::Adagrad>(h, var, s0, s1, g);
    case OptimizerKind::Adam: return applyElementOf<OptimizerKind::Adam>(h, var, s0, s1, g);
    case OptimizerKind::Ftrl: return applyElementOf<OptimizerKind::Ftrl>(h, var, s0, s1, g);
    default: return;
  }
}

// RowwiseAdagrad (FBGEMM / TorchRec): one accumulator per row grows by the mean of the
// row's squared gradient; var -= lr * g / (sqrt(accum) + epsilon).
HB_HOST_DEVICE void applyRowwiseAdagradRow(const OptimizerHyper& h, float* var, float* rowAccum, const float* g,
                                           int64_t width) {
  float squares = 0.0f;
  for (int64_t k = 0; k < width; ++k) squares = addRn(squares, mulRn(g[k], g[k]));
  const float accum = addRn(*rowAccum, divRn(squares, float(width)));
  *rowAccum = accum;
  const float scale = divRn(h.learningRate, addRn(sqrtf(accum), h.epsilon));
  for (int64_t k = 0; k < width; ++k) var[k] = subRn(var[k], mulRn(scale, g[k]));
}

// Sparse Adam, TF 1.15's AdamOptimizer._apply_sparse (lazy == false): the moments of
// every row decay (phase 1), the rows seen add their gradient (phase 2), and every row
// moves (phase 3). LazyAdam (lazy == true) touches only the rows seen, in one phase.
HB_HOST_DEVICE void adamDecay(const OptimizerHyper& h, float* m, float* v) {
  *m = mulRn(*m, h.beta1);
  *v = mulRn(*v, h.beta2);
}

HB_HOST_DEVICE void adamAccumulate(const OptimizerHyper& h, float* m, float* v, float g) {
  *m = addRn(*m, mulRn(g, subRn(1.0f, h.beta1)));
  *v = addRn(*v, mulRn(mulRn(g, g), subRn(1.0f, h.beta2)));
}

HB_HOST_DEVICE void adamMove(const OptimizerHyper& h, float* var, float m, float v) {
  *var = subRn(*var, divRn(mulRn(h.alpha, m), addRn(sqrtf(v), h.epsilon)));
}

HB_HOST_DEVICE void lazyAdamElement(const OptimizerHyper& h, float* var, float* m, float* v, float g) {
  // m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g^2 (LazyAdamOptimizer)
  *m = addRn(mulRn(h.beta1, *m), mulRn(subRn(1.0f, h.beta1), g));
  *v = addRn(mulRn(h.beta2, *v), mulRn(subRn(1.0f, h.beta2), mulRn(g, g)));
  adamMove(h, var, *m, *v);
}

}  // namespace hb
