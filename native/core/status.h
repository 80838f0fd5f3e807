// Errors raised by native code. Every message names the argument or column at fault,
// and every error carries a code (HB_ERR_*) that JavaScript reads as `error.code`, so
// no logic anywhere matches message text. The binding turns an Error with code Type
// into a JS TypeError and every other code into a plain JS Error.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace hb {

enum class ErrorCode {
  InvalidArgument,  // a value is wrong (the default)
  Type,             // a value has the wrong type or dtype (JS TypeError)
  Shape,            // shapes or lengths do not fit
  OutOfRange,       // an id, index or size outside its range
  NaN,              // a NaN or infinite value where finite ones are required
  Device,           // a device cannot be used, or tensors are on the wrong one
  IO,               // a file could not be read or written
  Corrupt,          // a file's contents fail their checks
  OutOfMemory,
  Unimplemented,
  Communication,    // a peer process has gone, or ranks disagree about a collective
  Timeout,          // a peer did not answer within the communication timeout
  PeerStopped,      // a compiled step did not run: another rank's input ended (or it stopped)
  Internal,         // a bug in hb-ts
};

// 'HB_ERR_INVALID_ARGUMENT', 'HB_ERR_TYPE', ...
const char* errorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorCode code = ErrorCode::InvalidArgument)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Parts>
[[noreturn]] void failWith(ErrorCode code, const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw Error(message.str(), code);
}

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  failWith(ErrorCode::InvalidArgument, parts...);
}

}  // namespace hb

#define HB_CHECK(condition, ...)     \
  do {                               \
    if (!(condition)) {              \
      ::hb::fail(__VA_ARGS__);       \
    }                                \
  } while (0)

// HB_CHECK with an error code other than InvalidArgument.
#define HB_CHECK_CODE(condition, code, ...)            \
  do {                                                 \
    if (!(condition)) {                                \
      ::hb::failWith(::hb::ErrorCode::code, __VA_ARGS__); \
    }                                                  \
  } while (0)
