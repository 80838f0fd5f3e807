// Rows of a tensor streamed to and from files: checkpoints move tables that are larger
// than any JS buffer without the data passing through the JS heap.
//
// A row is the product of shape[1:] elements (row-major); a rank-0 tensor is one row.
// Host tensors are read and written in place; CUDA tensors go through a bounded host
// staging buffer, so these functions must run on the executor of the tensor's device
// (copyBytes' rule, native/core/buffer.h). Errors name the file: ErrorCode::IO for what
// the OS refuses, ErrorCode::Corrupt for a read past the end of the file.
#pragma once

#include <cstdint>
#include <string>

#include "native/core/tensor.h"
#include "native/io/posix_file.h"
#include "native/io/sha256.h"

namespace hb {

struct RowLayout {
  int64_t rows = 0;
  size_t rowBytes = 0;
};

RowLayout rowLayout(const Tensor& tensor);

// Checks 0 <= rowBegin <= rowEnd <= rows, and that the rows' bytes placed at `position`
// stay within a file offset; throws hb::Error (OutOfRange) naming the argument at fault.
// Returns the byte count of the rows.
uint64_t checkRowRange(const Tensor& tensor, int64_t rowBegin, int64_t rowEnd, uint64_t position);

// Writes rows [rowBegin, rowEnd) of `tensor` at byte `position` of the existing file
// `path`, and adds them to `digest` when given (hashed as they are written, not read back).
// `direct`: page-aligned stretches may bypass the page cache (native/io/file_stream_writer.h).
// Returns the byte count.
uint64_t writeTensorRows(const Tensor& tensor, int64_t rowBegin, int64_t rowEnd, const std::string& path,
                         uint64_t position, Digest* digest = nullptr, bool direct = false);

// Overwrites rows [rowBegin, rowEnd) of `tensor` with the bytes at `position` of `path`,
// and adds them to `digest` when given (hashed as they land, not read twice).
void readTensorRows(const Tensor& tensor, int64_t rowBegin, int64_t rowEnd, const std::string& path,
                    uint64_t position, Digest* digest = nullptr);

// Adds bytes [position, position + bytes) of `file` to `digest` (reading the next piece
// while the last is hashed). ErrorCode::Corrupt when the file is shorter.
void hashFileRange(PosixFile& file, uint64_t position, uint64_t bytes, Digest& digest);

}  // namespace hb
