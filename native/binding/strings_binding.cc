// hb.strings.fingerprint64 and hb.strings.toHashBucketFast. Synchronous, as their
// TensorFlow namesakes are in eager mode; on the CPU they hash on the JS thread without
// waiting for the thread pool (which a running training step may hold). On CUDA they
// use the JS thread's stream, not the executor's queue, and wait for their own kernels.
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "native/binding/arguments.h"
#include "native/binding/exports.h"
#include "native/core/device.h"
#include "native/core/status.h"
#include "native/kernels/decimal_digits.h"
#include "native/kernels/string_hash.h"

namespace hb {
namespace binding {

namespace {

uint64_t bucketsArgument(const Napi::Value& value, const char* op) {
  if (value.IsUndefined()) return 0;
  bool lossless = true;
  if (value.IsBigInt()) {
    const int64_t n = value.As<Napi::BigInt>().Int64Value(&lossless);
    HB_CHECK(lossless && n > 0, op, ": numBuckets must be a positive integer below 2^63");
    return uint64_t(n);
  }
  const double n = numberArgument(value, "numBuckets");
  HB_CHECK(n >= 1 && n <= 9007199254740991.0 && std::floor(n) == n, op,
           ": numBuckets must be a positive integer, got ", n);
  return uint64_t(n);
}

// A JS array of strings, numbers and bigints as one UTF-8 column: strings give their
// UTF-8 bytes, integers their decimal digits (TF's hash-bucket columns on integer input).
// Built whole, and so checked whole, before any hashing on either device.
void encodeJsArray(const Napi::Array& array, std::vector<uint8_t>* bytes, std::vector<int64_t>* offsets, const char* op) {
  Napi::Env env = array.Env();
  const uint32_t n = array.Length();
  offsets->assign(1, 0);
  offsets->reserve(size_t(n) + 1);
  for (uint32_t i = 0; i < n; ++i) {
    Napi::Value v = array.Get(i);
    if (v.IsString()) {
      size_t length = 0;
      napi_get_value_string_utf8(env, v, nullptr, 0, &length);
      const size_t start = bytes->size();
      bytes->resize(start + length + 1);  // N-API writes a terminator too
      napi_get_value_string_utf8(env, v, reinterpret_cast<char*>(bytes->data() + start), length + 1, &length);
      bytes->resize(start + length);
    } else {
      int64_t x = 0;
      if (v.IsBigInt()) {
        bool lossless = true;
        x = v.As<Napi::BigInt>().Int64Value(&lossless);
        HB_CHECK(lossless, op, ": values[", i, "] is a bigint outside int64");
      } else if (v.IsNumber()) {
        const double d = v.As<Napi::Number>().DoubleValue();
        // A fraction is a float where strings and integers go (a wrong type); an integer
        // beyond 2^53 is only a value a double cannot hold exactly.
        HB_CHECK_CODE(std::floor(d) == d, Type, op, ": values[", i, "] = ", d,
                      " is not an integer; only strings and integers can be hashed");
        HB_CHECK(std::fabs(d) <= 9007199254740991.0, op, ": values[", i, "] = ", d,
                 " is not an integer; only strings and integers can be hashed");
        x = int64_t(d);
      } else {
        failWith(ErrorCode::Type, op, ": values[", i, "] must be a string, an integer or a bigint");
      }
      char digits[kMaxDecimalChars];
      const int length = decimalDigits(x, digits);
      bytes->insert(bytes->end(), digits, digits + length);
    }
    offsets->push_back(int64_t(bytes->size()));
  }
}

void hashByteRanges(const Device& device, const uint8_t* bytes, int64_t byteCount, const int64_t* offsets, int64_t n,
                    uint64_t numBuckets, uint64_t* out) {
  if (device.isCuda()) cuda::fingerprintByteRanges(device.index, bytes, byteCount, offsets, n, numBuckets, out);
  else fingerprintByteRanges(bytes, offsets, n, numBuckets, out);
}

// stringsFingerprint(values, offsets | undefined, numBuckets | undefined, device | undefined)
//   values: string/number/bigint array, BigInt64Array, Int32Array, or UTF-8 bytes
//   (Uint8Array) with offsets (Int32Array or BigInt64Array, n + 1 of them).
//   device: 'cpu' (the default), 'cuda' or 'cuda:N'; inputs and results stay host arrays.
// Returns BigUint64Array fingerprints, or BigInt64Array buckets when numBuckets is given.
Napi::Value stringsFingerprint(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint64_t numBuckets = bucketsArgument(info[2], info[2].IsUndefined() ? "fingerprint64" : "toHashBucketFast");
  const char* op = numBuckets ? "toHashBucketFast" : "fingerprint64";
  const std::string deviceArgument = std::string(op) + ": options.device";
  const Device device = info[3].IsUndefined()
                            ? Device::cpu()
                            : parseUsableDevice(stringArgument(info[3], deviceArgument.c_str()), deviceArgument.c_str());
  std::vector<uint64_t> hashes;
  Napi::Value values = info[0];
  if (values.IsArray()) {
    std::vector<uint8_t> bytes;
    std::vector<int64_t> ends;
    encodeJsArray(values.As<Napi::Array>(), &bytes, &ends, op);
    const int64_t count = int64_t(ends.size()) - 1;
    hashes.resize(size_t(count));
    hashByteRanges(device, bytes.data(), int64_t(bytes.size()), ends.data(), count, numBuckets, hashes.data());
  } else if (values.IsTypedArray() && values.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
    refuseSharedMemory(values, std::string(op) + ": bytes");
    Napi::Uint8Array bytes = values.As<Napi::Uint8Array>();
    HB_CHECK_CODE(info[1].IsTypedArray(), Type, op,
                  ": UTF-8 bytes need offsets (an Int32Array or BigInt64Array of n + 1 values)");
    Tensor offsets = viewTypedArray(info[1], (std::string(op) + ": offsets").c_str());
    HB_CHECK_CODE(offsets.dtype == DType::Int32 || offsets.dtype == DType::Int64, Type, op,
                  ": offsets must be an Int32Array or BigInt64Array, got ", dtypeName(offsets.dtype));
    const int64_t count = offsets.size() - 1;
    HB_CHECK(count >= 0, op, ": offsets must hold at least one value");
    std::vector<int64_t> ends(size_t(count + 1));
    for (int64_t i = 0; i <= count; ++i) {
      ends[i] = offsets.dtype == DType::Int32 ? offsets.data<int32_t>()[i] : offsets.data<int64_t>()[i];
      HB_CHECK(ends[i] >= 0 && ends[i] <= int64_t(bytes.ByteLength()), op, ": offsets[", i, "] = ", ends[i],
               " is outside the ", bytes.ByteLength(), " bytes given");
      HB_CHECK(i == 0 || ends[i] >= ends[i - 1], op, ": offsets must be non-decreasing, but offsets[", i, "] = ",
               ends[i], " < offsets[", i - 1, "] = ", ends[i - 1]);
    }
    hashes.resize(size_t(count));
    hashByteRanges(device, bytes.Data(), int64_t(bytes.ByteLength()), ends.data(), count, numBuckets, hashes.data());
  } else if (values.IsTypedArray()) {
    Tensor ints = viewTypedArray(values, (std::string(op) + ": values").c_str());
    HB_CHECK_CODE(ints.dtype == DType::Int64 || ints.dtype == DType::Int32, Type, op,
                  ": typed-array values must hold integers (BigInt64Array, Int32Array) or UTF-8 bytes (Uint8Array), got ",
                  dtypeName(ints.dtype));
    const bool int64 = ints.dtype == DType::Int64;
    hashes.resize(size_t(ints.size()));
    if (device.isCuda()) {
      cuda::fingerprintDecimal(device.index, ints.buffer->data(), int64, ints.size(), numBuckets, hashes.data());
    } else if (int64) {
      fingerprintDecimal(ints.data<int64_t>(), ints.size(), numBuckets, hashes.data());
    } else {
      fingerprintDecimal(ints.data<int32_t>(), ints.size(), numBuckets, hashes.data());
    }
  } else {
    failWith(ErrorCode::Type, op,
             ": values must be an array of strings or integers, an integer typed array, or UTF-8 bytes with offsets");
  }
  if (numBuckets == 0) {
    auto out = Napi::TypedArrayOf<uint64_t>::New(env, hashes.size(), napi_biguint64_array);
    std::copy(hashes.begin(), hashes.end(), out.Data());
    return out;
  }
  auto out = Napi::BigInt64Array::New(env, hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) out[i] = int64_t(hashes[i]);  // < numBuckets <= 2^63 - 1
  return out;
}

}  // namespace

void exportStrings(Napi::Env env, Napi::Object exports) {
  exports.Set("stringsFingerprint", Napi::Function::New(env, guarded<stringsFingerprint>, "stringsFingerprint"));
}

}  // namespace binding
}  // namespace hb
