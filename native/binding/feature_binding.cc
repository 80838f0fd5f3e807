// Feature-column transforms over whole columns (hb.featureColumn). Synchronous, as a
// column's transform() is: the input arrays are viewed in place for the call, once all
// JS values are fetched (see viewOf). Every check names the column (`what`) before a
// kernel runs.
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "native/binding/arguments.h"
#include "native/binding/exports.h"
#include "native/core/status.h"
#include "native/kernels/feature_transform.h"
#include "native/kernels/vocabulary_table.h"

namespace hb {
namespace binding {

namespace {

// Typed arrays of one kind, viewed for the duration of a synchronous call. Every JS
// value an op reads is fetched before the first view is taken: a getter or Proxy run
// by a later Get() could otherwise detach a buffer already being read. The pointer
// comes from napi_get_typedarray_info; a detached array reads as empty. Arrays over a
// SharedArrayBuffer are refused: another thread could change them between the checks
// and the kernel.
template <typename T>
const T* viewOf(const Napi::Value& value, napi_typedarray_type type, const std::string& what, const char* argument,
                const char* expected, int64_t* length) {
  HB_CHECK_CODE(value.IsTypedArray(), Type, what, ": ", argument, " must be a ", expected);
  refuseSharedMemory(value, what + ": " + argument);
  napi_typedarray_type actual;
  size_t elements = 0;
  void* data = nullptr;
  HB_CHECK_CODE(napi_get_typedarray_info(value.Env(), value, &actual, &elements, &data, nullptr, nullptr) == napi_ok &&
                    actual == type,
                Type, what, ": ", argument, " must be a ", expected);
  *length = int64_t(elements);
  return static_cast<const T*>(data);
}

int64_t integerArgument(const Napi::Value& value, const std::string& what, const char* argument, double min) {
  HB_CHECK_CODE(value.IsNumber(), Type, what, ": ", argument, " must be an integer");
  const double x = value.As<Napi::Number>().DoubleValue();
  HB_CHECK(std::floor(x) == x && x >= min && std::fabs(x) <= 9007199254740991.0, what, ": ", argument,
           " must be an integer >= ", min, ", got ", x);
  return int64_t(x);
}

// Strings (UTF-8 bytes + Int32Array offsets) or integers (Int32Array / BigInt64Array).
FeatureValues valuesArgument(const Napi::Value& values, const Napi::Value& offsets, const std::string& what,
                             const char* argument) {
  FeatureValues v;
  HB_CHECK_CODE(values.IsTypedArray(), Type, what, ": ", argument,
                " must be UTF-8 bytes (Uint8Array with offsets), an Int32Array or a BigInt64Array");
  const napi_typedarray_type type = values.As<Napi::TypedArray>().TypedArrayType();
  int64_t length = 0;
  if (type == napi_uint8_array) {
    v.bytes = viewOf<uint8_t>(values, napi_uint8_array, what, argument, "Uint8Array", &length);
    // An empty (or detached) Uint8Array has no data pointer, but its values are still
    // strings (empty ones): isStrings() must say so, or they would be read as integers.
    static const uint8_t kNoBytes[1] = {0};
    if (v.bytes == nullptr) v.bytes = kNoBytes;
    int64_t offsetCount = 0;
    v.offsets = viewOf<int32_t>(offsets, napi_int32_array, what, (std::string(argument) + " offsets").c_str(),
                                "Int32Array", &offsetCount);
    HB_CHECK(offsetCount >= 1 && v.offsets[0] == 0 && v.offsets[offsetCount - 1] == length, what, ": ", argument,
             " offsets must start at 0 and end at the byte length ", length);
    for (int64_t i = 1; i < offsetCount; ++i) {
      HB_CHECK(v.offsets[i] >= v.offsets[i - 1], what, ": ", argument, " offsets decrease at value ", i - 1);
    }
    v.count = offsetCount - 1;
  } else if (type == napi_int32_array) {
    v.ints32 = viewOf<int32_t>(values, type, what, argument, "Int32Array", &v.count);
  } else if (type == napi_bigint64_array) {
    v.ints64 = viewOf<int64_t>(values, type, what, argument, "BigInt64Array", &v.count);
  } else {
    failWith(ErrorCode::Type, what, ": ", argument,
             " must be UTF-8 bytes (Uint8Array with offsets), an Int32Array or a BigInt64Array");
  }
  return v;
}

// rows + 1 splits from 0 to `count`, never decreasing.
const int32_t* rowSplitsArgument(const Napi::Value& value, int64_t count, const std::string& what, int64_t* rows) {
  int64_t length = 0;
  const int32_t* splits = viewOf<int32_t>(value, napi_int32_array, what, "rowSplits", "Int32Array", &length);
  HB_CHECK(length >= 1 && splits[0] == 0, what, ": rowSplits must start at 0");
  for (int64_t i = 1; i < length; ++i) {
    HB_CHECK(splits[i] >= splits[i - 1], what, ": rowSplits decrease at row ", i - 1, " (", splits[i - 1], " then ",
             splits[i], ")");
  }
  HB_CHECK(splits[length - 1] == count, what, ": rowSplits end at ", splits[length - 1], " but there are ", count,
           " values");
  *rows = length - 1;
  return splits;
}

Napi::BigInt64Array int64Result(Napi::Env env, int64_t n) { return Napi::BigInt64Array::New(env, size_t(n)); }

Napi::Int32Array int32Result(Napi::Env env, int64_t n) { return Napi::Int32Array::New(env, size_t(n)); }

// featureCheckRowSplits(what, rowSplits, count): throws unless rowSplits start at 0,
// never decrease and end at `count` (a ragged input's splits must describe its values).
Napi::Value featureCheckRowSplits(const Napi::CallbackInfo& info) {
  const std::string what = stringArgument(info[0], "what");
  const int64_t count = integerArgument(info[2], what, "count", 0);
  int64_t rows = 0;
  rowSplitsArgument(info[1], count, what, &rows);
  return info.Env().Undefined();
}

// featureDropMissing(what, values, offsets, valid, rowSplits, weights, dropIgnoreValues)
//   -> null when every value is present, else { values, offsets?, rowSplits, weights? }
Napi::Value featureDropMissing(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string what = stringArgument(info[0], "what");
  const FeatureValues values = valuesArgument(info[1], info[2], what, "values");
  const uint8_t* valid = nullptr;
  if (!info[3].IsUndefined() && !info[3].IsNull()) {
    int64_t length = 0;
    valid = viewOf<uint8_t>(info[3], napi_uint8_array, what, "valid", "Uint8Array", &length);
    HB_CHECK(length == values.count, what, ": valid has ", length, " flags for ", values.count, " values");
  }
  int64_t rows = 0;
  const int32_t* splits = rowSplitsArgument(info[4], values.count, what, &rows);
  const float* weights = nullptr;
  if (!info[5].IsUndefined() && !info[5].IsNull()) {
    int64_t length = 0;
    weights = viewOf<float>(info[5], napi_float32_array, what, "weights", "Float32Array", &length);
    HB_CHECK(length == values.count, what, ": weights has ", length, " values for ", values.count, " ids");
  }
  const bool dropIgnoreValues = info[6].ToBoolean();

  std::vector<uint8_t> keep(size_t(values.count));
  const int64_t kept = markPresentValues(values, valid, dropIgnoreValues, keep.data());
  if (kept == values.count) return env.Null();
  Napi::Object out = Napi::Object::New(env);
  Napi::Int32Array outSplits = int32Result(env, rows + 1);
  keptRowSplits(splits, rows, keep.data(), outSplits.Data());
  out.Set("rowSplits", outSplits);
  if (values.isStrings()) {
    int64_t bytes = 0;
    for (int64_t i = 0; i < values.count; ++i) bytes += keep[i] ? values.byteLength(i) : 0;
    Napi::Uint8Array outBytes = Napi::Uint8Array::New(env, size_t(bytes));
    Napi::Int32Array outOffsets = int32Result(env, kept + 1);
    keepStrings(values, keep.data(), outBytes.Data(), outOffsets.Data());
    out.Set("values", outBytes);
    out.Set("offsets", outOffsets);
  } else {
    Napi::BigInt64Array outInts = int64Result(env, kept);
    keepInts(values, keep.data(), outInts.Data());
    out.Set("values", outInts);
  }
  if (weights) {
    Napi::Float32Array outWeights = Napi::Float32Array::New(env, size_t(kept));
    keepFloats(weights, values.count, keep.data(), outWeights.Data());
    out.Set("weights", outWeights);
  }
  return out;
}

// featureIdentity(what, ints, numBuckets, defaultValue | undefined) -> BigInt64Array
Napi::Value featureIdentity(const Napi::CallbackInfo& info) {
  const std::string what = stringArgument(info[0], "what");
  const FeatureValues values = valuesArgument(info[1], info.Env().Undefined(), what, "values");
  HB_CHECK_CODE(!values.isStrings(), Type, what, ": identity ids must be integers, not strings");
  const int64_t numBuckets = integerArgument(info[2], what, "numBuckets", 1);
  const bool hasDefault = !info[3].IsUndefined();
  const int64_t defaultValue = hasDefault ? integerArgument(info[3], what, "defaultValue", 0) : 0;
  HB_CHECK(!hasDefault || defaultValue < numBuckets, what, ": defaultValue ", defaultValue,
           " must be in [0, numBuckets = ", numBuckets, ")");
  if (!hasDefault) {
    // TF 1.15 asserts 0 <= id < num_buckets when there is no default_value.
    for (int64_t i = 0; i < values.count; ++i) {
      const int64_t id = values.intAt(i);
      HB_CHECK(id >= 0 && id < numBuckets, what, ": id ", id, " (value ", i, ") is outside [0, ", numBuckets,
               "); give the column a defaultValue to map such ids to it");
    }
  }
  Napi::BigInt64Array out = int64Result(info.Env(), values.count);
  identityIds(values, hasDefault, numBuckets, defaultValue, out.Data());
  return out;
}

// featureRawIds(what, ints) -> BigInt64Array: the integers as int64 ids, any value (a
// dynamic table's keys).
Napi::Value featureRawIds(const Napi::CallbackInfo& info) {
  const std::string what = stringArgument(info[0], "what");
  const FeatureValues values = valuesArgument(info[1], info.Env().Undefined(), what, "values");
  HB_CHECK_CODE(!values.isStrings(), Type, what, ": ids must be integers, not strings");
  Napi::BigInt64Array out = int64Result(info.Env(), values.count);
  for (int64_t i = 0; i < values.count; ++i) out.Data()[i] = values.intAt(i);
  return out;
}

// featureBucketize(what, Float32Array values, sourceDim, Float32Array boundaries) -> BigInt64Array
Napi::Value featureBucketize(const Napi::CallbackInfo& info) {
  const std::string what = stringArgument(info[0], "what");
  int64_t count = 0;
  const float* values = viewOf<float>(info[1], napi_float32_array, what, "values", "Float32Array", &count);
  const int64_t sourceDim = integerArgument(info[2], what, "sourceDim", 1);
  int64_t boundaryCount = 0;
  const float* boundaries = viewOf<float>(info[3], napi_float32_array, what, "boundaries", "Float32Array", &boundaryCount);
  HB_CHECK(count % sourceDim == 0, what, ": ", count, " values do not make rows of ", sourceDim);
  HB_CHECK(boundaryCount >= 1, what, ": boundaries must not be empty");
  for (int64_t i = 0; i < boundaryCount; ++i) {
    HB_CHECK(std::isfinite(boundaries[i]) && (i == 0 || boundaries[i] >= boundaries[i - 1]), what,
             ": boundaries must be finite and sorted (at ", i, ")");
  }
  for (int64_t i = 0; i < count; ++i) {
    HB_CHECK(!std::isnan(values[i]), what, ": value ", i % sourceDim, " of row ", i / sourceDim, " is NaN");
  }
  Napi::BigInt64Array out = int64Result(info.Env(), count);
  bucketizeIds(values, count, sourceDim, boundaries, boundaryCount, out.Data());
  return out;
}

// featureCross(what, inputs: Array<[values, offsets | undefined, rowSplits]>, numBuckets, hashKey: bigint)
//   -> { ids: BigInt64Array, rowSplits: Int32Array }
Napi::Value featureCross(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string what = stringArgument(info[0], "what");
  HB_CHECK_CODE(info[1].IsArray(), Type, what, ": inputs must be an array");
  Napi::Array list = info[1].As<Napi::Array>();
  HB_CHECK(list.Length() >= 1, what, ": nothing to cross");
  // Fetch every value before viewing any (see viewOf).
  std::vector<std::array<Napi::Value, 3>> triples(list.Length());
  for (uint32_t k = 0; k < list.Length(); ++k) {
    Napi::Value item = list.Get(k);
    HB_CHECK_CODE(item.IsArray(), Type, what, ": inputs[", k, "] must be [values, offsets, rowSplits]");
    HB_CHECK(item.As<Napi::Array>().Length() == 3, what, ": inputs[", k, "] must be [values, offsets, rowSplits]");
    Napi::Array triple = item.As<Napi::Array>();
    for (uint32_t j = 0; j < 3; ++j) triples[k][j] = triple.Get(j);
  }
  const int64_t numBuckets = integerArgument(info[2], what, "numBuckets", 0);
  bool lossless = true;
  HB_CHECK_CODE(info[3].IsBigInt(), Type, what, ": hashKey must be a bigint");
  const uint64_t hashKey = info[3].As<Napi::BigInt>().Uint64Value(&lossless);
  HB_CHECK(lossless, what, ": hashKey must fit in 64 bits");
  std::vector<CrossInput> inputs(list.Length());
  int64_t rows = -1;
  for (size_t k = 0; k < triples.size(); ++k) {
    const std::string name = what + " input " + std::to_string(k);
    inputs[k].values = valuesArgument(triples[k][0], triples[k][1], name, "values");
    int64_t inputRows = 0;
    inputs[k].rowSplits = rowSplitsArgument(triples[k][2], inputs[k].values.count, name, &inputRows);
    HB_CHECK(rows < 0 || inputRows == rows, what, ": input ", k, " has ", inputRows, " rows but input 0 has ", rows);
    rows = inputRows;
  }

  Napi::Int32Array splits = int32Result(env, rows + 1);
  const int64_t total = crossRowSplits(inputs.data(), int64_t(inputs.size()), rows, splits.Data());
  HB_CHECK(total <= 0x7fffffff, what, ": the cross would make more than 2^31 - 1 ids in one batch");
  Napi::BigInt64Array ids = int64Result(env, total);
  crossHashedIds(inputs.data(), int64_t(inputs.size()), rows, uint64_t(numBuckets), hashKey, splits.Data(), ids.Data());
  Napi::Object out = Napi::Object::New(env);
  out.Set("ids", ids);
  out.Set("rowSplits", splits);
  return out;
}

// featureIndicator(what, BigInt64Array ids, rowSplits, Float32Array weights | undefined, numBuckets)
//   -> Float32Array [rows * numBuckets]
Napi::Value featureIndicator(const Napi::CallbackInfo& info) {
  const std::string what = stringArgument(info[0], "what");
  int64_t count = 0;
  const int64_t* ids = viewOf<int64_t>(info[1], napi_bigint64_array, what, "ids", "BigInt64Array", &count);
  int64_t rows = 0;
  const int32_t* splits = rowSplitsArgument(info[2], count, what, &rows);
  const float* weights = nullptr;
  if (!info[3].IsUndefined() && !info[3].IsNull()) {
    int64_t length = 0;
    weights = viewOf<float>(info[3], napi_float32_array, what, "weights", "Float32Array", &length);
    HB_CHECK(length == count, what, ": weights has ", length, " values for ", count, " ids");
  }
  const int64_t numBuckets = integerArgument(info[4], what, "numBuckets", 1);
  HB_CHECK(rows == 0 || numBuckets <= (int64_t(1) << 31) / rows, what, ": an indicator of ", rows, " x ", numBuckets,
           " floats is too large (more than 2^31 values)");
  Napi::Float32Array out = Napi::Float32Array::New(info.Env(), size_t(rows * numBuckets));  // zero-filled
  indicatorSums(ids, splits, rows, weights, numBuckets, out.Data());
  return out;
}

// featureConcatRows(parts: Float32Array[], widths: number[], rows) -> Float32Array [rows, sum widths]
Napi::Value featureConcatRows(const Napi::CallbackInfo& info) {
  const std::string what = "DenseFeatures";
  HB_CHECK_CODE(info[0].IsArray() && info[1].IsArray(), Type, what, ": parts and widths must be arrays");
  Napi::Array partList = info[0].As<Napi::Array>();
  Napi::Array widthList = info[1].As<Napi::Array>();
  HB_CHECK(partList.Length() == widthList.Length(), what, ": ", partList.Length(), " parts but ", widthList.Length(), " widths");
  const int64_t rows = integerArgument(info[2], what, "rows", 0);
  // Fetch every value before viewing any (see viewOf); bound the sizes before multiplying.
  std::vector<Napi::Value> partValues(partList.Length());
  std::vector<int64_t> widths(partList.Length());
  int64_t width = 0;
  for (uint32_t p = 0; p < partList.Length(); ++p) {
    partValues[p] = partList.Get(p);
    widths[p] = integerArgument(widthList.Get(p), what, "width", 0);
    width += widths[p];
    HB_CHECK(width <= 0x7fffffff && (rows == 0 || width <= 0x7fffffff / rows), what, ": the output of ", rows,
             " rows and width ", width, " is too large (more than 2^31 values)");
  }
  std::vector<const float*> parts(partValues.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    int64_t length = 0;
    parts[p] = viewOf<float>(partValues[p], napi_float32_array, what, "part", "Float32Array", &length);
    HB_CHECK(length == rows * widths[p], what, ": part ", p, " has ", length, " values, expected ", rows, " x ", widths[p]);
  }
  Napi::Float32Array out = Napi::Float32Array::New(info.Env(), size_t(rows * width));
  concatRows(parts.data(), widths.data(), int64_t(parts.size()), rows, out.Data());
  return out;
}

// featureRegularSplits(rows, width) -> Int32Array [0, width, 2 width, ...]: the splits of a
// dense feature, made here so that no per-row loop runs in JS.
Napi::Value featureRegularSplits(const Napi::CallbackInfo& info) {
  const std::string what = "feature rows";
  const int64_t rows = integerArgument(info[0], what, "rows", 0);
  const int64_t width = integerArgument(info[1], what, "width", 0);
  HB_CHECK(rows < 0x7fffffff && (width == 0 || rows <= 0x7fffffff / width), what, ": ", rows, " rows of ", width,
           " values exceed 2^31 - 1 values");
  Napi::Int32Array splits = int32Result(info.Env(), rows + 1);
  for (int64_t r = 0; r <= rows; ++r) splits[size_t(r)] = int32_t(r * width);
  return splits;
}

// featureFirstNaN(Float32Array) -> index of the first NaN, or -1.
Napi::Value featureFirstNaN(const Napi::CallbackInfo& info) {
  int64_t count = 0;
  const float* values = viewOf<float>(info[0], napi_float32_array, "numeric feature", "values", "Float32Array", &count);
  for (int64_t i = 0; i < count; ++i) {
    if (std::isnan(values[i])) return Napi::Number::New(info.Env(), double(i));
  }
  return Napi::Number::New(info.Env(), -1);
}

// new VocabularyTable(what, keys, offsets | undefined, numOovBuckets, defaultValue)
class VocabularyTableHandle : public Napi::ObjectWrap<VocabularyTableHandle> {
 public:
  static void define(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(env, "VocabularyTable",
                                     {InstanceAccessor<&VocabularyTableHandle::size>("size"),
                                      InstanceAccessor<&VocabularyTableHandle::stringKeys>("stringKeys"),
                                      InstanceMethod<&VocabularyTableHandle::lookup>("lookup")});
    exports.Set("VocabularyTable", cls);
  }

  explicit VocabularyTableHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VocabularyTableHandle>(info) {
    try {
      what_ = stringArgument(info[0], "what");
      const FeatureValues keys = valuesArgument(info[1], info[2], what_, "vocabulary");
      HB_CHECK(keys.count >= 1, what_, ": the vocabulary must not be empty");
      const int64_t numOov = integerArgument(info[3], what_, "numOovBuckets", 0);
      const int64_t defaultValue = integerArgument(info[4], what_, "defaultValue", -9007199254740991.0);
      table_ = keys.isStrings() ? VocabularyTable::fromStrings(keys, numOov, defaultValue, what_)
                                : VocabularyTable::fromInts(keys, numOov, defaultValue, what_);
    } catch (const Napi::Error& e) {
      ensureErrorCode(e);
      throw;
    } catch (const Error& e) {
      // Constructors are not guarded: keep the code (and so the class) here.
      throw jsError(info.Env(), e.what(), e.code());
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
  }

 private:
  Napi::Value size(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), double(table_->size())); }
  Napi::Value stringKeys(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), table_->hasStringKeys()); }

  Napi::Value lookup(const Napi::CallbackInfo& info) {
    try {
      const FeatureValues values = valuesArgument(info[0], info[1], what_, "values");
      HB_CHECK_CODE(values.isStrings() == table_->hasStringKeys(), Type, what_, ": the vocabulary holds ",
                    table_->hasStringKeys() ? "strings" : "integers", " but the feature gives ",
                    values.isStrings() ? "strings" : "integers");
      Napi::BigInt64Array out = int64Result(info.Env(), values.count);
      table_->lookup(values, out.Data());
      return out;
    } catch (const Napi::Error& e) {
      ensureErrorCode(e);
      throw;
    } catch (const Error& e) {
      throw jsError(info.Env(), e.what(), e.code());
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
  }

  std::string what_;
  std::unique_ptr<VocabularyTable> table_;
};

}  // namespace

void exportFeature(Napi::Env env, Napi::Object exports) {
  exports.Set("featureCheckRowSplits", Napi::Function::New(env, guarded<featureCheckRowSplits>, "featureCheckRowSplits"));
  exports.Set("featureDropMissing", Napi::Function::New(env, guarded<featureDropMissing>, "featureDropMissing"));
  exports.Set("featureIdentity", Napi::Function::New(env, guarded<featureIdentity>, "featureIdentity"));
  exports.Set("featureRawIds", Napi::Function::New(env, guarded<featureRawIds>, "featureRawIds"));
  exports.Set("featureBucketize", Napi::Function::New(env, guarded<featureBucketize>, "featureBucketize"));
  exports.Set("featureCross", Napi::Function::New(env, guarded<featureCross>, "featureCross"));
  exports.Set("featureIndicator", Napi::Function::New(env, guarded<featureIndicator>, "featureIndicator"));
  exports.Set("featureConcatRows", Napi::Function::New(env, guarded<featureConcatRows>, "featureConcatRows"));
  exports.Set("featureRegularSplits", Napi::Function::New(env, guarded<featureRegularSplits>, "featureRegularSplits"));
  exports.Set("featureFirstNaN", Napi::Function::New(env, guarded<featureFirstNaN>, "featureFirstNaN"));
  VocabularyTableHandle::define(env, exports);
}

}  // namespace binding
}  // namespace hb
