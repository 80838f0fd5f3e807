// Stands in for cuda/nccl_communicator.cu in builds without CUDA.
#include "native/core/status.h"
#include "native/distribute/communicator.h"

namespace hb {
namespace distribute {

std::unique_ptr<Communicator> makeNcclCommunicator(const CommunicatorConfig&, TcpStoreClient&) {
  failWith(ErrorCode::Device, "distribute: backend 'nccl' needs CUDA, which is not compiled into this build of hb-ts");
}

}  // namespace distribute
}  // namespace hb
