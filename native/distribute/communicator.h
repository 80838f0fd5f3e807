// A communicator moves bytes between the ranks of a process group. It knows nothing
// of tensors: native/distribute/collectives.cc checks what the ranks agree on, converts
// wire dtypes and sizes the outputs, then calls one of these.
//
// Implementations: local (world of 1, no copies), gloo (CPU memory: shared memory between
// ranks on one machine, else Gloo over TCP) and nccl
// (CUDA memory; cuda/nccl_communicator.cc). Calls block, run on the process group's
// own thread one at a time, and throw hb::Error (ErrorCode::Communication or Timeout)
// when a peer fails; after that the communicator is not used again.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "native/core/device.h"
#include "native/core/dtype.h"

namespace hb {
namespace distribute {

class TcpStoreClient;

enum class ReduceOp { Sum, Mean, Max, Min };
const char* reduceOpName(ReduceOp op);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual const char* backend() const = 0;
  // How its bytes travel: "shm" or "tcp" for gloo, else the backend's name.
  virtual const char* transport() const { return backend(); }
  // Where the buffers it takes must live: the host, or this process's CUDA device.
  virtual Device device() const = 0;

  // Every rank's `bytes` from `mine`, rank by rank, into `all` (worldSize * bytes).
  // Host memory whatever device(): the small headers the ranks compare.
  virtual void allgatherHost(const void* mine, void* all, size_t bytes) = 0;
  // In place, `count` elements of `dtype` (Mean only for float dtypes).
  virtual void allreduce(void* data, int64_t count, DType dtype, ReduceOp op) = 0;
  // Rank r's `bytesPerRank[r]` bytes, concatenated rank by rank into `out`.
  virtual void allgatherv(const void* in, void* out, const std::vector<int64_t>& bytesPerRank) = 0;
  // sendBytes[p] bytes to rank p, taken in rank order from `in`; recvBytes[p] from p,
  // placed in rank order in `out`.
  virtual void alltoallv(const void* in, const std::vector<int64_t>& sendBytes, void* out,
                         const std::vector<int64_t>& recvBytes) = 0;
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // This rank's group has broken: tell peers that wait for it, where the transport can
  // (a closed connection already does for Gloo's TCP).
  virtual void abort() {}
};

struct CommunicatorConfig {
  int rank = 0;
  int worldSize = 1;
  Device device;                      // this rank's device (nccl: its GPU)
  std::chrono::milliseconds timeout;  // per collective
};

std::unique_ptr<Communicator> makeLocalCommunicator(const CommunicatorConfig& config);
// Built only with Gloo (HB_GLOO); otherwise throws, saying why (glooUnavailableReason).
std::unique_ptr<Communicator> makeGlooCommunicator(const CommunicatorConfig& config, TcpStoreClient& store);
// libnccl.so.2 opened with dlopen; throws when CUDA or NCCL cannot be used.
std::unique_ptr<Communicator> makeNcclCommunicator(const CommunicatorConfig& config, TcpStoreClient& store);

bool glooCompiled();
// Empty when Gloo is compiled in; else why not.
std::string glooUnavailableReason();

}  // namespace distribute
}  // namespace hb
