// The non-finite gradient checks of a compiled step on a GPU, without a wait per update.
// checkFiniteGradient reads each gradient's first NaN back to the host before its update:
// on a GPU that is a wait for the device per variable (38 in a 26-table DLRM step), each
// leaving the GPU idle until the host queues more. Here each check is queued beside its
// update: where it finds a value that is not finite it sets a device flag that the update's
// kernels read before they write (OptimizerHyper::skip), so the variable is not changed,
// and the host reads one word at the step's end and throws the check's error then, naming
// the variable, row and column as checkFiniteGradient does.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "native/core/buffer.h"
#include "native/core/device.h"
#include "native/core/tensor.h"

namespace hb {

class DeferredFiniteChecks {
 public:
  explicit DeferredFiniteChecks(Device device);

  // Before a step's first check: every flag cleared (queued on the device, in order).
  void beginStep();
  // Queues the check of `gradient` (on the GPU) for the update of `variable` whose skip
  // flag is `*skip`: null asks for a new flag, which is returned (the update passes it in
  // OptimizerHyper::skip); an update with several gradients passes the first's on. Null
  // where this step has no room left: the caller checks as checkFiniteGradient does.
  const int32_t* check(const Tensor& gradient, int64_t width, const std::string& variable, const char* what,
                       const int32_t* skip);
  // After the step's work was queued: waits for it, and throws the first failed check's
  // HB_ERR_NAN error (in the order the checks were queued).
  void throwIfAnyFailed();

 private:
  struct Check {
    std::string variable;
    std::string what;
    int64_t width;
  };
  static constexpr int64_t kMostChecks = 1024;
  // Where flags_ keeps each part (device pointers).
  int32_t* anyFailed() const;
  int32_t* skips() const;
  uint64_t* firsts() const;
  Device device_;
  // [anyFailed, pad][skip flags: kMostChecks int32][first index: kMostChecks uint64]
  std::shared_ptr<Buffer> flags_;
  std::mutex mutex_;
  std::vector<Check> checks_;
  int64_t skips_ = 0;
};

}  // namespace hb
