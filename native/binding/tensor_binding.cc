// Creating, reading, copying and disposing tensors.
#include <atomic>
#include <cmath>
#include <cstring>
#include <future>
#include <utility>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tensor_handle.h"
#include "native/core/executor.h"
#include "native/core/status.h"
#include "cuda/cuda_backend.h"

namespace hb {
namespace binding {

FillSpec fillSpecArgument(const Napi::Object& spec, const std::vector<int64_t>& shape) {
  FillSpec fill;
  const std::string kind = stringArgument(spec.Get("kind"), "initializer.kind");
  if (kind == "constant") fill.kind = FillKind::Constant;
  else if (kind == "uniform") fill.kind = FillKind::Uniform;
  else if (kind == "truncatedNormal") fill.kind = FillKind::TruncatedNormal;
  else fail("initializer.kind: unknown kind '", kind, "'");
  fill.value = finiteFloatField(spec, "value", 0.0f, "initializer");
  fill.minval = finiteFloatField(spec, "minval", 0.0f, "initializer");
  fill.maxval = finiteFloatField(spec, "maxval", 1.0f, "initializer");
  fill.mean = finiteFloatField(spec, "mean", 0.0f, "initializer");
  fill.stddev = finiteFloatField(spec, "stddev", 1.0f, "initializer");
  HB_CHECK(fill.stddev >= 0.0f, "initializer: stddev must be >= 0, got ", fill.stddev);
  HB_CHECK(fill.maxval >= fill.minval, "initializer: maxval (", fill.maxval, ") must be >= minval (", fill.minval, ")");
  const Napi::Value seedValue = spec.Get("seed");
  const double seed = seedValue.IsUndefined() ? 0.0 : numberArgument(seedValue, "initializer.seed");
  HB_CHECK(seed >= 0 && seed < 9007199254740992.0 && std::floor(seed) == seed,
           "initializer: seed must be an integer in [0, 2^53), got ", seed);
  fill.seed = uint64_t(seed);
  // A shard of a table: { rowStride, rowOffset } (native/kernels/random_fill.h).
  const Napi::Value stride = spec.Get("rowStride");
  if (!stride.IsUndefined()) {
    const double s = numberArgument(stride, "initializer.rowStride");
    const double o = numberArgument(spec.Get("rowOffset"), "initializer.rowOffset");
    HB_CHECK(shape.size() == 2, "initializer: rowStride is for [rows, dim] tables, the shape has rank ", shape.size());
    HB_CHECK(std::floor(s) == s && s >= 1 && s < 1048576.0 && std::floor(o) == o && o >= 0 && o < s,
             "initializer: rowStride must be an integer in [1, 2^20) and rowOffset in [0, rowStride), got ", s, " and ", o);
    fill.rowWidth = uint64_t(shape[1]);
    fill.rowStride = uint64_t(s);
    fill.rowOffset = uint64_t(o);
  }
  return fill;
}

namespace {

// tensorFromTypedArray(values, shape, device): a copy of `values` on `device`. Always a
// copy: a view would be read by queued work after JS may have transferred, resized or
// dropped the ArrayBuffer, which no reference can prevent.
Napi::Value tensorFromTypedArray(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Arguments that may run user code (array getters) are read before `values` is
  // viewed, so nothing can detach it between the view and the copy.
  const std::vector<int64_t> shape = shapeArgument(info[1], "shape");
  const Device device = parseUsableDevice(stringArgument(info[2], "device"), "device");
  const Tensor source = viewTypedArray(info[0], "values");
  const int64_t size = shapeSize(shape, "shape");
  HB_CHECK(size == source.size(), "shape ", Tensor{nullptr, source.dtype, shape}.shapeString(), " holds ", size,
           " values but values has ", source.size());
  Tensor owned{Buffer::allocate(device, source.bytes()), source.dtype, shape};
  // Synchronous: a plain memcpy on the host, or an H2D copy on the transfer stream
  // that does not wait for work queued on the device.
  if (device.isCuda()) {
    copyBytes(owned.buffer->data(), device, source.buffer->data(), Device::cpu(), source.bytes());
  } else if (source.bytes() > 0) {
    std::memcpy(owned.buffer->data(), source.buffer->data(), source.bytes());
  }
  return TensorHandle::wrap(env, std::move(owned));
}

// Copies source into destination on the destination's executor, after everything
// queued before on either device (the source may still be being filled).
Napi::Promise queueCopy(Napi::Env env, const Tensor& destination, const Tensor& source) {
  std::shared_future<void> sourceReady;
  if (source.device() != destination.device()) sourceReady = queueMarker(source.device());
  return schedule(env, destination.device(), makeTask(
      [destination, source, sourceReady] {
        if (sourceReady.valid()) sourceReady.wait();
        copyBytes(destination.buffer->data(), destination.device(), source.buffer->data(), source.device(), source.bytes());
      },
      [destination, source](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

// tensorCopy(handle, device) -> { handle, done }: a new tensor on `device` whose copy
// of the source is queued there (so anything queued after sees it); `done` settles
// when the copy has run.
Napi::Value tensorCopy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Tensor source = TensorHandle::unwrap(info[0], "initialValue");
  const Device device = parseUsableDevice(stringArgument(info[1], "device"), "device");
  Tensor copy{Buffer::allocate(device, source.bytes()), source.dtype, source.shape};
  Napi::Promise done = queueCopy(env, copy, source);
  Napi::Object result = Napi::Object::New(env);
  result.Set("handle", TensorHandle::wrap(env, std::move(copy)));
  result.Set("done", done);
  return result;
}

// tensorFill(shape, device, spec): a float32 tensor filled on its device's executor.
// Returns at once; anything queued after it on that device sees the values.
Napi::Value tensorFill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<int64_t> shape = shapeArgument(info[0], "shape");
  const Device device = parseUsableDevice(stringArgument(info[1], "device"), "device");
  if (!info[2].IsObject()) throw Napi::TypeError::New(env, "initializer must be an object");
  Napi::Object spec = info[2].As<Napi::Object>();
  const FillSpec fill = fillSpecArgument(spec, shape);
  Tensor tensor{nullptr, DType::Float32, shape};
  shapeSize(shape, "shape");
  tensor.buffer = Buffer::allocate(device, tensor.bytes());
  std::shared_ptr<Buffer> buffer = tensor.buffer;  // owned: safe to drop on any thread
  const int64_t n = tensor.size();
  submitToDevice(device, [buffer, n, fill, device] {
    float* out = static_cast<float*>(buffer->data());
    try {
      if (device.isCuda()) cuda::fill(device.index, out, n, fill);
      else fillCpu(out, n, fill);
    } catch (const std::exception&) {
      // A failed fill on a GPU means the device is unusable; the next operation queued
      // there reports why, with a promise to reject.
    }
  });
  return TensorHandle::wrap(env, std::move(tensor));
}

// Reads up to this size are copied on the JS thread when the host queue is idle (1 MiB: about
// 80 us in a loop of reads, against 170-200 us queued, on a 2-vCPU EPYC VM). Past it a
// queued read won where the copy lands in new pages: its copy ran on the pool's threads
// (4 MiB: 330 us queued, 450 us here). That was when a copy here of up to 1 MiB ran on one
// thread; copies of more than 128 KiB take the pool here too now (native/core/buffer.cc).
// Measured again then (2-vCPU Emerald Rapids Xeon VM, reads into new arrays in a loop, this
// cut-off at 1 and at 16 MiB alternated twice): the same within the noise (2 MiB 103-106
// against 112-116 us, 4 MiB 217-230 against 233-241, 8 MiB 462-485 against 458-496).
// Blocks in the cache serve most such reads in a loop either way (kInlineReusedReadBytes).
constexpr size_t kInlineReadBytes = size_t(1) << 20;

// Up to this size a read whose array gets a block from the cache (pages mapped already) is
// copied here too, over the pool's threads: a 4 MiB read in a loop on a 2-vCPU EPYC VM,
// 170 us queued against 70 us here. Larger copies are queued so that the JS thread is not
// held for milliseconds.
constexpr size_t kInlineReusedReadBytes = size_t(16) << 20;

// The kind of typed array that holds a tensor's values, and its name.
std::pair<napi_typedarray_type, const char*> typedArrayKindOf(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {napi_float32_array, "Float32Array"};
    case DType::Float64: return {napi_float64_array, "Float64Array"};
    case DType::Int32: return {napi_int32_array, "Int32Array"};
    case DType::Int64: return {napi_bigint64_array, "BigInt64Array"};
    case DType::Float16:
    case DType::BFloat16: return {napi_uint16_array, "Uint16Array"};
  }
  failWith(ErrorCode::Internal, "unknown dtype");
}

// A promise already settled with `value`.
Napi::Value resolvedWith(Napi::Env env, Napi::Value value) {
  Napi::Promise::Deferred read = Napi::Promise::Deferred::New(env);
  read.Resolve(value);
  return read.Promise();
}

// `into`, checked to take `source`'s values: a typed array of its kind and length (and
// the checks every array from JS passes); where its values start.
void* readDestination(const Napi::Value& into, const Tensor& source) {
  Napi::Env env = into.Env();
  const auto [kind, kindName] = typedArrayKindOf(source.dtype);
  const std::string wanted = std::string("a ") + kindName + " of " + std::to_string(source.size()) +
                             " values (the tensor is " + dtypeName(source.dtype) + " " + source.shapeString() + ")";
  if (!into.IsTypedArray() || into.As<Napi::TypedArray>().TypedArrayType() != kind) {
    throw Napi::TypeError::New(env, "tensor.data: into must be " + wanted);
  }
  const TypedArrayValues values = checkedTypedArray(into, "tensor.data: into", &source.dtype);
  if (int64_t(values.length) != source.size()) {
    throw jsError(env, "tensor.data: into has " + std::to_string(values.length) + " values; it must be " + wanted,
                  ErrorCode::Shape);
  }
  return values.data;
}

// tensorData(handle, into): a promise of the tensor's values in `into`, read after every
// operation queued before it on the tensor's device. A loop that reuses its array writes
// memory already mapped: a new array's pages are new to the process until V8 collects
// the last ones (a 256 KiB read in a loop on a 2-vCPU EPYC VM: 110-150 us new, 15-20 us
// into).
Napi::Value tensorDataInto(const Napi::CallbackInfo& info, const Tensor& source) {
  Napi::Env env = info.Env();
  void* data = readDestination(info[1], source);
  Napi::TypedArray into = info[1].As<Napi::TypedArray>();
  if (canSettleNow(env, source.device())) {
    JsThreadWork charged(env);
    copyBytes(data, Device::cpu(), source.buffer->data(), Device::cpu(), source.bytes());
    return resolvedWith(env, into);
  }
  // The values are taken in queue order (a variable's may change in work queued after
  // the read) into a host block, and written into the array on the JS thread: it stays
  // JS's while the read waits its turn, and JS may transfer it meanwhile.
  std::shared_ptr<Buffer> staged = Buffer::allocate(Device::cpu(), source.bytes());
  auto destination = std::make_shared<Napi::Reference<Napi::TypedArray>>(Napi::Persistent(into));
  return schedule(env, source.device(), makeTask(
      [source, staged] { copyBytes(staged->data(), Device::cpu(), source.buffer->data(), source.device(), source.bytes()); },
      [source, staged, destination](Napi::Env env) -> Napi::Value {
        Napi::TypedArray array = destination->Value();
        // Re-read: JS may have transferred or resized its buffer while the read waited (a
        // view past a shrunk buffer's end has length 0).
        if (array.ArrayBuffer().IsDetached() || int64_t(array.ElementLength()) != source.size()) {
          throw Napi::Error::New(env, "tensor.data: into was transferred, detached or resized to " +
                                          std::to_string(array.ElementLength()) + " values before the read finished");
        }
        void* data = static_cast<uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset();
        copyBytes(data, Device::cpu(), staged->data(), Device::cpu(), source.bytes());
        return array;
      }));
}

// A host tensor's values into `array` (of its kind and length), now.
void copyHostValues(const Tensor& source, const Napi::TypedArray& array) {
  copyBytes(static_cast<uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset(), Device::cpu(), source.buffer->data(),
            Device::cpu(), source.bytes());
}

// A promise of a new typed array with `source`'s values, read after every operation
// queued before it on its device.
Napi::Value readIntoNewArray(Napi::Env env, const Tensor& source) {
  if (!source.device().isCuda() && source.bytes() <= kInlineReusedReadBytes && canSettleNow(env, Device::cpu())) {
    // Nothing queued on the host can still write the values, and no earlier promise waits
    // to settle: copied here and now, the read skips the two thread hops of a queued one
    // (most of a small read's time). The array takes a cached host block where one is free;
    // a small one misses into a new host block (up to a bound) rather than V8's memory, so
    // that it joins the blocks that come back to the cache as JS collects its arrays (V8
    // hands its own large arrays' memory back to the OS, and every read then faulted in
    // fresh pages: a 256 KiB read in a lookup loop, 100 us against 5 us into one array).
    JsThreadWork charged(env);
    Napi::TypedArray array = source.bytes() <= kInlineReadBytes ? newTypedArrayNow(env, source.dtype, size_t(source.size()))
                                                                 : reusedTypedArray(env, source.dtype, size_t(source.size()));
    if (!array.IsEmpty()) {
      copyHostValues(source, array);
      return resolvedWith(env, array);
    }
  }
  std::shared_ptr<Buffer> owner;  // the array's block, while the copy into it may still run
  Napi::TypedArray array = newTypedArray(env, source.dtype, size_t(source.size()), &owner);
  Tensor destination = viewTypedArray(array, "destination", &source.dtype);
  auto result = std::make_shared<Napi::Reference<Napi::TypedArray>>(Napi::Persistent(array));
  return schedule(env, source.device(), makeTask(
      [source, destination, owner] {
        copyBytes(destination.buffer->data(), Device::cpu(), source.buffer->data(), source.device(), source.bytes());
      },
      [result, destination](Napi::Env) -> Napi::Value { return result->Value(); }));
}

// tensorData(handle[, into]): a promise of a new typed array with the tensor's values (or
// of `into` with them), read after every operation queued before it on the tensor's device.
Napi::Value tensorData(const Napi::CallbackInfo& info) {
  const Tensor source = TensorHandle::unwrap(info[0], "tensor");
  if (info.Length() > 1 && !info[1].IsUndefined()) return tensorDataInto(info, source);
  return readIntoNewArray(info.Env(), source);
}

// `source`'s block as a new array (typedArrayAdopting), or where that is refused a copy
// in a new array: on the JS thread, with `source` the block's only holder.
Napi::TypedArray arrayAdoptingOrCopying(Napi::Env env, const Tensor& source) {
  Napi::TypedArray array = typedArrayAdopting(env, source.dtype, size_t(source.size()), source.buffer);
  if (!array.IsEmpty()) return array;
  array = newTypedArrayNow(env, source.dtype, size_t(source.size()));
  copyHostValues(source, array);
  return array;
}

// tensorDataDispose(handle): tensorData's new array, the handle disposed at once. Where
// the tensor's host block is its alone (no other tensor views it, no queued work holds it,
// no compiled step keeps it, it is not JS memory the tensor wraps), the array is that
// block: no copy, and no new pages for the copy (a lookup's 1 MiB result in a loop, read
// with data(), spent longer in the copy than in the lookup). Otherwise a copy, as
// tensorData's.
Napi::Value tensorDataDispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Tensor source = TensorHandle::take(info[0], "tensor");
  // Its only holder is this function: nothing else can reach the block to write it, or
  // take a new reference (other threads only drop theirs, after their work is done).
  if (source.device().isCuda() || !source.buffer->owned() || source.buffer.use_count() != 1) {
    return readIntoNewArray(env, source);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (canSettleNow(env, Device::cpu())) return resolvedWith(env, arrayAdoptingOrCopying(env, source));
  // Earlier calls' promises settle first: the hand-over waits its turn on the host queue.
  auto held = std::make_shared<Tensor>(std::move(source));
  return schedule(env, Device::cpu(), makeTask([] {}, [held](Napi::Env env) -> Napi::Value {
    Napi::TypedArray array = arrayAdoptingOrCopying(env, *held);
    held->buffer.reset();
    return array;
  }));
}

// tensorDataSync(handle): a host tensor's values now, after every operation queued before
// it on the CPU queue; the JS thread waits for them (a feature block read inside a
// synchronous transform, as tfjs's dataSync). A device tensor is refused: await tensorData.
Napi::Value tensorDataSync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Tensor source = TensorHandle::unwrap(info[0], "tensor");
  HB_CHECK_CODE(!source.device().isCuda(), Device, "tensorDataSync: the tensor is on ", source.device().str(),
                "; read it with await tensor.data()");
  // A loop of synchronous reads never yields to the event loop, where a host block's
  // finalizer would run: reused blocks or V8's memory only (see newTypedArrayNow).
  Napi::TypedArray array = newTypedArrayNow(env, source.dtype, size_t(source.size()));
  Tensor destination = viewTypedArray(array, "destination", &source.dtype);
  if (deviceIsIdle(Device::cpu())) {
    if (source.bytes() > 0) std::memcpy(destination.buffer->data(), source.buffer->data(), source.bytes());
    return array;
  }
  std::promise<void> copied;
  std::future<void> done = copied.get_future();
  submitToDevice(Device::cpu(), [&source, &destination, &copied] {
    try {
      std::memcpy(destination.buffer->data(), source.buffer->data(), source.bytes());
      copied.set_value();
    } catch (...) {
      copied.set_exception(std::current_exception());
    }
  });
  done.get();
  return array;
}

// tensorClone(handle): a promise of a new tensor with a copy of the values, on the
// same device. The benchmarks time it as the memory-copy baseline.
Napi::Value tensorClone(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Tensor source = TensorHandle::unwrap(info[0], "tensor");
  auto copy = std::make_shared<Tensor>();
  return schedule(env, source.device(), makeTask(
      [source, copy] { *copy = copyTensor(source, source.device()); },
      [source, copy](Napi::Env env) -> Napi::Value { return TensorHandle::wrap(env, *copy); }));
}

// tensorAssign(destination, source): copies source's values into destination's memory
// (same dtype and size, any devices), queued on the destination's device.
Napi::Value tensorAssign(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Tensor destination = TensorHandle::unwrap(info[0], "assign: variable");
  const Tensor source = TensorHandle::unwrap(info[1], "assign: value");
  if (destination.dtype != source.dtype || destination.size() != source.size()) {
    // Another dtype is a TypeError, as TF's are; the same dtype in another size, a value.
    failWith(destination.dtype != source.dtype ? ErrorCode::Type : ErrorCode::InvalidArgument, "assign: value is ",
             dtypeName(source.dtype), " ", source.shapeString(), " but the variable is ", dtypeName(destination.dtype),
             " ", destination.shapeString());
  }
  return queueCopy(env, destination, source);
}

}  // namespace

void exportTensor(Napi::Env env, Napi::Object exports) {
  exports.Set("tensorFromTypedArray", Napi::Function::New(env, guarded<tensorFromTypedArray>, "tensorFromTypedArray"));
  exports.Set("tensorCopy", Napi::Function::New(env, guarded<tensorCopy>, "tensorCopy"));
  exports.Set("tensorFill", Napi::Function::New(env, guarded<tensorFill>, "tensorFill"));
  exports.Set("tensorData", Napi::Function::New(env, guarded<tensorData>, "tensorData"));
  exports.Set("tensorDataDispose", Napi::Function::New(env, guarded<tensorDataDispose>, "tensorDataDispose"));
  exports.Set("tensorDataSync", Napi::Function::New(env, guarded<tensorDataSync>, "tensorDataSync"));
  exports.Set("tensorAssign", Napi::Function::New(env, guarded<tensorAssign>, "tensorAssign"));
  exports.Set("tensorClone", Napi::Function::New(env, guarded<tensorClone>, "tensorClone"));
}

}  // namespace binding
}  // namespace hb
