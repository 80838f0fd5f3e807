// SHA-256 through the OpenSSL already in the process (Node carries it for its crypto
// module, so this is the code that module runs), found with dlsym behind the few
// declarations below: no library of our own to build or install. Checkpoints hash rows
// here, beside the thread that writes them, instead of reading the file back into JS.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

namespace hb {

// A file's digest, fed its bytes in file order (writers, readers and hashers take either kind).
class Digest {
 public:
  virtual ~Digest() = default;
  // In order: the digest is of the bytes as they were given. Thread-safe, but callers
  // order their calls themselves (one stream).
  virtual void update(const void* data, size_t bytes) = 0;
  // The hex digest; the hash is finished after it (update and digest throw then).
  virtual std::string hexDigest() = 0;
};

class Sha256 : public Digest {
 public:
  // False where the process has no OpenSSL with the EVP digest calls: callers hash in JS
  // then (lib/io/file_digest.ts, which also honours HB_NATIVE_SHA256=0).
  static bool available();
  // The 32-byte SHA-256 of `bytes` at `data`, in one call (any thread).
  static void of(const void* data, size_t bytes, unsigned char out[32]);

  Sha256();  // throws hb::Error when !available()
  ~Sha256() override;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t bytes) override;
  std::string hexDigest() override;
  // The 32 bytes instead of hex; finishes the hash the same way.
  void finish(unsigned char out[32]);

 private:
  std::mutex mutex_;
  void* context_ = nullptr;  // EVP_MD_CTX*
  bool finished_ = false;
};

// Hex of 32 digest bytes.
std::string hexOf(const unsigned char digest[32]);

}  // namespace hb
