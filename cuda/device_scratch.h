// Scratch device memory for the CUDA kernels' temporaries; for the .cu files only.
#pragma once

#include <cstddef>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"

namespace hb {
namespace cuda {

// Device memory for the length of one call, freed in stream order (after the kernels
// queued before the free) however the call ends.
class Scratch {
 public:
  Scratch() = default;
  Scratch(int device, size_t bytes) : device_(device), pointer_(allocate(device, bytes)) {}
  Scratch(Scratch&& other) noexcept : device_(other.device_), pointer_(other.pointer_) { other.pointer_ = nullptr; }
  Scratch& operator=(Scratch&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      pointer_ = other.pointer_;
      other.pointer_ = nullptr;
    }
    return *this;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { reset(); }
  template <typename T>
  T* as() const { return static_cast<T*>(pointer_); }

 private:
  void reset() {
    if (pointer_) release(device_, pointer_);
    pointer_ = nullptr;
  }
  int device_ = 0;
  void* pointer_ = nullptr;
};

}  // namespace cuda
}  // namespace hb
