// The processes of one job acting as one: the rendezvous store (served by rank 0),
// one communicator, and the bookkeeping that turns a transport failure into an Error
// that names the peer. One per process (the world); created and used on its own queue
// (queueName), so collectives run one at a time in the order they were called.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "native/core/device.h"
#include "native/core/status.h"
#include "native/distribute/communicator.h"
#include "native/distribute/tcp_store.h"

namespace hb {
namespace distribute {

struct ProcessGroupConfig {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localWorldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  std::string backend = "local";  // local | gloo | nccl
  Device device;
  std::chrono::milliseconds timeout{300000};
};

// What every rank of a collective throws alike, because it follows from the headers
// all of them exchanged (ranks disagree, a rank's own arguments are wrong): the ranks
// are still in step, so the group stays usable.
class AgreedError : public Error {
 public:
  AgreedError(const std::string& message, ErrorCode code) : Error(message, code) {}
};

// What this rank's collectives have moved since the group was made: payload bytes (an
// alltoallv's rows to and from the other ranks, an allgather's own rows out and the
// others' in, an allreduce's or broadcast's tensor both ways), not what the transport's
// algorithm adds, and the time spent inside them (waiting for peers included).
struct ExchangeStats {
  uint64_t collectives = 0;
  uint64_t bytesSent = 0;
  uint64_t bytesReceived = 0;
  double seconds = 0;
};

class ProcessGroup {
 public:
  // Rendezvous and connect; blocks until every rank has arrived or the timeout.
  explicit ProcessGroup(const ProcessGroupConfig& config);
  ~ProcessGroup();

  const ProcessGroupConfig& config() const { return config_; }
  int rank() const { return config_.rank; }
  int worldSize() const { return config_.worldSize; }
  // Valid until shutdown(); collectives reach it only after beginCollective.
  Communicator& communicator() { return *communicator_; }
  const std::string& backend() const { return config_.backend; }
  // How the communicator moves bytes ("shm", "tcp", "nccl", "local"), fixed at init;
  // for gloo over TCP, why not shared memory.
  const std::string& transport() const { return transport_; }
  const std::string& whyNotSharedMemory() const { return whyNotSharedMemory_; }

  // The number of this collective among those called on this rank, from 1. Throws when
  // an earlier one failed in transport (the communicator cannot be trusted after that).
  uint64_t beginCollective(const char* name);
  // Rethrows `error` from `name` #sequence as an hb::Error. An AgreedError leaves the
  // group as it is; anything else breaks it (this rank may be out of step with its
  // peers), and transport failures name the peers whose processes have gone (asked of
  // the store).
  [[noreturn]] void fail(const char* name, uint64_t sequence, const std::exception& error,
                         std::chrono::steady_clock::time_point started);

  // After which every collective fails with `why`.
  void markBroken(const std::string& why);

  // Held for the whole of each collective: hb.distribute's run on the group's queue and
  // a compiled step's on its device's thread, and they must not interleave on the wire.
  std::timed_mutex& exchangeMutex() { return exchangeMutex_; }

  ExchangeStats stats() const {
    std::lock_guard<std::mutex> lock(statsMutex_);
    return stats_;
  }
  void count(uint64_t sent, uint64_t received, double seconds) {
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.collectives++;
    stats_.bytesSent += sent;
    stats_.bytesReceived += received;
    stats_.seconds += seconds;
  }

  // Waits (up to the timeout) until every live rank has called shutdown, then closes
  // the communicator and, on rank 0, the store. Collectives after it fail.
  void shutdown();

 private:
  void awaitArrivals();
  void leaveStore();
  std::vector<int> ranksAbsentFrom(const char* name, uint64_t sequence);

  ProcessGroupConfig config_;
  std::unique_ptr<TcpStoreServer> server_;  // rank 0 only
  std::unique_ptr<TcpStoreClient> store_;
  std::unique_ptr<Communicator> communicator_;
  std::mutex mutex_;
  std::timed_mutex exchangeMutex_;
  mutable std::mutex statsMutex_;
  ExchangeStats stats_;
  uint64_t sequence_ = 0;
  std::string broken_;  // why the group cannot be used any more
  std::string transport_;
  std::string whyNotSharedMemory_;
};

// The queue a process group's work runs on.
std::string processGroupQueue();

}  // namespace distribute
}  // namespace hb
