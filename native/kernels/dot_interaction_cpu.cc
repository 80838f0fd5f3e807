#include "native/kernels/dot_interaction_cpu.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "native/core/thread_pool.h"
#include "native/kernels/cpu_isa.h"
#include "native/kernels/dense_math.h"

namespace hb {

namespace {

#define HB_INTERACTION_NAMESPACE portable
#define HB_INTERACTION_SHUFFLE_TRANSPOSE 0
#define HB_INTERACTION_BLOCKED_GRAD 0
#define HB_INTERACTION_PAIRS_AT_ONCE 4
#define HB_INTERACTION_ROW_BLOCK_GRAD 0
#include "native/kernels/dot_interaction_cpu_impl.h"
#undef HB_INTERACTION_ROW_BLOCK_GRAD
#undef HB_INTERACTION_NAMESPACE
#undef HB_INTERACTION_SHUFFLE_TRANSPOSE
#undef HB_INTERACTION_BLOCKED_GRAD
#undef HB_INTERACTION_PAIRS_AT_ONCE

#if defined(__x86_64__) && defined(__GNUC__)
// The same loops for wider vector units; no FMA, so the results do not change.
#pragma GCC push_options
#pragma GCC target("avx2")
#define HB_INTERACTION_NAMESPACE avx2
#define HB_INTERACTION_SHUFFLE_TRANSPOSE 0
// No blocked gradient: with 16 registers and no one-instruction 16-float transposes, its
// lanes cost more to fill and empty than they save (DLRM's 27 x 16 at batch 4096 on a
// 2-vCPU EPYC VM held to AVX2: 1.47 ms row by row, 4.5 ms blocked by 4 columns).
#define HB_INTERACTION_BLOCKED_GRAD 0
#define HB_INTERACTION_PAIRS_AT_ONCE 4
#define HB_INTERACTION_ROW_BLOCK_GRAD 1
#define HB_INTERACTION_GRAD_LANES 8
#define HB_INTERACTION_GRAD_REGISTERS 16
#include "native/kernels/dot_interaction_cpu_impl.h"
#undef HB_INTERACTION_ROW_BLOCK_GRAD
#undef HB_INTERACTION_GRAD_LANES
#undef HB_INTERACTION_GRAD_REGISTERS
#undef HB_INTERACTION_NAMESPACE
#undef HB_INTERACTION_SHUFFLE_TRANSPOSE
#undef HB_INTERACTION_BLOCKED_GRAD
#undef HB_INTERACTION_PAIRS_AT_ONCE
#pragma GCC pop_options

// Only here are 16-float shuffles single instructions, so only here does the block's
// transpose go through them (HB_INTERACTION_SHUFFLE_TRANSPOSE): 10% off DLRM's forward.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,prefer-vector-width=512")
#define HB_INTERACTION_NAMESPACE avx512
#define HB_INTERACTION_SHUFFLE_TRANSPOSE 1
// The blocked gradient (16 columns' running sums of 16 lanes, half the registers).
#define HB_INTERACTION_BLOCKED_GRAD 1
#define HB_INTERACTION_PAIRS_AT_ONCE 8
#define HB_INTERACTION_ROW_BLOCK_GRAD 1
#define HB_INTERACTION_GRAD_LANES 16
#define HB_INTERACTION_GRAD_REGISTERS 26
#include "native/kernels/dot_interaction_cpu_impl.h"
#undef HB_INTERACTION_ROW_BLOCK_GRAD
#undef HB_INTERACTION_GRAD_LANES
#undef HB_INTERACTION_GRAD_REGISTERS
#undef HB_INTERACTION_NAMESPACE
#undef HB_INTERACTION_SHUFFLE_TRANSPOSE
#undef HB_INTERACTION_BLOCKED_GRAD
#undef HB_INTERACTION_PAIRS_AT_ONCE
#pragma GCC pop_options

enum class VectorUnit { Portable, Avx2, Avx512 };
VectorUnit vectorUnit() {
  static const VectorUnit unit = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                                         cpuIsaCap() >= CpuIsa::Avx512
                                     ? VectorUnit::Avx512
                                     : (__builtin_cpu_supports("avx2") && cpuIsaCap() >= CpuIsa::Avx2 ? VectorUnit::Avx2
                                                                                                : VectorUnit::Portable);
  return unit;
}
#endif

}  // namespace

void dotInteractionCpu(InteractionRows t, InteractionPairs z, int64_t batch, int64_t features, int64_t width) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (vectorUnit()) {
    case VectorUnit::Avx512: return avx512::interaction(t, z, batch, features, width);
    case VectorUnit::Avx2: return avx2::interaction(t, z, batch, features, width);
    default: break;
  }
#endif
  portable::interaction(t, z, batch, features, width);
}

const char* dotInteractionIsaName() {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (vectorUnit()) {
    case VectorUnit::Avx512: return "avx512";
    case VectorUnit::Avx2: return "avx2";
    default: break;
  }
#endif
  return "portable";
}

void dotInteractionGradCpu(InteractionPairGrads dz, InteractionRows t, InteractionGradRows dt, int64_t batch,
                           int64_t features, int64_t width) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (vectorUnit()) {
    case VectorUnit::Avx512: return avx512::interactionGrad(dz, t, dt, batch, features, width);
    case VectorUnit::Avx2: return avx2::interactionGrad(dz, t, dt, batch, features, width);
    default: break;
  }
#endif
  portable::interactionGrad(dz, t, dt, batch, features, width);
}

}  // namespace hb
