// Reading JS arguments into native values, with errors that name the argument.
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "native/core/status.h"
#include "native/core/tensor.h"
#include "native/kernels/random_fill.h"

namespace hb {
namespace binding {

std::string stringArgument(const Napi::Value& value, const char* argument);
double numberArgument(const Napi::Value& value, const char* argument);
// An array of integers in [0, 2^53).
std::vector<int64_t> shapeArgument(const Napi::Value& value, const char* argument);
// spec[key] as a float: `fallback` when undefined, an Error naming `owner` and `key`
// when not a finite number.
float finiteFloatField(const Napi::Object& spec, const char* key, float fallback, const char* owner);
// Throws a TypeError naming `argument` when the typed array `value` lives in a
// SharedArrayBuffer: another thread could change it between the checks and the kernel
// that reads it. Every typed array read from JS passes through here.
void refuseSharedMemory(const Napi::Value& value, const std::string& argument);
// An initializer's spec ({ kind, value, minval, maxval, mean, stddev, seed, rowStride?,
// rowOffset? }) for a float32 tensor of `shape` (defined with tensorFill).
FillSpec fillSpecArgument(const Napi::Object& spec, const std::vector<int64_t>& shape);

// A typed array hb-ts reads, checked: its dtype, where its values start, how many.
struct TypedArrayValues {
  DType dtype;
  void* data;
  size_t length;
};
// The checks every typed array from JS passes (the kind, shared memory, a detached
// buffer), with `argument` in their errors; a Uint16Array only as `halfAs`, as below.
TypedArrayValues checkedTypedArray(const Napi::Value& value, const char* argument, const DType* halfAs = nullptr);

// A host tensor viewing a Float32Array, Float64Array, Int32Array or BigInt64Array
// without copying. The view holds a reference to the array until it is released, which
// must happen on the JS thread (tasks guarantee it; see async_task.h).
// A Uint16Array is taken only as `halfAs` (float16 or bfloat16 bits) when that is given.
Tensor viewTypedArray(const Napi::Value& value, const char* argument, const DType* halfAs = nullptr);

// A new typed array for `length` values of `dtype`, for the caller to fill (its contents
// are not zeroed): Float32Array, Float64Array, Int32Array, BigInt64Array, or a Uint16Array
// of raw bits for float16 / bfloat16. Large ones live in host blocks that are reused (see
// native/core/buffer.cc) once JS lets go of them, so reading results in a loop does not
// fault in fresh pages for every array; *owner (when given) then holds the block, for work
// that writes into it off the JS thread to keep it alive. (Such arrays are external to V8:
// on Node 21+ they cannot be moved in a postMessage transfer list; copies can.)
Napi::TypedArray newTypedArray(Napi::Env env, DType dtype, size_t length, std::shared_ptr<Buffer>* owner = nullptr);

// newTypedArray's array over a block the cache has free now (its pages mapped already);
// empty where there is none, or the size is not one kept there.
Napi::TypedArray reusedTypedArray(Napi::Env env, DType dtype, size_t length);

// The same array for a copy made now on the JS thread: over a host block kept for reuse
// when one is free (its pages mapped already), else over a new host block while JS arrays
// hold less than 64 MiB of them, else in V8's memory. Host blocks come back only through a
// finalizer, which Node runs on a later turn of the event loop once V8 has collected the
// array: a loop of reads that never yields to it would otherwise take a new block for every
// read, where V8 frees its own memory as it collects. The caller writes every value: a
// large array in V8's memory has its pages mapped for that at once.
Napi::TypedArray newTypedArrayNow(Napi::Env env, DType dtype, size_t length);

// An array over `block` itself (a host block of at least `length` values that nothing
// else holds or writes): a tensor's memory handed to JS without a copy. Empty, for the
// caller to copy, where the size is not one kept in host blocks (a small copy into V8's
// memory is as cheap), or where external buffers are refused.
Napi::TypedArray typedArrayAdopting(Napi::Env env, DType dtype, size_t length, const std::shared_ptr<Buffer>& block);

// A typed array of `length` values over a host block filled off the JS thread: large ones
// view the block (it goes back to the block cache once JS lets go of the array), small
// ones are copies. Uint8, Int32, Float32, Float64 and BigInt64 arrays.
Napi::TypedArray typedArrayOverBlock(Napi::Env env, napi_typedarray_type type, std::shared_ptr<Buffer> block,
                                     size_t length);

// A host tensor holding a copy of a typed array's values, made now on the JS thread.
// For inputs a queued task reads later: JS can neither change nor detach them after
// they were checked.
Tensor copyTypedArray(const Napi::Value& value, const char* argument);

// The same checks, and a host tensor over the array's own values, holding no reference
// to it: only for work done on the JS thread before the call returns, where no JS runs
// to change or detach the array. copyTensor turns it into what a queued task may keep.
Tensor borrowTypedArray(const Napi::Value& value, const char* argument);

// The JS error for a native one: a TypeError for ErrorCode::Type, an Error otherwise,
// with `code` set to the code's name (HB_ERR_*).
Napi::Error jsError(Napi::Env env, const std::string& message, ErrorCode code);
// Gives a JS error thrown by binding code a `code` when it has none: HB_ERR_TYPE for a
// TypeError, HB_ERR_INVALID_ARGUMENT otherwise.
void ensureErrorCode(const Napi::Error& error);

// Turns any exception escaping `body` into a JS exception: node-addon-api only
// converts its own Napi::Error, and anything else escaping a callback would abort.
template <Napi::Value (*Body)(const Napi::CallbackInfo&)>
Napi::Value guarded(const Napi::CallbackInfo& info) {
  try {
    return Body(info);
  } catch (const Napi::Error& e) {
    ensureErrorCode(e);
    throw;
  } catch (const Error& e) {
    throw jsError(info.Env(), e.what(), e.code());
  } catch (const std::bad_alloc&) {
    throw jsError(info.Env(), "out of memory", ErrorCode::OutOfMemory);
  } catch (const std::exception& e) {
    throw jsError(info.Env(), e.what(), ErrorCode::Internal);
  }
}

}  // namespace binding
}  // namespace hb
