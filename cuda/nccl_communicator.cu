// GPU collectives on NCCL, opened with dlopen (cuda/cuda_library_api.h): one
// communicator per process and GPU, on a stream of its own. Rank 0 makes the unique id
// and hands it out through the rendezvous store.
//
// NCCL has no allgatherv or alltoallv: both are grouped sends and receives. A collective
// is waited for by polling the stream, so that a peer that died (NCCL's async error) or
// never came (the timeout) aborts the communicator instead of hanging the process.
#include <dlfcn.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/cuda_library_api.h"
#include "native/core/status.h"
#include "native/distribute/communicator.h"
#include "native/distribute/tcp_store.h"

namespace hb {
namespace distribute {

namespace {

constexpr int kNcclInt8 = 0, kNcclInt32 = 2, kNcclInt64 = 4, kNcclFloat32 = 7, kNcclFloat64 = 8;
constexpr int kNcclSum = 0, kNcclMax = 2, kNcclMin = 3, kNcclAvg = 4;  // ncclAvg: NCCL 2.10+
constexpr int kNcclInProgress = 7;

struct NcclApi {
  HbNcclGetUniqueIdFn getUniqueId = nullptr;
  HbNcclCommInitRankFn commInitRank = nullptr;
  HbNcclCommAbortFn commAbort = nullptr;
  HbNcclCommGetAsyncErrorFn commGetAsyncError = nullptr;
  HbNcclGetErrorStringFn getErrorString = nullptr;
  HbNcclAllReduceFn allReduce = nullptr;
  HbNcclAllGatherFn allGather = nullptr;
  HbNcclBroadcastFn broadcast = nullptr;
  HbNcclSendFn send = nullptr;
  HbNcclRecvFn recv = nullptr;
  HbNcclGroupFn groupStart = nullptr;
  HbNcclGroupFn groupEnd = nullptr;
};

template <typename Fn>
void bind(void* library, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  if (*out == nullptr) failWith(ErrorCode::Device, "nccl: libnccl has no ", name, " (NCCL 2.7 or newer is needed)");
}

const NcclApi& ncclApi() {
  void* library = cuda::ncclLibrary();
  if (library == nullptr) failWith(ErrorCode::Device, "distribute: backend 'nccl' needs libnccl.so.2: ", cuda::ncclStatus().error);
  static NcclApi api = [library] {
    NcclApi a;
    bind(library, "ncclGetUniqueId", &a.getUniqueId);
    bind(library, "ncclCommInitRank", &a.commInitRank);
    bind(library, "ncclCommAbort", &a.commAbort);
    bind(library, "ncclCommGetAsyncError", &a.commGetAsyncError);
    bind(library, "ncclGetErrorString", &a.getErrorString);
    bind(library, "ncclAllReduce", &a.allReduce);
    bind(library, "ncclAllGather", &a.allGather);
    bind(library, "ncclBroadcast", &a.broadcast);
    bind(library, "ncclSend", &a.send);
    bind(library, "ncclRecv", &a.recv);
    bind(library, "ncclGroupStart", &a.groupStart);
    bind(library, "ncclGroupEnd", &a.groupEnd);
    return a;
  }();
  return api;
}

int ncclType(DType dtype) {
  switch (dtype) {
    case DType::Float32: return kNcclFloat32;
    case DType::Float64: return kNcclFloat64;
    case DType::Int32: return kNcclInt32;
    case DType::Int64: return kNcclInt64;
    default: fail("nccl: cannot reduce ", dtypeName(dtype));
  }
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const CommunicatorConfig& config, TcpStoreClient& store) : config_(config), api_(ncclApi()) {
    HB_CHECK_CODE(config.device.isCuda(), Device, "distribute: backend 'nccl' needs a CUDA device, this rank has ",
                  config.device.str());
    try {
      connect(store);
    } catch (...) {
      release();
      throw;
    }
  }

  ~NcclCommunicator() override { release(); }

  const char* backend() const override { return "nccl"; }
  Device device() const override { return config_.device; }

  void allgatherHost(const void* mine, void* all, size_t bytes) override {
    const size_t total = bytes * size_t(config_.worldSize);
    void* scratch = nullptr;
    cuda::check(cudaMalloc(&scratch, total == 0 ? 1 : total), "nccl header buffer");
    try {
      char* own = static_cast<char*>(scratch) + bytes * size_t(config_.rank);
      cuda::check(cudaMemcpyAsync(own, mine, bytes, cudaMemcpyHostToDevice, stream_), "nccl header copy");
      ok(api_.allGather(own, scratch, bytes, kNcclInt8, comm_, stream_), "ncclAllGather");
      wait("header exchange");
      cuda::check(cudaMemcpy(all, scratch, total, cudaMemcpyDeviceToHost), "nccl header copy back");
    } catch (...) {
      cudaFree(scratch);
      throw;
    }
    cudaFree(scratch);
  }

  void allreduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    orderAfterCompute();
    const int nop = op == ReduceOp::Max ? kNcclMax : op == ReduceOp::Min ? kNcclMin : op == ReduceOp::Mean ? kNcclAvg : kNcclSum;
    ok(api_.allReduce(data, data, size_t(count), ncclType(dtype), nop, comm_, stream_), "ncclAllReduce");
    wait("allreduce");
  }

  void allgatherv(const void* in, void* out, const std::vector<int64_t>& bytesPerRank) override {
    orderAfterCompute();
    std::vector<int64_t> sendBytes(size_t(config_.worldSize), bytesPerRank[size_t(config_.rank)]);
    alltoallvRaw(in, sendBytes, /*sameInputForAll=*/true, out, bytesPerRank);
    wait("allgather");
  }

  void alltoallv(const void* in, const std::vector<int64_t>& sendBytes, void* out,
                 const std::vector<int64_t>& recvBytes) override {
    orderAfterCompute();
    alltoallvRaw(in, sendBytes, false, out, recvBytes);
    wait("alltoallv");
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    orderAfterCompute();
    ok(api_.broadcast(data, data, size_t(bytes), kNcclInt8, root, comm_, stream_), "ncclBroadcast");
    wait("broadcast");
  }

  void barrier() override {
    int32_t one = 1;
    allgatherHostScalar(&one);
  }

 private:
  void connect(TcpStoreClient& store) {
    cuda::useDevice(config_.device.index);
    cuda::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "nccl stream");
    cuda::check(cudaEventCreateWithFlags(&computeDone_, cudaEventDisableTiming), "nccl event");
    HbNcclUniqueId id;
    if (config_.rank == 0) {
      ok(api_.getUniqueId(&id), "ncclGetUniqueId");
      store.set("nccl/unique_id", std::vector<char>(id.internal, id.internal + sizeof id.internal));
    } else {
      std::vector<char> bytes = store.get("nccl/unique_id");
      HB_CHECK_CODE(bytes.size() == sizeof id.internal, Communication, "nccl: the unique id from rank 0 has ",
                    bytes.size(), " bytes, not ", sizeof id.internal);
      std::copy(bytes.begin(), bytes.end(), id.internal);
    }
    // ncclCommInitRank blocks until every rank has joined, with no timeout of its own:
    // it runs on a thread of its own, and a peer that died after the rendezvous leaves
    // that thread behind instead of hanging this rank.
    struct InitState {
      std::mutex mutex;
      std::condition_variable done;
      bool finished = false;
      int result = 0;
      void* comm = nullptr;
    };
    auto state = std::make_shared<InitState>();
    const HbNcclCommInitRankFn initRank = api_.commInitRank;
    const int world = config_.worldSize, rank = config_.rank, device = config_.device.index;
    std::thread([state, initRank, world, id, rank, device] {
      cudaSetDevice(device);
      void* comm = nullptr;
      const int result = initRank(&comm, world, id, rank);
      std::lock_guard<std::mutex> lock(state->mutex);
      state->finished = true;
      state->result = result;
      state->comm = comm;
      state->done.notify_all();
    }).detach();
    std::unique_lock<std::mutex> lock(state->mutex);
    if (!state->done.wait_for(lock, config_.timeout, [&] { return state->finished; })) {
      failWith(ErrorCode::Timeout, "nccl: ncclCommInitRank did not complete within ", config_.timeout.count(),
               " ms (a peer died after the rendezvous, or cannot reach this one)");
    }
    ok(state->result, "ncclCommInitRank");
    comm_ = state->comm;
  }

  void release() {
    if (comm_ != nullptr) api_.commAbort(comm_);
    comm_ = nullptr;
    if (computeDone_ != nullptr) cudaEventDestroy(computeDone_);
    computeDone_ = nullptr;
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  // NCCL's stream waits for the work already queued on the device's compute stream:
  // the tensors it reads (and the memory the outputs were allocated in, stream-ordered)
  // may still be in the making there.
  void orderAfterCompute() {
    cudaStream_t compute = cuda::useDevice(config_.device.index).compute;
    cuda::check(cudaEventRecord(computeDone_, compute), "nccl: cudaEventRecord");
    cuda::check(cudaStreamWaitEvent(stream_, computeDone_, 0), "nccl: cudaStreamWaitEvent");
  }

  void allgatherHostScalar(int32_t* value) {
    std::vector<int32_t> all(size_t(config_.worldSize));
    allgatherHost(value, all.data(), sizeof(int32_t));
  }

  void alltoallvRaw(const void* in, const std::vector<int64_t>& sendBytes, bool sameInputForAll, void* out,
                    const std::vector<int64_t>& recvBytes) {
    ok(api_.groupStart(), "ncclGroupStart");
    int64_t sendOffset = 0, recvOffset = 0;
    for (int peer = 0; peer < config_.worldSize; ++peer) {
      const int64_t s = sendBytes[size_t(peer)], r = recvBytes[size_t(peer)];
      const char* from = static_cast<const char*>(in) + (sameInputForAll ? 0 : sendOffset);
      char* to = static_cast<char*>(out) + recvOffset;
      if (s > 0) ok(api_.send(from, size_t(s), kNcclInt8, peer, comm_, stream_), "ncclSend");
      if (r > 0) ok(api_.recv(to, size_t(r), kNcclInt8, peer, comm_, stream_), "ncclRecv");
      sendOffset += s;
      recvOffset += r;
    }
    ok(api_.groupEnd(), "ncclGroupEnd");
  }

  void ok(int result, const char* what) {
    if (result == 0 || result == kNcclInProgress) return;
    failWith(ErrorCode::Communication, "nccl: ", what, " failed: ", api_.getErrorString(result));
  }

  // Polls the stream: NCCL reports a dead peer as an async error, and a peer that
  // never comes only as time passing.
  void wait(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream_);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) cuda::check(state, what);
      int asyncError = 0;
      api_.commGetAsyncError(comm_, &asyncError);
      if (asyncError != 0 && asyncError != kNcclInProgress) {
        api_.commAbort(comm_);
        comm_ = nullptr;
        failWith(ErrorCode::Communication, "nccl: ", what, " failed: ", api_.getErrorString(asyncError));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        api_.commAbort(comm_);
        comm_ = nullptr;
        failWith(ErrorCode::Timeout, "nccl: ", what, " did not complete within ", config_.timeout.count(), " ms");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  CommunicatorConfig config_;
  const NcclApi& api_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t computeDone_ = nullptr;
  void* comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> makeNcclCommunicator(const CommunicatorConfig& config, TcpStoreClient& store) {
  return std::make_unique<NcclCommunicator>(config, store);
}

}  // namespace distribute
}  // namespace hb
