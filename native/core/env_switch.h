// Behaviours a variable in the environment can turn off (HB_HUGE_PAGES=0,
// HB_SIDE_BY_SIDE=0): on unless it is set to "0". Callers read it once and keep it.
#pragma once

#include <cstdlib>
#include <cstring>

namespace hb {

inline bool switchedOn(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || std::strcmp(env, "0") != 0;
}

}  // namespace hb
