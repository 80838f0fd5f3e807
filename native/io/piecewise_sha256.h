// The digest of checkpoint format hb-ts/3: SHA-256 over the concatenated SHA-256s of the
// file's pieces of 4 MiB (the last may be shorter). One SHA-256 stream runs on one core,
// about 1.1-1.4 GB/s on the VMs we measure: less than a disk's sequential read, so a
// restore or save that hashes the whole file was held to it. The pieces are independent,
// so every thread of the pool hashes one side by side (2.9 GB/s on two cores there).
//
// Being independent, pieces can also be taken from runs of the file's bytes in any order
// (a restore reads tensors as tables ask for them): a run that starts at `origin` hashes
// the whole pieces it goes through and hands their digests over (takePieces); the caller
// puts the file's list together and hashes what no run covered whole (lib/io/piece_digests.ts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "native/io/sha256.h"

namespace hb {

class PiecewiseSha256 : public Digest {
 public:
  static constexpr size_t kPieceBytes = size_t(4) << 20;

  // `origin`: the file offset of the first byte update() will be given. Pieces are the
  // file's own (4 MiB from offset 0), so the bytes before the first piece boundary at or
  // after `origin` are not hashed: this run does not hold that piece whole.
  // Throws hb::Error when !Sha256::available().
  explicit PiecewiseSha256(uint64_t origin = 0);
  void update(const void* data, size_t bytes) override;
  // The digest of the whole file: needs origin 0.
  std::string hexDigest() override;
  // The digests of the whole pieces hashed, 32 bytes each in file order from piece
  // ceil(origin / kPieceBytes); with `fileEnds` (the run reached the end of the file) the
  // piece begun last is whole too (the file's last, shorter one). Finishes the digest.
  std::vector<unsigned char> takePieces(bool fileEnds);

 private:
  std::mutex mutex_;
  const uint64_t origin_;
  // Bytes still to pass over before the first piece boundary.
  uint64_t skip_;
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
