// Dataset.synthetic's generator (native/data/synthetic_rows.h), called synchronously by a
// reader thread (lib/data/synthetic_reader.ts) with the arrays of one block, which it
// allocated and then transfers to the main thread. Every argument is checked here, the
// arrays' lengths against what the rows can write, before a row is generated.
#include <napi.h>

#include <cmath>
#include <string>

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

// A typed array of `dtype` with at least `length` values.
void* outputArray(const Napi::Value& value, const std::string& argument, DType dtype, double length) {
  const std::string name = std::string(kWhere) + ": " + argument;
  const TypedArrayValues values = checkedTypedArray(value, name.c_str());
  HB_CHECK_CODE(values.dtype == dtype, Type, name, " must be a ", dtypeName(dtype), " array, got ", dtypeName(values.dtype));
  HB_CHECK_CODE(double(values.length) >= length, Shape, name, " has ", values.length, " values; the rows need ", length);
  return values.data;
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
  const SyntheticSpec spec = specArgument(info[0]);
  const double firstRow = integerIn(info[1], "firstRow", 0, kMaxSafeInteger);
  const double n = integerIn(info[2], "n", 0, kMaxSafeInteger - firstRow);
  HB_CHECK_CODE(info[3].IsObject(), Type, kWhere, ": outputs must be { label, dense, splits, ids }");
  Napi::Object outputs = info[3].As<Napi::Object>();
  SyntheticBlock block;
  block.label = static_cast<float*>(outputArray(outputs.Get("label"), "outputs.label", DType::Float32, n));
  Napi::Array dense = arrayArgument(outputs.Get("dense"), "outputs.dense", size_t(spec.numDense));
  for (uint32_t j = 0; j < dense.Length(); ++j) {
    block.dense.push_back(static_cast<float*>(
        outputArray(dense.Get(j), "outputs.dense[" + std::to_string(j) + "]", DType::Float32, n)));
  }
  Napi::Array splits = arrayArgument(outputs.Get("splits"), "outputs.splits", spec.tables.size());
  Napi::Array ids = arrayArgument(outputs.Get("ids"), "outputs.ids", spec.tables.size());
  for (uint32_t t = 0; t < spec.tables.size(); ++t) {
    // Row splits are int32: a block's ids must fit them.
    const double most = n * double(spec.tables[t].hotnessHigh);
    HB_CHECK_CODE(most <= 2147483647.0, OutOfRange, kWhere, ": ", n, " rows of up to ", spec.tables[t].hotnessHigh,
                  " ids (spec.tables[", t, "].hotness[1]) make more than 2^31 - 1 ids");
    block.splits.push_back(static_cast<int32_t*>(
        outputArray(splits.Get(t), "outputs.splits[" + std::to_string(t) + "]", DType::Int32, n + 1)));
    block.ids.push_back(static_cast<int64_t*>(
        outputArray(ids.Get(t), "outputs.ids[" + std::to_string(t) + "]", DType::Int64, most)));
  }
  SyntheticRows(spec).generate(uint64_t(firstRow), int64_t(n), block);
  return info.Env().Undefined();
}

}  // namespace

void exportSyntheticRows(Napi::Env env, Napi::Object exports) {
  exports.Set("syntheticRows", Napi::Function::New(env, guarded<syntheticRowsBinding>, "syntheticRows"));
}

}  // namespace binding
}  // namespace hb
