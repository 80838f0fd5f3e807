#include <algorithm>

#include "native/core/buffer.h"
#include "native/core/thread_pool.h"
#include "native/kernels/cpu_isa.h"
#include "native/kernels/random_fill.h"

namespace hb {

namespace {

#define HB_FILL_NAMESPACE portable
#include "native/kernels/random_fill_cpu_impl.h"
#undef HB_FILL_NAMESPACE

#if defined(__x86_64__) && defined(__GNUC__)
// The same loops for wider vector units (64-bit multiplies and int/double conversions
// are what the generator needs). Results are those of the portable loops: no FMA.
#pragma GCC push_options
#pragma GCC target("avx2")
#define HB_FILL_NAMESPACE avx2
#include "native/kernels/random_fill_cpu_impl.h"
#undef HB_FILL_NAMESPACE
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,prefer-vector-width=512")
#define HB_FILL_NAMESPACE avx512
#include "native/kernels/random_fill_cpu_impl.h"
#undef HB_FILL_NAMESPACE
#pragma GCC pop_options
#endif

#if defined(__x86_64__) && defined(__GNUC__)
bool hasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && cpuIsaCap() >= CpuIsa::Avx512;
}
#endif

}  // namespace

void fillCpu(float* out, int64_t n, const FillSpec& spec) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx512 = hasAvx512();
  static const bool avx2 = cpuTakesAvx2();
  if (avx512) return avx512::fill(out, n, spec);
  if (avx2) return avx2::fill(out, n, spec);
#endif
  portable::fill(out, n, spec);
}

void fillRowsCpu(float* table, int64_t width, const int64_t* rows, const int64_t* ids, int64_t n, const FillSpec& spec) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx512 = hasAvx512();
  static const bool avx2 = cpuTakesAvx2();
  if (avx512) return avx512::fillRows(table, width, rows, ids, n, spec);
  if (avx2) return avx2::fillRows(table, width, rows, ids, n, spec);
#endif
  portable::fillRows(table, width, rows, ids, n, spec);
}

const char* fillIsaName() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (hasAvx512()) return "avx512";
  if (cpuTakesAvx2()) return "avx2";
#endif
  return "portable";
}

}  // namespace hb
