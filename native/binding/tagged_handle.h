// Native objects handed to JS as plain objects that hold a shared_ptr and carry a type
// tag, so a call takes only a handle of its own kind (a digest for a digest, a shuffle
// buffer for a buffer) and an object JS made up is refused with a TypeError.
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <utility>

namespace hb {
namespace binding {

// A handle holding `value` until JS collects it (or the holder is reset). `what` names the
// maker in errors.
template <typename T>
Napi::Object taggedHandle(Napi::Env env, std::shared_ptr<T> value, const napi_type_tag& tag, const std::string& what) {
  auto* held = new std::shared_ptr<T>(std::move(value));
  Napi::Object handle = Napi::Object::New(env);
  if (napi_wrap(env, handle, held, [](napi_env, void* data, void*) { delete static_cast<std::shared_ptr<T>*>(data); }, nullptr,
                nullptr) != napi_ok) {
    delete held;
    throw Napi::Error::New(env, what + ": could not make the handle");
  }
  if (napi_type_tag_object(env, handle, &tag) != napi_ok) throw Napi::Error::New(env, what + ": could not tag the handle");
  return handle;
}

// The holder inside a handle of this tag (its shared_ptr is empty once reset); a TypeError
// naming `argument` and saying it is not `kind` for any other value.
template <typename T>
std::shared_ptr<T>* taggedHolder(const Napi::Value& value, const napi_type_tag& tag, const std::string& argument,
                                 const std::string& kind) {
  Napi::Env env = value.Env();
  bool tagged = false;
  if (value.IsObject()) napi_check_object_type_tag(env, value, &tag, &tagged);
  if (!tagged) throw Napi::TypeError::New(env, argument + " is not " + kind);
  void* data = nullptr;
  if (napi_unwrap(env, value, &data) != napi_ok || data == nullptr) throw Napi::Error::New(env, argument + " is unusable");
  return static_cast<std::shared_ptr<T>*>(data);
}

}  // namespace binding
}  // namespace hb
