// Stands in for gloo_communicator.cc in builds without Gloo (HB_GLOO=OFF, Gloo not
// found, or the node-gyp fallback build).
#include "native/core/status.h"
#include "native/distribute/communicator.h"

namespace hb {
namespace distribute {

#ifndef HB_GLOO_MISSING_REASON
#define HB_GLOO_MISSING_REASON "this build has no Gloo (the node-gyp fallback build never has it)"
#endif

bool glooCompiled() { return false; }
std::string glooUnavailableReason() { return HB_GLOO_MISSING_REASON; }

std::unique_ptr<Communicator> makeGlooCommunicator(const CommunicatorConfig&, TcpStoreClient&) {
  failWith(ErrorCode::Unimplemented, "distribute: backend 'gloo' is not in this build: ", glooUnavailableReason(),
           "; install libgloo-dev and rebuild with `HB_GLOO=ON npm run build:addon`");
}

}  // namespace distribute
}  // namespace hb
