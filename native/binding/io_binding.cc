// Files for checkpoints (lib/io/checkpoint_file.ts): tensor rows streamed to and from
// files on the tensor's executor, and the file's SHA-256 taken beside them (native/io/sha256.h:
// the OpenSSL node's crypto runs), over the bytes as they lie in the file.
#include <algorithm>
#include <cmath>
#include <memory>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/tagged_handle.h"
#include "native/binding/tensor_handle.h"
#include "native/core/status.h"
#include "native/io/piecewise_sha256.h"
#include "native/io/sha256.h"
#include "native/io/tensor_file.h"

namespace hb {
namespace binding {

namespace {

// A non-negative integer a double holds exactly.
uint64_t indexArgument(const Napi::Value& value, const char* argument) {
  const double x = numberArgument(value, argument);
  HB_CHECK_CODE(x >= 0 && x < 9007199254740992.0 && std::floor(x) == x, OutOfRange, argument,
                " must be an integer in [0, 2^53), got ", x);
  return uint64_t(x);
}

std::string pathArgument(const Napi::Value& value) {
  std::string path = stringArgument(value, "path");
  HB_CHECK(!path.empty(), "path must not be empty");
  HB_CHECK(path.find('\0') == std::string::npos, "path ", path.c_str(), " contains a NUL character");
  return path;
}

constexpr napi_type_tag kSha256Tag = {0x6862747353484132ULL, 0x3536646967657374ULL};

// The digest inside a handle sha256New made; `argument` names it in errors.
std::shared_ptr<Digest> unwrapDigest(const Napi::Value& value, const char* argument) {
  return *taggedHolder<Digest>(value, kSha256Tag, argument, "a digest (sha256New's result)");
}

// sha256Available() -> boolean: whether sha256New can be used here (else hash in JS).
Napi::Value sha256Available(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), Sha256::available()); }

// sha256New(pieces?: boolean, origin?: number) -> a digest handle for sha256Update,
// tensorWriteRows, tensorReadRows, fileSha256Update, sha256Hex: one SHA-256 stream, or with
// `pieces` the SHA-256 of the SHA-256s of 4 MiB pieces, hashed on the pool's threads side
// by side (native/io/piecewise_sha256.h). `origin` (pieces only): the file offset of the
// first byte it will be given, for a run whose pieces sha256TakePieces hands over.
Napi::Value sha256New(const Napi::CallbackInfo& info) {
  if (!info[0].IsUndefined() && !info[0].IsBoolean()) throw Napi::TypeError::New(info.Env(), "sha256New: pieces must be a boolean");
  const bool pieces = info[0].IsBoolean() && info[0].As<Napi::Boolean>().Value();
  uint64_t origin = 0;
  if (!info[1].IsUndefined()) {
    origin = indexArgument(info[1], "sha256New: origin");
    HB_CHECK(pieces, "sha256New: an origin is for a digest of pieces (pieces = true)");
  }
  std::shared_ptr<Digest> digest;
  if (pieces) {
    digest = std::make_shared<PiecewiseSha256>(origin);
  } else {
    digest = std::make_shared<Sha256>();
  }
  return taggedHandle(info.Env(), std::move(digest), kSha256Tag, "sha256New");
}

// sha256TakePieces(digest, fileEnds: boolean) -> Uint8Array: the 32-byte digests of the
// whole pieces a digest of pieces hashed, in file order from its origin's first piece
// boundary; with `fileEnds`, its last piece begun counts (the file's shorter last piece).
// The digest takes no more bytes after.
Napi::Value sha256TakePieces(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Digest> digest = unwrapDigest(info[0], "sha256TakePieces: digest");
  auto* pieces = dynamic_cast<PiecewiseSha256*>(digest.get());
  if (pieces == nullptr) throw Napi::TypeError::New(env, "sha256TakePieces: digest must be a digest of pieces (sha256New(true))");
  if (!info[1].IsBoolean()) throw Napi::TypeError::New(env, "sha256TakePieces: fileEnds must be a boolean");
  std::vector<unsigned char> taken = pieces->takePieces(info[1].As<Napi::Boolean>().Value());
  Napi::Uint8Array out = Napi::Uint8Array::New(env, taken.size());
  std::copy(taken.begin(), taken.end(), out.Data());
  return out;
}

// sha256Update(digest, bytes: Uint8Array): adds the bytes now, on the JS thread (headers and
// arrays that are in JS already; rows go through tensorWriteRows).
Napi::Value sha256Update(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Digest> digest = unwrapDigest(info[0], "sha256Update: digest");
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw Napi::TypeError::New(env, "sha256Update: bytes must be a Uint8Array");
  }
  refuseSharedMemory(info[1], "sha256Update: bytes");
  Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
  digest->update(bytes.Data(), bytes.ByteLength());
  return env.Undefined();
}

// sha256Hex(digest) -> the 64-character hex digest; the digest takes no more bytes after.
Napi::Value sha256Hex(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), unwrapDigest(info[0], "sha256Hex: digest")->hexDigest());
}

// fileSha256Update(digest, fd, name, position, length) -> Promise<void>: adds those bytes of
// the open file `fd` (`name` for errors), read and hashed on a queue of their own (the
// host's work goes on meanwhile). The task reads a copy of the descriptor, made here, so
// the caller closing its own early cannot point the task at another file.
Napi::Value fileSha256Update(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Digest> digest = unwrapDigest(info[0], "fileSha256Update: digest");
  const uint64_t fd = indexArgument(info[1], "fd");
  HB_CHECK_CODE(fd <= uint64_t(INT32_MAX), OutOfRange, "fd must be a file descriptor, got ", fd);
  const std::string name = pathArgument(info[2]);
  const uint64_t position = indexArgument(info[3], "position");
  const uint64_t length = indexArgument(info[4], "length");
  auto file = std::make_shared<PosixFile>(PosixFile::duplicate(int(fd), name));
  return scheduleOnQueue(env, "io", Device::cpu(), makeTask(
      [digest, file, position, length] { hashFileRange(*file, position, length, *digest); },
      [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

// (tensor, rowBegin, rowEnd, path, position): what both row calls take, read and checked.
struct RowRange {
  Tensor tensor;
  int64_t rowBegin = 0, rowEnd = 0;
  std::string path;
  uint64_t position = 0;
};

RowRange rowRangeArguments(const Napi::CallbackInfo& info) {
  RowRange r;
  r.tensor = TensorHandle::unwrap(info[0], "tensor");
  r.rowBegin = int64_t(indexArgument(info[1], "rowBegin"));
  r.rowEnd = int64_t(indexArgument(info[2], "rowEnd"));
  r.path = pathArgument(info[3]);
  r.position = indexArgument(info[4], "position");
  checkRowRange(r.tensor, r.rowBegin, r.rowEnd, r.position);
  return r;
}

// tensorWriteRows(tensor, rowBegin, rowEnd, path, position, digest?, direct?) -> Promise<bytes>:
// queued on the tensor's device, so it writes the values every operation queued before it
// has left; the rows are added to `digest` as they are written; `direct` (default false):
// page-aligned stretches may bypass the page cache (native/io/file_stream_writer.h).
Napi::Value tensorWriteRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const RowRange r = rowRangeArguments(info);
  std::shared_ptr<Digest> digest;
  if (!info[5].IsUndefined() && !info[5].IsNull()) digest = unwrapDigest(info[5], "tensorWriteRows: digest");
  if (!info[6].IsUndefined() && !info[6].IsBoolean()) throw Napi::TypeError::New(env, "tensorWriteRows: direct must be a boolean");
  const bool direct = info[6].IsBoolean() && info[6].As<Napi::Boolean>().Value();
  auto written = std::make_shared<uint64_t>(0);
  return schedule(env, r.tensor.device(), makeTask(
      [r, digest, direct, written] {
        *written = writeTensorRows(r.tensor, r.rowBegin, r.rowEnd, r.path, r.position, digest.get(), direct);
      },
      [written](Napi::Env env) -> Napi::Value { return Napi::Number::New(env, double(*written)); }));
}

// tensorReadRows(tensor, rowBegin, rowEnd, path, position, digest?) -> Promise<void>:
// overwrites the rows in place, queued on the tensor's device like any update of it; the
// bytes read are added to `digest` as they land (a restore verifies while it loads).
Napi::Value tensorReadRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const RowRange r = rowRangeArguments(info);
  std::shared_ptr<Digest> digest;
  if (!info[5].IsUndefined() && !info[5].IsNull()) digest = unwrapDigest(info[5], "tensorReadRows: digest");
  return schedule(env, r.tensor.device(), makeTask(
      [r, digest] { readTensorRows(r.tensor, r.rowBegin, r.rowEnd, r.path, r.position, digest.get()); },
      [](Napi::Env env) -> Napi::Value { return env.Undefined(); }));
}

}  // namespace

void exportIo(Napi::Env env, Napi::Object exports) {
  exports.Set("tensorWriteRows", Napi::Function::New(env, guarded<tensorWriteRows>, "tensorWriteRows"));
  exports.Set("tensorReadRows", Napi::Function::New(env, guarded<tensorReadRows>, "tensorReadRows"));
  exports.Set("sha256Available", Napi::Function::New(env, guarded<sha256Available>, "sha256Available"));
  exports.Set("sha256New", Napi::Function::New(env, guarded<sha256New>, "sha256New"));
  exports.Set("sha256Update", Napi::Function::New(env, guarded<sha256Update>, "sha256Update"));
  exports.Set("sha256TakePieces", Napi::Function::New(env, guarded<sha256TakePieces>, "sha256TakePieces"));
  exports.Set("sha256Hex", Napi::Function::New(env, guarded<sha256Hex>, "sha256Hex"));
  exports.Set("fileSha256Update", Napi::Function::New(env, guarded<fileSha256Update>, "fileSha256Update"));
}

}  // namespace binding
}  // namespace hb
