// The widest vector instructions the host kernels may use. Each kernel that picks its
// code at run time checks what the CPU has, then takes no more than this cap:
// HB_CPU_ISA=portable|avx2 (unset: no cap). Holding every kernel to AVX2 lets an AVX-512
// machine measure what an AVX2-only one would run, against a peer held to the same.
#pragma once

namespace hb {

enum class CpuIsa { Portable = 0, Avx2 = 1, Avx512 = 2 };

// Read once; anything but "portable" or "avx2" leaves no cap.
CpuIsa cpuIsaCap();

// Whether a kernel may take its AVX2 code: the CPU has AVX2 and the cap allows it (read
// once). Not FMA: kernels that need it ask for it themselves.
bool cpuTakesAvx2();

}  // namespace hb
