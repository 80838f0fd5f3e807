#include "native/kernels/cpu_isa.h"

#include <cstdlib>
#include <cstring>

namespace hb {

CpuIsa cpuIsaCap() {
  static const CpuIsa cap = [] {
    const char* env = std::getenv("HB_CPU_ISA");
    if (env != nullptr && std::strcmp(env, "portable") == 0) return CpuIsa::Portable;
    if (env != nullptr && std::strcmp(env, "avx2") == 0) return CpuIsa::Avx2;
    return CpuIsa::Avx512;
  }();
  return cap;
}

bool cpuTakesAvx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool takes = __builtin_cpu_supports("avx2") && cpuIsaCap() >= CpuIsa::Avx2;
  return takes;
#else
  return false;
#endif
}

}  // namespace hb
