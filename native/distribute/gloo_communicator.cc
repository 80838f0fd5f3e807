// CPU collectives on Gloo's TCP transport. Compiled only when CMake found Gloo
// (HB_GLOO); gloo_unavailable.cc stands in otherwise.
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <vector>

#include "native/core/status.h"
#include "native/distribute/communicator.h"
#include "native/distribute/rank_order_reduce.h"
#include "native/distribute/tcp_store.h"

namespace hb {
namespace distribute {

namespace {

// Gloo's view of our store during connectFullMesh.
class GlooStore : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(TcpStoreClient& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_.set(key, data); }
  std::vector<char> get(const std::string& key) override { return store_.get(key); }
  void wait(const std::vector<std::string>& keys) override {
    for (const std::string& key : keys) store_.get(key);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const std::string& key : keys) store_.get(key, timeout);
  }

 private:
  TcpStoreClient& store_;
};

// Gloo takes a pointer even for zero bytes; it must not be null.
template <typename T>
T* nonNull(T* p) {
  static char empty[8];
  return p != nullptr ? p : reinterpret_cast<T*>(empty);
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const CommunicatorConfig& config, TcpStoreClient& store) : config_(config) {
    gloo::transport::tcp::attr attr;
    // The address this machine reaches rank 0's store by: reachable from the others.
    attr.hostname = store.localAddress();
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(config.rank, config.worldSize);
      context->setTimeout(config.timeout);
      GlooStore glooStore(store);
      gloo::rendezvous::PrefixStore prefixed("gloo", glooStore);
      context->connectFullMesh(prefixed, device_);
      context_ = context;
    } catch (const gloo::Exception& e) {
      failWith(ErrorCode::Communication, "gloo: could not connect rank ", config.rank, " to its peers: ", e.what());
    }
  }

  const char* backend() const override { return "gloo"; }
  const char* transport() const override { return "tcp"; }
  Device device() const override { return Device::cpu(); }

  // Gloo divides by the element count in places: a collective of nothing (which every
  // rank agrees on, from the headers) dies of SIGFPE there, so it returns at once.
  void allgatherHost(const void* mine, void* all, size_t bytes) override {
    if (bytes == 0) return;
    gloo::AllgatherOptions options(context_);
    options.setInput(nonNull(static_cast<char*>(const_cast<void*>(mine))), bytes);
    options.setOutput(nonNull(static_cast<char*>(all)), bytes * size_t(config_.worldSize));
    gloo::allgather(options);
  }

  void allreduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    const size_t bytes = size_t(count) * dtypeSize(dtype);
    if (bytes <= kGatherReduceBytes && bytes * size_t(config_.worldSize) <= 4 * kGatherReduceBytes) {
      // Small: one allgather and a local reduction in rank order. One round trip
      // instead of the ring's 2(W-1), which dominate below a few hundred KiB.
      gatherReduce(data, count, dtype, op);
      return;
    }
    gloo::AllreduceOptions options(context_);
    switch (dtype) {
      case DType::Float32: setReduce<float>(options, data, count, op); break;
      case DType::Float64: setReduce<double>(options, data, count, op); break;
      case DType::Int32: setReduce<int32_t>(options, data, count, op); break;
      case DType::Int64: setReduce<int64_t>(options, data, count, op); break;
      default: fail("allreduce: gloo cannot reduce ", dtypeName(dtype));
    }
    gloo::allreduce(options);
    if (op == ReduceOp::Mean) divideBy(data, count, dtype, config_.worldSize);
  }

  void allgatherv(const void* in, void* out, const std::vector<int64_t>& bytesPerRank) override {
    if (std::all_of(bytesPerRank.begin(), bytesPerRank.end(), [](int64_t b) { return b == 0; })) return;
    gloo::AllgathervOptions options(context_);
    options.setInput(nonNull(static_cast<char*>(const_cast<void*>(in))), size_t(bytesPerRank[size_t(config_.rank)]));
    options.setOutput(nonNull(static_cast<char*>(out)), std::vector<size_t>(bytesPerRank.begin(), bytesPerRank.end()));
    gloo::allgatherv(options);
  }

  void alltoallv(const void* in, const std::vector<int64_t>& sendBytes, void* out,
                 const std::vector<int64_t>& recvBytes) override {
    gloo::AlltoallvOptions options(context_);
    options.setInput(nonNull(static_cast<char*>(const_cast<void*>(in))), sendBytes);
    options.setOutput(nonNull(static_cast<char*>(out)), recvBytes);
    gloo::alltoallv(options);
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    if (bytes == 0) return;
    gloo::BroadcastOptions options(context_);
    options.setOutput(nonNull(static_cast<char*>(data)), size_t(bytes));
    options.setRoot(root);
    gloo::broadcast(options);
  }

  void barrier() override {
    gloo::BarrierOptions options(context_);
    gloo::barrier(options);
  }

 private:
  static constexpr size_t kGatherReduceBytes = 256 << 10;

  void gatherReduce(void* data, int64_t count, DType dtype, ReduceOp op) {
    const size_t bytes = size_t(count) * dtypeSize(dtype);
    std::vector<char> all(bytes * size_t(config_.worldSize));
    allgatherHost(data, all.data(), bytes);
    std::vector<const void*> inputs(size_t(config_.worldSize));
    for (int r = 0; r < config_.worldSize; ++r) inputs[size_t(r)] = all.data() + size_t(r) * bytes;
    reduceInRankOrder(inputs.data(), config_.worldSize, data, count, dtype, op, "gloo");
  }

  static void divideBy(void* data, int64_t count, DType dtype, int worldSize) {
    if (dtype == DType::Float32) {
      float* x = static_cast<float*>(data);
      for (int64_t i = 0; i < count; ++i) x[i] /= float(worldSize);
    } else if (dtype == DType::Float64) {
      double* x = static_cast<double*>(data);
      for (int64_t i = 0; i < count; ++i) x[i] /= double(worldSize);
    }
  }

  template <typename T>
  void setReduce(gloo::AllreduceOptions& options, void* data, int64_t count, ReduceOp op) {
    options.setOutput(nonNull(static_cast<T*>(data)), size_t(count));
    void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
    if (op == ReduceOp::Max) fn = &gloo::max<T>;
    if (op == ReduceOp::Min) fn = &gloo::min<T>;
    options.setReduceFunction(fn);
  }

  CommunicatorConfig config_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace

std::unique_ptr<Communicator> makeGlooCommunicator(const CommunicatorConfig& config, TcpStoreClient& store) {
  return std::make_unique<GlooCommunicator>(config, store);
}

bool glooCompiled() { return true; }
std::string glooUnavailableReason() { return ""; }

}  // namespace distribute
}  // namespace hb
