#include "native/binding/tensor_handle.h"

#include "native/binding/addon_state.h"

namespace hb {
namespace binding {

void TensorHandle::define(Napi::Env env, Napi::Object exports) {
  Napi::Function cls = DefineClass(env, "TensorHandle",
                                   {InstanceAccessor<&TensorHandle::shape>("shape"),
                                    InstanceAccessor<&TensorHandle::dtype>("dtype"),
                                    InstanceAccessor<&TensorHandle::device>("device"),
                                    InstanceAccessor<&TensorHandle::disposed>("disposed"),
                                    InstanceMethod<&TensorHandle::dispose>("dispose")});
  addonState(env).tensorHandleClass = Napi::Persistent(cls);
  exports.Set("TensorHandle", cls);
}

TensorHandle::TensorHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TensorHandle>(info) {}

TensorHandle::~TensorHandle() { release(); }

Napi::Object TensorHandle::wrap(Napi::Env env, Tensor tensor) {
  Napi::Object object = addonState(env).tensorHandleClass.New({});
  TensorHandle* handle = Unwrap(object);
  if (tensor.buffer->owned() && !tensor.device().isCuda()) {
    handle->reportedBytes_ = int64_t(tensor.buffer->bytes());
    Napi::MemoryManagement::AdjustExternalMemory(env, handle->reportedBytes_);
  }
  handle->tensor_ = std::move(tensor);
  return object;
}

bool TensorHandle::isHandle(const Napi::Value& value) {
  return value.IsObject() && value.As<Napi::Object>().InstanceOf(addonState(value.Env()).tensorHandleClass.Value());
}

const Tensor& TensorHandle::unwrap(const Napi::Value& value, const char* argument) {
  Napi::Env env = value.Env();
  Napi::Function cls = addonState(env).tensorHandleClass.Value();
  if (!value.IsObject() || !value.As<Napi::Object>().InstanceOf(cls)) {
    throw Napi::TypeError::New(env, std::string(argument) + " must be an hb tensor or variable");
  }
  TensorHandle* handle = Unwrap(value.As<Napi::Object>());
  if (!handle->tensor_) {
    throw Napi::Error::New(env, std::string(argument) + " has been disposed");
  }
  return *handle->tensor_;
}

Tensor TensorHandle::take(const Napi::Value& value, const char* argument) {
  unwrap(value, argument);  // its checks and errors
  TensorHandle* handle = Unwrap(value.As<Napi::Object>());
  Tensor tensor = std::move(*handle->tensor_);
  handle->release();
  return tensor;
}

void TensorHandle::release() {
  if (reportedBytes_ != 0) {
    // Also runs from the finalizer, where nothing may throw (this fails only while the
    // environment is torn down).
    int64_t total = 0;
    napi_adjust_external_memory(Env(), -reportedBytes_, &total);
    reportedBytes_ = 0;
  }
  tensor_.reset();
}

Napi::Value TensorHandle::shape(const Napi::CallbackInfo& info) {
  if (!tensor_) return info.Env().Null();
  Napi::Array shape = Napi::Array::New(info.Env(), tensor_->shape.size());
  for (size_t i = 0; i < tensor_->shape.size(); ++i) shape.Set(i, Napi::Number::New(info.Env(), double(tensor_->shape[i])));
  return shape;
}

Napi::Value TensorHandle::dtype(const Napi::CallbackInfo& info) {
  if (!tensor_) return info.Env().Null();
  return Napi::String::New(info.Env(), dtypeName(tensor_->dtype));
}

Napi::Value TensorHandle::device(const Napi::CallbackInfo& info) {
  if (!tensor_) return info.Env().Null();
  return Napi::String::New(info.Env(), tensor_->device().str());
}

Napi::Value TensorHandle::disposed(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), !tensor_.has_value());
}

Napi::Value TensorHandle::dispose(const Napi::CallbackInfo& info) {
  release();
  return info.Env().Undefined();
}

}  // namespace binding
}  // namespace hb
