// The digest of checkpoint format hb-ts/3: SHA-256 over the concatenated SHA-256s of the
// file's pieces of 4 MiB (the last may be shorter). One SHA-256 stream runs on one core,
// about 1.1-1.4 GB/s on the VMs we measure: less than a disk's sequential read, so a
// restore or save that hashes the whole file was held to it. The pieces are independent,
// so every thread of the pool hashes one side by side (2.9 GB/s on two cores there).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "native/io/sha256.h"

namespace hb {

class PiecewiseSha256 : public Digest {
 public:
  static constexpr size_t kPieceBytes = size_t(4) << 20;

  PiecewiseSha256();  // throws hb::Error when !Sha256::available()
  void update(const void* data, size_t bytes) override;
  std::string hexDigest() override;

 private:
  std::mutex mutex_;
  // The piece the last update ended in, and its bytes so far (0: none begun).
  std::unique_ptr<Sha256> current_;
  size_t filled_ = 0;
  // 32 bytes per finished piece, in file order.
  std::vector<unsigned char> pieces_;
  bool finished_ = false;
  // An update failed part way: some of its pieces were hashed, some not.
  bool broken_ = false;

  void checkUsable() const;
};

}  // namespace hb
