#include "native/core/spin_wait.h"

#include <algorithm>
#include <cstdlib>

namespace hb {

std::chrono::microseconds spinBeforeSleep() {
  static const std::chrono::microseconds spin = [] {
    if (const char* env = std::getenv("HB_SPIN_US")) {
      char* end = nullptr;
      const long us = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && us >= 0) return std::chrono::microseconds(std::min(us, 100000L));
    }
    return std::chrono::microseconds(200);
  }();
  return spin;
}

}  // namespace hb
