// Dataset.synthetic's generator (native/data/synthetic_rows.h), called synchronously by a
// reader thread (lib/data/synthetic_reader.ts) with the arrays of one block, which it
// allocated and then transfers to the main thread. Every argument is checked here, the
// arrays' lengths against what the rows can write and that no two share memory, before a
// row is generated.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "native/binding/arguments.h"
#include "native/binding/exports.h"
#include "native/core/status.h"
#include "native/data/synthetic_rows.h"

namespace hb {
namespace binding {

namespace {

constexpr const char* kWhere = "syntheticRows";
constexpr double kMaxSafeInteger = 9007199254740991.0;

// An integer in [low, high], or an Error naming `argument`.
double integerIn(const Napi::Value& value, const std::string& argument, double low, double high) {
  const double x = numberArgument(value, argument.c_str());
  HB_CHECK_CODE(std::isfinite(x) && std::floor(x) == x && x >= low && x <= high, OutOfRange, kWhere, ": ", argument,
                " must be an integer in [", low, ", ", high, "], got ", x);
  return x;
}

Napi::Array arrayArgument(const Napi::Value& value, const std::string& argument, size_t length) {
  HB_CHECK_CODE(value.IsArray(), Type, kWhere, ": ", argument, " must be an array");
  Napi::Array array = value.As<Napi::Array>();
  HB_CHECK_CODE(array.Length() == length, Shape, kWhere, ": ", argument, " must have ", length, " entries, got ",
                array.Length());
  return array;
}

// An output array, checked: a typed array of `dtype` with at least `length` values.
struct OutputArray {
  std::string name;
  char* data = nullptr;
  size_t bytes = 0;
};

OutputArray outputArray(const Napi::Value& value, const std::string& argument, DType dtype, double length) {
  const std::string name = std::string(kWhere) + ": " + argument;
  const TypedArrayValues values = checkedTypedArray(value, name.c_str());
  HB_CHECK_CODE(values.dtype == dtype, Type, name, " must be a ", dtypeName(dtype), " array, got ", dtypeName(values.dtype));
  HB_CHECK_CODE(double(values.length) >= length, Shape, name, " has ", values.length, " values; the rows need ", length);
  return {argument, static_cast<char*>(values.data), values.length * dtypeSize(dtype)};
}

// The generator reads back what it wrote (each row's first id is the row splits' last
// entry), so the outputs must not share memory.
void refuseOverlaps(std::vector<OutputArray> arrays) {
  std::sort(arrays.begin(), arrays.end(), [](const OutputArray& a, const OutputArray& b) { return a.data < b.data; });
  for (size_t i = 1; i < arrays.size(); ++i) {
    const OutputArray& before = arrays[i - 1];
    HB_CHECK_CODE(before.bytes == 0 || arrays[i].bytes == 0 || before.data + before.bytes <= arrays[i].data, InvalidArgument,
                  kWhere, ": ", before.name, " and ", arrays[i].name, " share memory; give each output its own array");
  }
}

// The entries of a JS array, read now (an entry may be a getter that runs JS).
std::vector<Napi::Value> entriesOf(const Napi::Value& value, const std::string& argument, size_t length) {
  Napi::Array array = arrayArgument(value, argument, length);
  std::vector<Napi::Value> entries;
  for (uint32_t i = 0; i < length; ++i) entries.push_back(array.Get(i));
  return entries;
}

SyntheticSpec specArgument(const Napi::Value& value) {
  HB_CHECK_CODE(value.IsObject(), Type, kWhere, ": spec must be { seed, numDense, tables }");
  Napi::Object o = value.As<Napi::Object>();
  SyntheticSpec spec;
  spec.seed = uint32_t(integerIn(o.Get("seed"), "spec.seed", 0, 4294967295.0));
  spec.numDense = int64_t(integerIn(o.Get("numDense"), "spec.numDense", 0, 1 << 20));
  HB_CHECK_CODE(o.Get("tables").IsArray(), Type, kWhere, ": spec.tables must be an array");
  Napi::Array tables = o.Get("tables").As<Napi::Array>();
  for (uint32_t t = 0; t < tables.Length(); ++t) {
    const std::string at = "spec.tables[" + std::to_string(t) + "]";
    HB_CHECK_CODE(tables.Get(t).IsObject(), Type, kWhere, ": ", at, " must be { vocabularySize, hotness, alpha }");
    Napi::Object table = tables.Get(t).As<Napi::Object>();
    SyntheticTableSpec s;
    s.vocabularySize = uint64_t(integerIn(table.Get("vocabularySize"), at + ".vocabularySize", 1, 4503599627370496.0));
    Napi::Array hotness = arrayArgument(table.Get("hotness"), at + ".hotness", 2);
    s.hotnessLow = int64_t(integerIn(hotness.Get(0u), at + ".hotness[0]", 0, 2147483647.0));
    s.hotnessHigh = int64_t(integerIn(hotness.Get(1u), at + ".hotness[1]", double(s.hotnessLow), 2147483647.0));
    s.alpha = numberArgument(table.Get("alpha"), (at + ".alpha").c_str());
    HB_CHECK_CODE(std::isfinite(s.alpha) && s.alpha >= 0, OutOfRange, kWhere, ": ", at, ".alpha must be a number >= 0, got ",
                  s.alpha);
    spec.tables.push_back(s);
  }
  return spec;
}

// syntheticRows(spec, firstRow, n, { label, dense, splits, ids }): rows [firstRow,
// firstRow + n) written into the arrays (label and each dense column: n Float32 values;
// each table's splits: n + 1 Int32; its ids: n * hotness[1] BigInt64 at least).
Napi::Value syntheticRowsBinding(const Napi::CallbackInfo& info) {
  // Every JS value is read first: reading one can run JS (a getter) that resizes, detaches
  // or swaps an array already checked. The arrays are checked after that, when no JS runs
  // until the rows are written.
  const SyntheticSpec spec = specArgument(info[0]);
  const double firstRow = integerIn(info[1], "firstRow", 0, kMaxSafeInteger);
  const double n = integerIn(info[2], "n", 0, kMaxSafeInteger - firstRow);
  HB_CHECK_CODE(info[3].IsObject(), Type, kWhere, ": outputs must be { label, dense, splits, ids }");
  Napi::Object outputs = info[3].As<Napi::Object>();
  const Napi::Value labelValue = outputs.Get("label");
  const std::vector<Napi::Value> denseValues = entriesOf(outputs.Get("dense"), "outputs.dense", size_t(spec.numDense));
  const std::vector<Napi::Value> splitValues = entriesOf(outputs.Get("splits"), "outputs.splits", spec.tables.size());
  const std::vector<Napi::Value> idValues = entriesOf(outputs.Get("ids"), "outputs.ids", spec.tables.size());

  std::vector<OutputArray> arrays;
  SyntheticBlock block;
  arrays.push_back(outputArray(labelValue, "outputs.label", DType::Float32, n));
  block.label = reinterpret_cast<float*>(arrays.back().data);
  for (size_t j = 0; j < denseValues.size(); ++j) {
    arrays.push_back(outputArray(denseValues[j], "outputs.dense[" + std::to_string(j) + "]", DType::Float32, n));
    block.dense.push_back(reinterpret_cast<float*>(arrays.back().data));
  }
  for (size_t t = 0; t < spec.tables.size(); ++t) {
    // Row splits are int32: a block's ids must fit them.
    const double most = n * double(spec.tables[t].hotnessHigh);
    HB_CHECK_CODE(most <= 2147483647.0, OutOfRange, kWhere, ": ", n, " rows of up to ", spec.tables[t].hotnessHigh,
                  " ids (spec.tables[", t, "].hotness[1]) make more than 2^31 - 1 ids");
    arrays.push_back(outputArray(splitValues[t], "outputs.splits[" + std::to_string(t) + "]", DType::Int32, n + 1));
    block.splits.push_back(reinterpret_cast<int32_t*>(arrays.back().data));
    arrays.push_back(outputArray(idValues[t], "outputs.ids[" + std::to_string(t) + "]", DType::Int64, most));
    block.ids.push_back(reinterpret_cast<int64_t*>(arrays.back().data));
  }
  refuseOverlaps(arrays);
  SyntheticRows(spec).generate(uint64_t(firstRow), int64_t(n), block);
  return info.Env().Undefined();
}

}  // namespace

void exportSyntheticRows(Napi::Env env, Napi::Object exports) {
  exports.Set("syntheticRows", Napi::Function::New(env, guarded<syntheticRowsBinding>, "syntheticRows"));
}

}  // namespace binding
}  // namespace hb
