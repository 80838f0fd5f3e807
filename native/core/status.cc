#include "native/core/status.h"

namespace hb {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "HB_ERR_INVALID_ARGUMENT";
    case ErrorCode::Type: return "HB_ERR_TYPE";
    case ErrorCode::Shape: return "HB_ERR_SHAPE";
    case ErrorCode::OutOfRange: return "HB_ERR_OUT_OF_RANGE";
    case ErrorCode::NaN: return "HB_ERR_NAN";
    case ErrorCode::Device: return "HB_ERR_DEVICE";
    case ErrorCode::IO: return "HB_ERR_IO";
    case ErrorCode::Corrupt: return "HB_ERR_CORRUPT";
    case ErrorCode::OutOfMemory: return "HB_ERR_OUT_OF_MEMORY";
    case ErrorCode::Unimplemented: return "HB_ERR_UNIMPLEMENTED";
    case ErrorCode::Communication: return "HB_ERR_COMM";
    case ErrorCode::Timeout: return "HB_ERR_TIMEOUT";
    case ErrorCode::PeerStopped: return "HB_ERR_PEER_STOPPED";
    case ErrorCode::Internal: return "HB_ERR_INTERNAL";
  }
  return "HB_ERR_INTERNAL";
}

}  // namespace hb
