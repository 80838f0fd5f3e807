// A world of one process: every collective's result is its input, so nothing moves.
// collectives.cc returns the input tensor itself for a world of one; these only run
// when called directly.
#include <cstring>

#include "native/distribute/communicator.h"

namespace hb {
namespace distribute {

namespace {

class LocalCommunicator : public Communicator {
 public:
  explicit LocalCommunicator(const CommunicatorConfig& config) : device_(config.device) {}
  const char* backend() const override { return "local"; }
  Device device() const override { return device_; }
  void allgatherHost(const void* mine, void* all, size_t bytes) override {
    if (bytes > 0 && all != mine) std::memmove(all, mine, bytes);
  }
  void allreduce(void*, int64_t, DType, ReduceOp) override {}
  void allgatherv(const void* in, void* out, const std::vector<int64_t>& bytesPerRank) override {
    if (bytesPerRank[0] > 0 && out != in) std::memmove(out, in, size_t(bytesPerRank[0]));
  }
  void alltoallv(const void* in, const std::vector<int64_t>& sendBytes, void* out, const std::vector<int64_t>&) override {
    if (sendBytes[0] > 0 && out != in) std::memmove(out, in, size_t(sendBytes[0]));
  }
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}

 private:
  Device device_;
};

}  // namespace

const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

std::unique_ptr<Communicator> makeLocalCommunicator(const CommunicatorConfig& config) {
  return std::make_unique<LocalCommunicator>(config);
}

}  // namespace distribute
}  // namespace hb
