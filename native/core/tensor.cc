#include "native/core/tensor.h"

#include <algorithm>

#include "native/core/status.h"

namespace hb {

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Tensor::shapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shapeSize(const std::vector<int64_t>& shape, const char* argument) {
  constexpr int64_t kMax = int64_t(1) << 53;
  int64_t n = 1;
  for (int64_t d : shape) {
    HB_CHECK(d >= 0, argument, ": dimensions must be >= 0, got ", d);
    HB_CHECK(d == 0 || n <= kMax / d, argument, ": shape has more than 2^53 elements");
    n *= d;
  }
  return n;
}

Tensor copyTensor(const Tensor& t, Device device) {
  Tensor copy{Buffer::allocate(device, std::max<size_t>(t.bytes(), 1)), t.dtype, t.shape};
  if (t.bytes()) copyBytes(copy.buffer->data(), device, t.buffer->data(), t.device(), t.bytes());
  return copy;
}

Tensor onDevice(const Tensor& t, Device device) { return t.device() == device ? t : copyTensor(t, device); }

}  // namespace hb
