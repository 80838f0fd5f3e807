#include "native/train/deferred_finite_checks.h"

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/train/optimizer_apply.h"

namespace hb {

namespace {
constexpr size_t kHeadBytes = 8;  // anyFailed, padded so the indices stay 8-byte aligned
}  // namespace

int32_t* DeferredFiniteChecks::anyFailed() const { return static_cast<int32_t*>(flags_->data()); }

int32_t* DeferredFiniteChecks::skips() const {
  return reinterpret_cast<int32_t*>(static_cast<uint8_t*>(flags_->data()) + kHeadBytes);
}

uint64_t* DeferredFiniteChecks::firsts() const { return reinterpret_cast<uint64_t*>(skips() + kMostChecks); }

DeferredFiniteChecks::DeferredFiniteChecks(Device device) : device_(device) {}

void DeferredFiniteChecks::beginStep() {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t flagBytes = kHeadBytes + size_t(kMostChecks) * sizeof(int32_t);
  if (!flags_) flags_ = Buffer::allocate(device_, flagBytes + size_t(kMostChecks) * sizeof(uint64_t));
  cuda::setDeviceBytes(device_.index, anyFailed(), 0, flagBytes);
  cuda::setDeviceBytes(device_.index, firsts(), 0xff, size_t(kMostChecks) * sizeof(uint64_t));
  checks_.clear();
  skips_ = 0;
}

const int32_t* DeferredFiniteChecks::check(const Tensor& gradient, int64_t width, const std::string& variable,
                                           const char* what, const int32_t* skip) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t at = int64_t(checks_.size());
  if (!flags_ || at >= kMostChecks || (skip == nullptr && skips_ >= kMostChecks)) return nullptr;
  int32_t* flag = skip != nullptr ? const_cast<int32_t*>(skip) : skips() + skips_++;
  cuda::flagNonFinite(device_.index, gradient.data<float>(), gradient.size(), firsts() + at, flag, anyFailed());
  checks_.push_back(Check{variable, what, width});
  return flag;
}

void DeferredFiniteChecks::throwIfAnyFailed() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (checks_.empty()) return;
  int32_t failed = 0;
  copyBytes(&failed, Device::cpu(), anyFailed(), device_, sizeof failed);
  if (failed == 0) return;
  std::vector<uint64_t> first(checks_.size());
  copyBytes(first.data(), Device::cpu(), firsts(), device_, first.size() * sizeof(uint64_t));
  for (size_t k = 0; k < checks_.size(); ++k) {
    if (first[k] == ~uint64_t(0)) continue;
    failNonFiniteGradient(checks_[k].variable, checks_[k].what, int64_t(first[k]), checks_[k].width);
  }
  failWith(ErrorCode::Internal, "a gradient check flagged a value that is not finite, but none names it");
}

}  // namespace hb
