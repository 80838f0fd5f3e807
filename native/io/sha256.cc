#include "native/io/sha256.h"

#include <dlfcn.h>

#include "native/core/status.h"

namespace hb {

namespace {

// OpenSSL's EVP digest calls (1.1, 3.x; BoringSSL has the same), declared here so no
// OpenSSL headers are needed to build.
using MdCtxNewFn = void* (*)();
using MdCtxFreeFn = void (*)(void*);
using Sha256MdFn = const void* (*)();
using DigestInitFn = int (*)(void*, const void*, void*);
using DigestUpdateFn = int (*)(void*, const void*, size_t);
using DigestFinalFn = int (*)(void*, unsigned char*, unsigned int*);

struct EvpApi {
  MdCtxNewFn ctxNew = nullptr;
  MdCtxFreeFn ctxFree = nullptr;
  Sha256MdFn sha256 = nullptr;
  DigestInitFn init = nullptr;
  DigestUpdateFn update = nullptr;
  DigestFinalFn final = nullptr;
  bool complete() const { return ctxNew && ctxFree && sha256 && init && update && final; }
};

// Where the first call lives: every other is taken from the same object, so two OpenSSL
// copies in one process (node's and a library's) are never mixed.
void* libraryOf(void* symbol) {
  Dl_info info;
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return RTLD_DEFAULT;
  void* library = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  // The executable itself (node's static OpenSSL) may not reopen by name: its own symbols
  // come first in the global scope anyway.
  return library != nullptr ? library : RTLD_DEFAULT;
}

EvpApi findInProcess() {
  EvpApi api;
  // Node's own symbols (a static OpenSSL), or a libcrypto it loaded: both in the global scope.
  void* first = dlsym(RTLD_DEFAULT, "EVP_MD_CTX_new");
  void* library = libraryOf(first);
  api.ctxNew = reinterpret_cast<MdCtxNewFn>(dlsym(library, "EVP_MD_CTX_new"));
  api.ctxFree = reinterpret_cast<MdCtxFreeFn>(dlsym(library, "EVP_MD_CTX_free"));
  api.sha256 = reinterpret_cast<Sha256MdFn>(dlsym(library, "EVP_sha256"));
  api.init = reinterpret_cast<DigestInitFn>(dlsym(library, "EVP_DigestInit_ex"));
  api.update = reinterpret_cast<DigestUpdateFn>(dlsym(library, "EVP_DigestUpdate"));
  api.final = reinterpret_cast<DigestFinalFn>(dlsym(library, "EVP_DigestFinal_ex"));
  return api;
}

const EvpApi& evp() {
  static const EvpApi api = findInProcess();
  return api;
}

}  // namespace

bool Sha256::available() { return evp().complete(); }

Sha256::Sha256() {
  HB_CHECK(available(), "SHA-256: this process has no OpenSSL digest calls to use");
  context_ = evp().ctxNew();
  HB_CHECK(context_ != nullptr, "SHA-256: out of memory for a digest context");
  if (evp().init(context_, evp().sha256(), nullptr) != 1) {
    evp().ctxFree(context_);
    context_ = nullptr;
    failWith(ErrorCode::Internal, "SHA-256: the digest could not start");
  }
}

Sha256::~Sha256() {
  if (context_ != nullptr) evp().ctxFree(context_);
}

void Sha256::update(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  HB_CHECK(!finished_, "SHA-256: the digest was already taken");
  if (bytes > 0) HB_CHECK(evp().update(context_, data, bytes) == 1, "SHA-256: the digest update failed");
}

void Sha256::finish(unsigned char out[32]) {
  std::lock_guard<std::mutex> lock(mutex_);
  HB_CHECK(!finished_, "SHA-256: the digest was already taken");
  finished_ = true;
  unsigned int length = 0;
  HB_CHECK(evp().final(context_, out, &length) == 1 && length == 32, "SHA-256: the digest could not finish");
}

std::string Sha256::hexDigest() {
  unsigned char digest[32];
  finish(digest);
  return hexOf(digest);
}

void Sha256::of(const void* data, size_t bytes, unsigned char out[32]) {
  Sha256 digest;
  digest.update(data, bytes);
  digest.finish(out);
}

std::string hexOf(const unsigned char digest[32]) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex(64, '0');
  for (int i = 0; i < 32; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace hb
