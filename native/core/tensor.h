// A dense tensor: a buffer, an element type and a shape (row-major).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "native/core/buffer.h"
#include "native/core/dtype.h"

namespace hb {

struct Tensor {
  std::shared_ptr<Buffer> buffer;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;

  Device device() const { return buffer->device(); }
  int64_t size() const;
  size_t bytes() const { return size_t(size()) * dtypeSize(dtype); }
  std::string shapeString() const;
  template <typename T>
  T* data() const { return static_cast<T*>(buffer->data()); }
};

// Product of the dimensions; throws hb::Error naming `argument` for a negative
// dimension or a product beyond 2^53 elements.
int64_t shapeSize(const std::vector<int64_t>& shape, const char* argument);

// A copy of `t` in the memory of `device` (copyBytes' threading rules apply).
Tensor copyTensor(const Tensor& t, Device device);
// `t` in the memory of `device`: itself when it is there already, else a copy.
Tensor onDevice(const Tensor& t, Device device);

}  // namespace hb
