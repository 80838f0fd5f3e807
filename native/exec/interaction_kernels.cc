// DLRM's dot interaction without self pairs ("dot_interaction") and its gradient.
// An example has F feature vectors of width D; output column interactionPairIndex(i, j)
// is the dot product of vectors i and j, j < i.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/dense_kernels.h"
#include "native/core/buffer.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/exec/kernel_def.h"
#include "native/kernels/dense_math.h"
#include "native/kernels/dot_interaction_cpu.h"

namespace hb {

namespace {

// F (attrs[0]) after checking it.
int64_t featuresAttr(const KernelArgs& args, const char* kernel) {
  HB_CHECK(!args.attrs.empty(), args.name, ": kernel ", kernel, " needs attrs[0] (the number of features F)");
  const double f = args.attrs[0];
  HB_CHECK(f == std::floor(f) && f >= 1 && f <= 65536, args.name, ": ", kernel,
           ": attrs[0] (the number of features F) must be an integer in [1, 65536], got ", f);
  return int64_t(f);
}

// Where the F vectors of each example are (see InteractionRows), and whether they came as
// one stacked tensor.
struct FeatureInputs {
  std::vector<const float*> feature;
  int64_t rowStride = 0;
  bool stacked = false;
};

// The feature vectors of the kernel's inputs from `first` on: either one [B, F * D] tensor
// (each example's F vectors side by side) or F tensors of [B, D] (the vectors as the
// lookups and the bottom MLP made them: no concatenation). Sets *width to D and *batch to B.
FeatureInputs featureInputs(const KernelArgs& args, const char* kernel, size_t first, int64_t features, int64_t* width,
                            int64_t* batch) {
  FeatureInputs rows;
  const size_t given = args.in.size() - first;
  if (given == 1) {
    const Tensor& t = args.in[first];
    HB_CHECK(t.shape.size() == 2 && t.shape[1] % features == 0, args.name, ": ", kernel, ": the input ",
             t.shapeString(), " should be [batch, F * D] with F = ", features);
    *width = t.shape[1] / features;
    *batch = t.shape[0];
    rows.stacked = true;
    rows.rowStride = t.shape[1];
    for (int64_t f = 0; f < features; ++f) rows.feature.push_back(t.data<float>() + f * *width);
    return rows;
  }
  HB_CHECK(int64_t(given) == features, args.name, ": ", kernel, ": ", given,
           " feature inputs, but F (attrs[0]) is ", features, " (give one [batch, F * D] input or F of [batch, D])");
  const Tensor& x0 = args.in[first];
  HB_CHECK(x0.shape.size() == 2, args.name, ": ", kernel, ": feature input 0 should be [batch, D], got ", x0.shapeString());
  for (size_t f = 0; f < given; ++f) {
    const Tensor& x = args.in[first + f];
    HB_CHECK(x.shape == x0.shape, args.name, ": ", kernel, ": feature input ", f, " has shape ", x.shapeString(),
             ", but feature input 0 has ", x0.shapeString(), " (every feature vector has the same width)");
    rows.feature.push_back(x.data<float>());
  }
  *width = x0.shape[1];
  *batch = x0.shape[0];
  rows.rowStride = *width;
  return rows;
}

// A device copy of the F vectors side by side ([B, F * D]), for the CUDA kernels, which
// read one such tensor.
std::shared_ptr<Buffer> stackOnDevice(Device device, const FeatureInputs& rows, int64_t batch, int64_t width) {
  const int64_t features = int64_t(rows.feature.size());
  auto stacked = Buffer::allocate(device, std::max<size_t>(1, size_t(batch * features * width) * sizeof(float)));
  float* out = static_cast<float*>(stacked->data());
  for (int64_t f = 0; f < features; ++f) {
    cuda::copyRows(device.index, rows.feature[size_t(f)], rows.rowStride, out + f * width, features * width, batch, width);
  }
  return stacked;
}

// attrs[1], "prefix": the output's rows start with feature vector 0 (DLRM's top MLP reads
// the bottom MLP's output and the pairs side by side: no concatenation after the kernel).
bool prefixAttr(const KernelArgs& args) { return args.attrs.size() > 1 && args.attrs[1] != 0; }

// Feature vector 0 of every example into the first `width` columns of out's rows.
void copyFeature0(Device device, const FeatureInputs& rows, float* out, int64_t outStride, int64_t batch, int64_t width) {
  if (device.isCuda()) return cuda::copyRows(device.index, rows.feature[0], rows.rowStride, out, outStride, batch, width);
  const float* from = rows.feature[0];
  parallelFor(batch, std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, width)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) std::memcpy(out + b * outStride, from + b * rows.rowStride, size_t(width) * sizeof(float));
  });
}

void dotInteractionKernel(KernelArgs& args) {
  HB_CHECK(!args.in.empty() && args.out.size() == 1, args.name,
           ": kernel dot_interaction takes 1 or more inputs and 1 output, got ", args.in.size(), " and ", args.out.size());
  checkFloat32(args, "dot_interaction");
  const int64_t features = featuresAttr(args, "dot_interaction");
  const bool prefix = prefixAttr(args);
  int64_t width = 0;
  int64_t batch = 0;
  const FeatureInputs rows = featureInputs(args, "dot_interaction", 0, features, &width, &batch);
  const Tensor& z = args.out[0];
  const int64_t pairs = interactionPairCount(features);
  const int64_t columns = (prefix ? width : 0) + pairs;
  HB_CHECK(z.shape.size() == 2 && z.shape[0] == batch && z.shape[1] == columns, args.name,
           ": dot_interaction: the output has shape ", z.shapeString(), ", expected [", batch, ", ", columns, "]",
           prefix ? " (feature vector 0, then the pairs)" : "");
  const Device device = kernelDevice(args, "dot_interaction");
  float* pairValues = z.data<float>() + (prefix ? width : 0);
  if (prefix && width > 0) copyFeature0(device, rows, z.data<float>(), columns, batch, width);
  if (device.isCuda()) {
    std::shared_ptr<Buffer> stacked = rows.stacked ? nullptr : stackOnDevice(device, rows, batch, width);
    const float* t = rows.stacked ? args.in[0].data<float>() : static_cast<const float*>(stacked->data());
    if (!prefix) return cuda::dotInteraction(device.index, t, pairValues, batch, features, width);
    // The CUDA kernel writes rows of `pairs` values: into a buffer, then after the prefix.
    auto own = Buffer::allocate(device, std::max<size_t>(1, size_t(batch * pairs) * sizeof(float)));
    cuda::dotInteraction(device.index, t, static_cast<float*>(own->data()), batch, features, width);
    return cuda::copyRows(device.index, static_cast<const float*>(own->data()), pairs, pairValues, columns, batch, pairs);
  }
  dotInteractionCpu(InteractionRows{rows.feature.data(), rows.rowStride}, InteractionPairs{pairValues, columns}, batch,
                    features, width);
}

// dt0[b, :] = dy[b, :width] + dt0[b, :]: vector 0 is also the output's first columns, so
// its gradient has their part too, added first as autodiff added the two (the concat's
// slice, then the pairs' part; the order shows only in a NaN's payload).
void addPrefixGradient(Device device, const float* dy, int64_t dyStride, float* dt0, int64_t dtStride, int64_t batch,
                       int64_t width) {
  if (device.isCuda()) {
    cuda::BroadcastIndex index;
    index.rank = 2;
    index.shape[0] = batch;
    index.shape[1] = width;
    index.strideA[0] = dyStride;
    index.strideA[1] = 1;
    index.strideB[0] = dtStride;
    index.strideB[1] = 1;
    // The kernel writes its output densely: in place when dt0's rows are (F inputs), else
    // into a buffer copied into the stacked gradient's rows.
    if (dtStride == width) return cuda::binary(device.index, int32_t(BinaryOp::Add), dy, dt0, dt0, batch * width, index);
    auto sum = Buffer::allocate(device, std::max<size_t>(1, size_t(batch * width) * sizeof(float)));
    cuda::binary(device.index, int32_t(BinaryOp::Add), dy, dt0, static_cast<float*>(sum->data()), batch * width, index);
    return cuda::copyRows(device.index, static_cast<const float*>(sum->data()), width, dt0, dtStride, batch, width);
  }
  parallelFor(batch, std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, width)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* to = dt0 + b * dtStride;
      const float* from = dy + b * dyStride;
      for (int64_t k = 0; k < width; ++k) to[k] = addRn(from[k], to[k]);
    }
  });
}

void dotInteractionGradKernel(KernelArgs& args) {
  HB_CHECK(args.in.size() >= 2 && !args.out.empty(), args.name,
           ": kernel dot_interaction_grad takes dZ and 1 or more inputs, and 1 or more outputs, got ", args.in.size(),
           " and ", args.out.size());
  checkFloat32(args, "dot_interaction_grad");
  const int64_t features = featuresAttr(args, "dot_interaction_grad");
  int64_t width = 0;
  int64_t batch = 0;
  const bool prefix = prefixAttr(args);
  const FeatureInputs rows = featureInputs(args, "dot_interaction_grad", 1, features, &width, &batch);
  const Tensor& dz = args.in[0];
  const int64_t pairs = interactionPairCount(features);
  const int64_t columns = (prefix ? width : 0) + pairs;
  HB_CHECK(dz.shape.size() == 2 && dz.shape[0] == batch && dz.shape[1] == columns, args.name,
           ": dot_interaction_grad: dZ has shape ", dz.shapeString(), ", expected [", batch, ", ", columns, "]",
           prefix ? " (feature vector 0's gradient, then the pairs')" : "");
  HB_CHECK(args.out.size() == args.in.size() - 1, args.name, ": dot_interaction_grad: ", args.out.size(),
           " outputs for ", args.in.size() - 1, " feature inputs (one gradient per input)");
  for (size_t k = 0; k < args.out.size(); ++k) {
    HB_CHECK(args.out[k].shape == args.in[k + 1].shape, args.name, ": dot_interaction_grad: the output",
             rows.stacked ? "" : (" " + std::to_string(k)), " has shape ", args.out[k].shapeString(), ", expected T's ",
             args.in[k + 1].shapeString());
  }
  std::vector<float*> out;
  for (int64_t f = 0; f < features; ++f) {
    out.push_back(rows.stacked ? args.out[0].data<float>() + f * width : args.out[size_t(f)].data<float>());
  }
  const Device device = kernelDevice(args, "dot_interaction_grad");
  const float* pairGrads = dz.data<float>() + (prefix ? width : 0);
  if (device.isCuda()) {
    // The CUDA kernel reads rows of `pairs` values.
    std::shared_ptr<Buffer> ownPairs;
    if (prefix) {
      ownPairs = Buffer::allocate(device, std::max<size_t>(1, size_t(batch * pairs) * sizeof(float)));
      cuda::copyRows(device.index, pairGrads, columns, static_cast<float*>(ownPairs->data()), pairs, batch, pairs);
      pairGrads = static_cast<const float*>(ownPairs->data());
    }
    if (rows.stacked) {
      cuda::dotInteractionGrad(device.index, pairGrads, args.in[1].data<float>(), args.out[0].data<float>(), batch,
                               features, width);
    } else {
      auto stacked = stackOnDevice(device, rows, batch, width);
      auto grads = Buffer::allocate(device, stacked->bytes());
      float* dt = static_cast<float*>(grads->data());
      cuda::dotInteractionGrad(device.index, pairGrads, static_cast<const float*>(stacked->data()), dt, batch, features,
                               width);
      for (int64_t f = 0; f < features; ++f) {
        cuda::copyRows(device.index, dt + f * width, features * width, out[size_t(f)], width, batch, width);
      }
    }
  } else {
    dotInteractionGradCpu(InteractionPairGrads{pairGrads, columns}, InteractionRows{rows.feature.data(), rows.rowStride},
                          InteractionGradRows{out.data(), rows.rowStride}, batch, features, width);
  }
  if (prefix && width > 0) addPrefixGradient(device, dz.data<float>(), columns, out[0], rows.rowStride, batch, width);
}

}  // namespace

// "dot_interaction" / "dot_interaction_grad": the F feature vectors come as one [B, F * D]
// input or as F inputs of [B, D] (and the gradient as one output or F). With `prefix` the
// output's rows are [vector 0, the pairs] (and dy's rows the gradient of both).
HB_REGISTER_KERNEL(KernelDef("dot_interaction", dotInteractionKernel, KernelPlacement::Device)
                       .input("x", f32()).repeatInputs(0).output("out", f32()).integer("features")
                       .boolean("prefix", false));
HB_REGISTER_KERNEL(KernelDef("dot_interaction_grad", dotInteractionGradKernel, KernelPlacement::Device)
                       .input("dy", f32()).input("x", f32()).repeatInputs(1).output("dx", f32()).repeatOutputs(0)
                       .integer("features").boolean("prefix", false));

}  // namespace hb
