#include "native/binding/arguments.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>

#include "native/core/buffer.h"
#include "native/core/executor.h"
#include "native/core/tensor.h"

namespace hb {
namespace binding {

Napi::Error jsError(Napi::Env env, const std::string& message, ErrorCode code) {
  Napi::Error error = code == ErrorCode::Type ? Napi::TypeError::New(env, message) : Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, errorCodeName(code)));
  return error;
}

void ensureErrorCode(const Napi::Error& error) {
  Napi::Env env = error.Env();
  Napi::Object value = error.Value();
  if (!value.Get("code").IsUndefined()) return;
  Napi::Value typeError = env.Global().Get("TypeError");
  const bool isType = typeError.IsFunction() && value.InstanceOf(typeError.As<Napi::Function>());
  value.Set("code", Napi::String::New(env, errorCodeName(isType ? ErrorCode::Type : ErrorCode::InvalidArgument)));
}

std::string stringArgument(const Napi::Value& value, const char* argument) {
  if (!value.IsString()) throw Napi::TypeError::New(value.Env(), std::string(argument) + " must be a string");
  return value.As<Napi::String>().Utf8Value();
}

double numberArgument(const Napi::Value& value, const char* argument) {
  if (!value.IsNumber()) throw Napi::TypeError::New(value.Env(), std::string(argument) + " must be a number");
  return value.As<Napi::Number>().DoubleValue();
}

std::vector<int64_t> shapeArgument(const Napi::Value& value, const char* argument) {
  Napi::Env env = value.Env();
  if (!value.IsArray()) throw Napi::TypeError::New(env, std::string(argument) + " must be an array of integers");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<int64_t> shape;
  for (uint32_t i = 0; i < array.Length(); ++i) {
    Napi::Value d = array.Get(i);
    const std::string message = std::string(argument) + "[" + std::to_string(i) + "] must be a non-negative integer";
    if (!d.IsNumber()) throw Napi::TypeError::New(env, message);
    const double x = d.As<Napi::Number>().DoubleValue();
    if (!(x >= 0.0 && x < 9007199254740992.0 && std::floor(x) == x)) throw Napi::Error::New(env, message);
    shape.push_back(int64_t(x));
  }
  return shape;
}

namespace {

// Below this, V8's own allocation is as cheap as a cached block; above the largest, V8's
// own arrays (Node 18/20 refuse external buffers over 4 GiB, and the cache keeps <= 1 GiB).
constexpr size_t kPooledArrayBytes = size_t(64) << 10;
constexpr size_t kMaxPooledArrayBytes = size_t(1) << 30;

bool pooledSize(size_t bytes) { return bytes >= kPooledArrayBytes && bytes <= kMaxPooledArrayBytes; }

template <typename Array>
Napi::TypedArray typedArrayOver(Napi::Env env, Napi::ArrayBuffer buffer, size_t length) {
  return Array::New(env, length, buffer, 0);
}

// A block JS holds through an ArrayBuffer, and its bytes as counted in bytesHeldByJs.
struct HeldBlock {
  std::shared_ptr<Buffer> block;
  int64_t bytes;
};

// The bytes of host blocks that JS arrays hold now, in every env of the process.
std::atomic<int64_t> bytesHeldByJs{0};

// The block of a collected ArrayBuffer goes back to the cache for the next step (emptied
// once the host executor idles, noteHostBlockCached: memory still goes back when JS drops
// an array long after the work ended). Here, not through the executor: a task queued there
// made the next small op queue behind it instead of running at once.
void releasePooledBlock(napi_env, void*, void* hint) {
  auto* held = static_cast<HeldBlock*>(hint);
  bytesHeldByJs.fetch_sub(held->bytes, std::memory_order_relaxed);
  delete held;
}

// An ArrayBuffer over `block`'s first `bytes`, the block held until JS collects it. Empty
// where this runtime refuses external buffers (a V8 sandbox: the finalizer is not called
// then, so the block is ours to drop).
Napi::ArrayBuffer externalArrayBuffer(Napi::Env env, const std::shared_ptr<Buffer>& block, size_t bytes) {
  auto* held = new HeldBlock{block, 0};
  napi_value buffer = nullptr;
  const napi_status status = napi_create_external_arraybuffer(env, block->data(), bytes, releasePooledBlock, held, &buffer);
  if (status == napi_no_external_buffers_allowed) {
    delete held;
    return Napi::ArrayBuffer();
  }
  // Refused before Node took the finalizer (an exception pending, or a worker being
  // terminated): ours to drop. Any later failure has handed the block to the finalizer
  // already (Node calls it when it cannot make the buffer): not deleted here.
  if (status == napi_pending_exception || status == napi_cannot_run_js || status == napi_invalid_arg) delete held;
  if (status != napi_ok) {
    throw Napi::Error::New(env, "could not make an ArrayBuffer of " + std::to_string(bytes) + " bytes for a result");
  }
  // Counted once made: the finalizer runs on a later turn of the event loop at the soonest.
  held->bytes = int64_t(bytes);
  bytesHeldByJs.fetch_add(held->bytes, std::memory_order_relaxed);
  return Napi::ArrayBuffer(env, buffer);
}

// An ArrayBuffer over a new host block from the block cache, its block in *owner too;
// empty as externalArrayBuffer's.
Napi::ArrayBuffer pooledArrayBuffer(Napi::Env env, size_t bytes, std::shared_ptr<Buffer>* owner) {
  std::shared_ptr<Buffer> block = Buffer::allocate(Device::cpu(), bytes);
  Napi::ArrayBuffer buffer = externalArrayBuffer(env, block, bytes);
  if (!buffer.IsEmpty() && owner != nullptr) *owner = block;
  return buffer;
}

}  // namespace

Napi::TypedArray typedArrayOverBlock(Napi::Env env, napi_typedarray_type type, std::shared_ptr<Buffer> block,
                                     size_t length) {
  size_t elementBytes = 0;
  switch (type) {
    case napi_uint8_array: elementBytes = 1; break;
    case napi_int32_array:
    case napi_float32_array: elementBytes = 4; break;
    case napi_float64_array:
    case napi_bigint64_array: elementBytes = 8; break;
    default: failWith(ErrorCode::Internal, "typedArrayOverBlock: unsupported array type ", int(type));
  }
  HB_CHECK_CODE(block && block->bytes() >= length * elementBytes && !block->device().isCuda(), Internal,
                "typedArrayOverBlock: the block is smaller than ", length, " values");
  const size_t bytes = length * elementBytes;
  Napi::ArrayBuffer buffer;
  if (pooledSize(bytes)) buffer = externalArrayBuffer(env, block, bytes);
  if (buffer.IsEmpty()) {
    // Small (V8's own memory is as cheap), or external buffers refused: a copy.
    buffer = Napi::ArrayBuffer::New(env, bytes);
    if (bytes > 0) std::memcpy(buffer.Data(), block->data(), bytes);
  }
  napi_value array = nullptr;
  if (napi_create_typedarray(env, type, length, buffer, 0, &array) != napi_ok) {
    throw Napi::Error::New(env, "could not make a typed array of " + std::to_string(length) + " values");
  }
  return Napi::TypedArray(env, array);
}

namespace {

Napi::TypedArray newV8TypedArray(Napi::Env env, DType dtype, size_t length) {
  switch (dtype) {
    case DType::Float32: return Napi::Float32Array::New(env, length);
    case DType::Float64: return Napi::Float64Array::New(env, length);
    case DType::Int32: return Napi::Int32Array::New(env, length);
    case DType::Int64: return Napi::BigInt64Array::New(env, length);
    case DType::Float16:
    case DType::BFloat16: return Napi::Uint16Array::New(env, length);
  }
  failWith(ErrorCode::Internal, "unknown dtype");
}

// `length` values of `dtype` over `buffer`, or V8's own array where `buffer` is empty.
Napi::TypedArray typedArrayOrV8(Napi::Env env, DType dtype, size_t length, Napi::ArrayBuffer buffer) {
  if (buffer.IsEmpty()) return newV8TypedArray(env, dtype, length);
  switch (dtype) {
    case DType::Float32: return typedArrayOver<Napi::Float32Array>(env, buffer, length);
    case DType::Float64: return typedArrayOver<Napi::Float64Array>(env, buffer, length);
    case DType::Int32: return typedArrayOver<Napi::Int32Array>(env, buffer, length);
    case DType::Int64: return typedArrayOver<Napi::BigInt64Array>(env, buffer, length);
    case DType::Float16:
    case DType::BFloat16: return typedArrayOver<Napi::Uint16Array>(env, buffer, length);
  }
  failWith(ErrorCode::Internal, "unknown dtype");
}

}  // namespace

Napi::TypedArray newTypedArray(Napi::Env env, DType dtype, size_t length, std::shared_ptr<Buffer>* owner) {
  const size_t bytes = length * dtypeSize(dtype);
  return typedArrayOrV8(env, dtype, length, pooledSize(bytes) ? pooledArrayBuffer(env, bytes, owner) : Napi::ArrayBuffer());
}

namespace {

// `length` values of `dtype` over `block`, which JS then holds until it collects the
// array; empty without a block, or where external buffers are refused.
Napi::TypedArray typedArrayHolding(Napi::Env env, DType dtype, size_t length, const std::shared_ptr<Buffer>& block) {
  if (!block) return Napi::TypedArray();
  Napi::ArrayBuffer buffer = externalArrayBuffer(env, block, length * dtypeSize(dtype));
  return buffer.IsEmpty() ? Napi::TypedArray() : typedArrayOrV8(env, dtype, length, buffer);
}

}  // namespace

Napi::TypedArray reusedTypedArray(Napi::Env env, DType dtype, size_t length) {
  const size_t bytes = length * dtypeSize(dtype);
  return typedArrayHolding(env, dtype, length, pooledSize(bytes) ? Buffer::reuseHost(bytes) : nullptr);
}

// New host blocks that JS arrays may hold before a copy made now takes V8's memory instead
// (newTypedArrayNow). Blocks come back only through finalizers, which V8 reaches only once
// it collects, and it collects by the memory it knows of: a loop of reads on microtasks
// alone took a new block for every read (2000 reads of 512 KiB held 300 MiB).
constexpr int64_t kNewBlocksHeldByJsBytes = int64_t(64) << 20;

Napi::TypedArray typedArrayAdopting(Napi::Env env, DType dtype, size_t length, const std::shared_ptr<Buffer>& block) {
  // No bound on the blocks JS holds, unlike newTypedArrayNow's: this block is taken
  // already, and a copy would hold as many bytes in V8's memory besides.
  return pooledSize(length * dtypeSize(dtype)) ? typedArrayHolding(env, dtype, length, block) : Napi::TypedArray();
}

Napi::TypedArray newTypedArrayNow(Napi::Env env, DType dtype, size_t length) {
  const size_t bytes = length * dtypeSize(dtype);
  if (pooledSize(bytes)) {
    std::shared_ptr<Buffer> block = Buffer::reuseHost(bytes);
    // A new block only where the cache could keep it once JS lets go: else V8's memory,
    // which glibc reuses, does better (HB_HOST_CACHE_MB=0: a 256 KiB read 28 against 143 us).
    if (!block && bytesHeldByJs.load(std::memory_order_relaxed) < kNewBlocksHeldByJsBytes && Buffer::hostCacheHasRoom(bytes)) {
      block = Buffer::allocate(Device::cpu(), bytes);
    }
    Napi::TypedArray array = typedArrayHolding(env, dtype, length, block);
    if (!array.IsEmpty()) return array;
  }
  Napi::TypedArray array = newV8TypedArray(env, dtype, length);
  // V8's memory for an array this large is new pages (glibc maps it fresh): mapped in one
  // call before the caller's copy rather than one fault per 4 KiB (a 1 MiB read on a
  // 2-vCPU EPYC VM: 480-580 -> 370-450 us).
  if (pooledSize(bytes)) populateForWrite(static_cast<uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset(), bytes);
  return array;
}

void refuseSharedMemory(const Napi::Value& value, const std::string& argument) {
  napi_env env = value.Env();
  napi_value buffer = nullptr;
  bool plain = false;
  if (napi_get_typedarray_info(env, value, nullptr, nullptr, nullptr, &buffer, nullptr) != napi_ok ||
      napi_is_arraybuffer(env, buffer, &plain) != napi_ok || !plain) {
    throw Napi::TypeError::New(value.Env(), argument +
                                                " is backed by a SharedArrayBuffer, which another thread may change while "
                                                "hb-ts reads it; pass a copy in an ordinary typed array (e.g. new "
                                                "Float32Array(shared))");
  }
}

// One napi_get_typedarray_info for kind, place and length (planRun copies dozens of feeds
// per call: a batch-1 serving request spent ~50 us taking them).
TypedArrayValues checkedTypedArray(const Napi::Value& value, const char* argument, const DType* halfAs) {
  Napi::Env env = value.Env();
  const auto wrongKind = [&] {
    return Napi::TypeError::New(env, std::string(argument) +
                                         " must be a Float32Array, Float64Array, Int32Array or BigInt64Array");
  };
  if (!value.IsTypedArray()) throw wrongKind();
  refuseSharedMemory(value, argument);
  napi_typedarray_type type = napi_int8_array;
  size_t length = 0;
  void* data = nullptr;
  napi_value arrayBuffer = nullptr;
  if (napi_get_typedarray_info(env, value, &type, &length, &data, &arrayBuffer, nullptr) != napi_ok) {
    throw Napi::Error::New(env, std::string(argument) + ": could not read the array");
  }
  TypedArrayValues out{DType::Float32, data, length};
  switch (type) {
    case napi_float32_array: out.dtype = DType::Float32; break;
    case napi_float64_array: out.dtype = DType::Float64; break;
    case napi_int32_array: out.dtype = DType::Int32; break;
    case napi_bigint64_array: out.dtype = DType::Int64; break;
    case napi_uint16_array:
      if (halfAs != nullptr) {
        HB_CHECK_CODE(dtypeSize(*halfAs) == 2, Internal, argument, ": a Uint16Array holds 16-bit values, not ",
                      dtypeName(*halfAs));
        out.dtype = *halfAs;
        break;
      }
      [[fallthrough]];
    default: throw wrongKind();
  }
  // The right kind of array in an unusable state, like a disposed tensor: an Error.
  bool detached = false;
  if (napi_is_detached_arraybuffer(env, arrayBuffer, &detached) != napi_ok || detached) {
    throw Napi::Error::New(env, std::string(argument) + "'s ArrayBuffer was transferred or detached");
  }
  return out;
}

Tensor viewTypedArray(const Napi::Value& value, const char* argument, const DType* halfAs) {
  Napi::Env env = value.Env();
  const TypedArrayValues values = checkedTypedArray(value, argument, halfAs);
  Tensor tensor;
  tensor.dtype = values.dtype;
  tensor.shape = {int64_t(values.length)};
  napi_ref ref = nullptr;
  napi_env rawEnv = env;
  if (napi_create_reference(rawEnv, value, 1, &ref) != napi_ok) {
    throw Napi::Error::New(env, std::string(argument) + ": could not reference the array");
  }
  tensor.buffer = Buffer::wrapHost(values.data, values.length * dtypeSize(values.dtype),
                                   [rawEnv, ref] { napi_delete_reference(rawEnv, ref); });
  return tensor;
}

float finiteFloatField(const Napi::Object& spec, const char* key, float fallback, const char* owner) {
  Napi::Value v = spec.Get(key);
  if (v.IsUndefined()) return fallback;
  const double x = numberArgument(v, key);
  if (!std::isfinite(x)) {
    throw Napi::Error::New(spec.Env(), std::string(owner) + ": " + key + " must be a finite number, got " + std::to_string(x));
  }
  return float(x);
}

Tensor borrowTypedArray(const Napi::Value& value, const char* argument) {
  const TypedArrayValues values = checkedTypedArray(value, argument, nullptr);
  const size_t bytes = values.length * dtypeSize(values.dtype);
  return Tensor{Buffer::wrapHost(values.data, bytes, nullptr), values.dtype, {int64_t(values.length)}};
}

Tensor copyTypedArray(const Napi::Value& value, const char* argument) {
  return copyTensor(borrowTypedArray(value, argument), Device::cpu());
}

}  // namespace binding
}  // namespace hb
