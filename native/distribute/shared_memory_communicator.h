// Collectives between ranks that share one machine, through shared memory
// (shared_memory_communicator.cc). The 'gloo' backend uses it when every rank of the
// job is on this machine (same host, boot, namespaces and user) and none set
// HB_COMM_SHM=0; otherwise Gloo's TCP transport.
#pragma once

#include <memory>
#include <string>

#include "native/distribute/communicator.h"

namespace hb {
namespace distribute {

// Agreed through the store: every rank returns a communicator, or every rank returns
// null and `why` says why not (ranks on other machines, a full /dev/shm, ...).
std::unique_ptr<Communicator> makeSharedMemoryCommunicator(const CommunicatorConfig& config, TcpStoreClient& store,
                                                           std::string& why);

}  // namespace distribute
}  // namespace hb
