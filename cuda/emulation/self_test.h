// Kernels that exercise the emulated device itself (barriers, warp intrinsics, atomics,
// launch and memory checks), for test/cuda_emulation.test.ts: what the emulation claims
// to mean, checked through the addon. Built only with HB_CUDA_EMULATE=ON.
#pragma once

#include <string>
#include <vector>

namespace hb {
namespace cuda_emulation {

struct SelfTestResult {
  std::vector<double> values;
  std::string error;  // what the runtime reported, empty when the kernel ran clean
};

// name: warp_intrinsics | block_sum | block_sum_without_barriers | divergent_barrier |
// warp_mask_with_exited_lanes | atomics | wire_cast | deferred_stream | host_copies |
// free_before_copy | oversized_block | copy_past_allocation | double_free
SelfTestResult runSelfTest(const std::string& name);

}  // namespace cuda_emulation
}  // namespace hb
