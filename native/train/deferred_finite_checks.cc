#include "native/train/deferred_finite_checks.h"

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/train/optimizer_apply.h"

namespace hb {

namespace {
constexpr size_t kHeadBytes = 8;  // anyFailed, padded so the indices stay 8-byte aligned
}  // namespace

DeferredFiniteChecks::DeferredFiniteChecks(Device device) : device_(device) {}

void DeferredFiniteChecks::beginStep() {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t flagBytes = kHeadBytes + size_t(kMostChecks) * sizeof(int32_t);
  if (!flags_) flags_ = Buffer::allocate(device_, flagBytes + size_t(kMostChecks) * sizeof(uint64_t));
  auto* base = static_cast<uint8_t*>(flags_->data());
  cuda::setDeviceBytes(device_.index, base, 0, flagBytes);
  cuda::setDeviceBytes(device_.index, base + flagBytes, 0xff, size_t(kMostChecks) * sizeof(uint64_t));
  checks_.clear();
  skips_ = 0;
}

const int32_t* DeferredFiniteChecks::check(const Tensor& gradient, int64_t width, const std::string& variable,
                                           const char* what, const int32_t* skip) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t at = int64_t(checks_.size());
  if (!flags_ || at >= kMostChecks || (skip == nullptr && skips_ >= kMostChecks)) return nullptr;
  auto* base = static_cast<uint8_t*>(flags_->data());
  auto* anyFailed = reinterpret_cast<int32_t*>(base);
  auto* skips = reinterpret_cast<int32_t*>(base + kHeadBytes);
  auto* firsts = reinterpret_cast<uint64_t*>(base + kHeadBytes + size_t(kMostChecks) * sizeof(int32_t));
  int32_t* flag = skip != nullptr ? const_cast<int32_t*>(skip) : skips + skips_++;
  cuda::flagNonFinite(device_.index, gradient.data<float>(), gradient.size(), firsts + at, flag, anyFailed);
  checks_.push_back(Check{variable, what, width});
  return flag;
}

void DeferredFiniteChecks::throwIfAnyFailed() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (checks_.empty()) return;
  int32_t anyFailed = 0;
  copyBytes(&anyFailed, Device::cpu(), flags_->data(), device_, sizeof anyFailed);
  if (anyFailed == 0) return;
  std::vector<uint64_t> firsts(checks_.size());
  const auto* base = static_cast<const uint8_t*>(flags_->data());
  copyBytes(firsts.data(), Device::cpu(), base + kHeadBytes + size_t(kMostChecks) * sizeof(int32_t), device_,
            firsts.size() * sizeof(uint64_t));
  for (size_t k = 0; k < checks_.size(); ++k) {
    if (firsts[k] == ~uint64_t(0)) continue;
    failNonFiniteGradient(checks_[k].variable, checks_[k].what, int64_t(firsts[k]), checks_[k].width);
  }
  failWith(ErrorCode::Internal, "a gradient check flagged a value that is not finite, but none names it");
}

}  // namespace hb
