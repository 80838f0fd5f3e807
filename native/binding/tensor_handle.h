// The JS object that stands for a native tensor. Its methods live in TS (lib/tensor);
// here it only carries the tensor and reports its shape, dtype and device.
#pragma once

#include <napi.h>

#include <optional>

#include "native/core/tensor.h"

namespace hb {
namespace binding {

class TensorHandle : public Napi::ObjectWrap<TensorHandle> {
 public:
  static void define(Napi::Env env, Napi::Object exports);
  static Napi::Object wrap(Napi::Env env, Tensor tensor);
  // The live tensor behind `value`; a TypeError naming `argument` when `value` is not a
  // tensor, an Error when it has been disposed.
  static const Tensor& unwrap(const Napi::Value& value, const char* argument);
  // The live tensor behind `value`, moved out: the handle is disposed (unwrap's errors).
  static Tensor take(const Napi::Value& value, const char* argument);
  // Whether `value` is a tensor handle (disposed or not).
  static bool isHandle(const Napi::Value& value);

  explicit TensorHandle(const Napi::CallbackInfo& info);
  ~TensorHandle() override;

 private:
  Napi::Value shape(const Napi::CallbackInfo& info);
  Napi::Value dtype(const Napi::CallbackInfo& info);
  Napi::Value device(const Napi::CallbackInfo& info);
  Napi::Value disposed(const Napi::CallbackInfo& info);
  Napi::Value dispose(const Napi::CallbackInfo& info);
  void release();

  std::optional<Tensor> tensor_;
  int64_t reportedBytes_ = 0;  // owned host memory told to V8's GC
};

}  // namespace binding
}  // namespace hb
