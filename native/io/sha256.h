// SHA-256 through the OpenSSL already in the process (Node carries it for its crypto
// module, so this is the code that module runs), found with dlsym behind the few
// declarations below: no library of our own to build or install. Checkpoints hash rows
// here, beside the thread that writes them, instead of reading the file back into JS.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

namespace hb {

class Sha256 {
 public:
  // False where the process has no OpenSSL with the EVP digest calls: callers hash in JS
  // then (lib/io/file_digest.ts, which also honours HB_NATIVE_SHA256=0).
  static bool available();

  Sha256();  // throws hb::Error when !available()
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // In order: the digest is of the bytes as they were given. Thread-safe, but callers
  // order their calls themselves (one stream).
  void update(const void* data, size_t bytes);
  // The hex digest; the hash is finished after it (update and digest throw then).
  std::string hexDigest();

 private:
  std::mutex mutex_;
  void* context_ = nullptr;  // EVP_MD_CTX*
  bool finished_ = false;
};

}  // namespace hb
