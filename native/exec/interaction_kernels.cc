// DLRM's dot interaction without self pairs ("dot_interaction") and its gradient.
// An example's row of T holds F feature vectors of width D, one after another; output
// column interactionPairIndex(i, j) is the dot product of vectors i and j, j < i.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/dense_kernels.h"
#include "native/core/status.h"
#include "native/exec/kernel_def.h"
#include "native/kernels/dense_math.h"
#include "native/kernels/dot_interaction_cpu.h"

namespace hb {

namespace {

// F (attrs[0]) after checking it and T's shape [B, F * D]; sets *width to D.
int64_t featuresOf(const KernelArgs& args, const char* kernel, const Tensor& t, int64_t* width) {
  HB_CHECK(!args.attrs.empty(), args.name, ": kernel ", kernel, " needs attrs[0] (the number of features F)");
  const double f = args.attrs[0];
  HB_CHECK(f == std::floor(f) && f >= 1 && f <= 65536, args.name, ": ", kernel,
           ": attrs[0] (the number of features F) must be an integer in [1, 65536], got ", f);
  const int64_t features = int64_t(f);
  HB_CHECK(t.shape.size() == 2 && t.shape[1] % features == 0, args.name, ": ", kernel, ": the input ",
           t.shapeString(), " should be [batch, F * D] with F = ", features);
  *width = t.shape[1] / features;
  return features;
}

void dotInteractionKernel(KernelArgs& args) {
  checkArity(args, 1, 1, "dot_interaction");
  checkFloat32(args, "dot_interaction");
  const Tensor& t = args.in[0];
  const Tensor& z = args.out[0];
  int64_t width = 0;
  const int64_t features = featuresOf(args, "dot_interaction", t, &width);
  const int64_t pairs = interactionPairCount(features);
  const int64_t batch = t.shape[0];
  HB_CHECK(z.shape.size() == 2 && z.shape[0] == batch && z.shape[1] == pairs, args.name,
           ": dot_interaction: the output has shape ", z.shapeString(), ", expected [", batch, ", ", pairs, "]");
  const Device device = kernelDevice(args, "dot_interaction");
  if (device.isCuda()) return cuda::dotInteraction(device.index, t.data<float>(), z.data<float>(), batch, features, width);
  dotInteractionCpu(t.data<float>(), z.data<float>(), batch, features, width);
}

void dotInteractionGradKernel(KernelArgs& args) {
  checkArity(args, 2, 1, "dot_interaction_grad");
  checkFloat32(args, "dot_interaction_grad");
  const Tensor& dz = args.in[0];
  const Tensor& t = args.in[1];
  const Tensor& dt = args.out[0];
  int64_t width = 0;
  const int64_t features = featuresOf(args, "dot_interaction_grad", t, &width);
  const int64_t pairs = interactionPairCount(features);
  const int64_t batch = t.shape[0];
  HB_CHECK(dz.shape.size() == 2 && dz.shape[0] == batch && dz.shape[1] == pairs, args.name,
           ": dot_interaction_grad: dZ has shape ", dz.shapeString(), ", expected [", batch, ", ", pairs, "]");
  HB_CHECK(dt.shape == t.shape, args.name, ": dot_interaction_grad: the output has shape ", dt.shapeString(),
           ", expected T's ", t.shapeString());
  const Device device = kernelDevice(args, "dot_interaction_grad");
  if (device.isCuda()) {
    return cuda::dotInteractionGrad(device.index, dz.data<float>(), t.data<float>(), dt.data<float>(), batch, features,
                                    width);
  }
  dotInteractionGradCpu(dz.data<float>(), t.data<float>(), dt.data<float>(), batch, features, width);
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("dot_interaction", dotInteractionKernel, KernelPlacement::Device)
                       .input("x", f32()).output("out", f32()).integer("features"));
HB_REGISTER_KERNEL(KernelDef("dot_interaction_grad", dotInteractionGradKernel, KernelPlacement::Device)
                       .input("dy", f32()).input("x", f32()).output("dx", f32()).integer("features"));

}  // namespace hb
