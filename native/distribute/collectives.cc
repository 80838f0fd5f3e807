#include "native/distribute/collectives.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>

#include "cuda/cuda_backend.h"
#include "native/core/executor.h"
#include "native/core/status.h"
#include "native/kernels/wire_cast.h"

namespace hb {
namespace distribute {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kHeaderMagic = 0x48424348;  // 'HBCH'
constexpr int kMaxDims = 8;
// alltoallv's counts ride in the header for worlds up to this size (one round trip
// less); larger worlds exchange them in a second allgather.
constexpr int kInlineCounts = 64;

struct CollectiveHeader {
  uint32_t magic = kHeaderMagic;
  int32_t kind = 0;
  uint64_t sequence = 0;
  int32_t rank = 0;
  int32_t dtype = -1;
  int32_t op = -1;
  int32_t root = -1;
  int32_t wire = -1;
  int32_t ndims = 0;
  int64_t dims[kMaxDims] = {0};
  char failure[152] = {0};  // this rank's own arguments failed: why (cut short)
  int64_t counts[kInlineCounts] = {0};  // alltoallv: rows to each rank
};
static_assert(sizeof(CollectiveHeader) == 768, "the header is exchanged as 768 bytes");

std::string shapeText(const CollectiveHeader& h, int from = 0) {
  std::ostringstream out;
  out << "[";
  for (int i = from; i < h.ndims; ++i) out << (i > from ? ", " : "") << h.dims[i];
  out << "]";
  return out.str();
}

// A rank disagrees with rank 0 about something every rank must agree on.
[[noreturn]] void disagree(const char* name, ErrorCode code, const char* what, const std::string& at0, int rank,
                           const std::string& atRank) {
  std::ostringstream message;
  message << name << ": ranks disagree on the " << what << ": rank 0 has " << at0 << ", rank " << rank << " has " << atRank;
  throw AgreedError(message.str(), code);
}

std::string dtypeText(int32_t dtype) {
  return dtype >= 0 && dtype < kDTypeCount ? dtypeName(DType(dtype)) : std::string("none");
}

// Raised when ranks are not even in the same collective: the sequence of calls is out
// of step and nothing after can be trusted, so the group breaks.
struct OutOfStep : Error {
  explicit OutOfStep(const std::string& message) : Error(message, ErrorCode::Communication) {}
};

std::vector<CollectiveHeader> exchangeHeaders(ProcessGroup& group, CollectiveHeader mine) {
  mine.rank = group.rank();
  std::vector<CollectiveHeader> all(size_t(group.worldSize()));
  group.communicator().allgatherHost(&mine, all.data(), sizeof mine);
  const char* name = collectiveName(CollectiveKind(mine.kind));
  for (const CollectiveHeader& h : all) {
    if (h.magic != kHeaderMagic) throw OutOfStep(std::string(name) + ": a peer sent a malformed header (another hb-ts version?)");
  }
  auto outOfStep = [&](const CollectiveHeader& h) {
    std::ostringstream message;
    message << "ranks called different collectives: rank " << mine.rank << " is in " << name << " #" << mine.sequence
            << ", rank " << h.rank << " in " << collectiveName(CollectiveKind(h.kind)) << " #" << h.sequence
            << "; every rank must call the same collectives in the same order";
    return OutOfStep(message.str());
  };
  for (const CollectiveHeader& h : all) {
    if (h.sequence != mine.sequence) throw outOfStep(h);
  }
  // A failure announced in this exchange is heard before kinds are compared: the
  // announcing rank's step failed before an exchange that may be of another kind than the
  // one its peers are in, and its reason is what every rank reports. A rank whose own
  // arguments failed reports its own reason; the others, the first failed rank's.
  if (mine.failure[0] != 0) {
    throw AgreedError(std::string(name) + ": " + std::string(mine.failure, strnlen(mine.failure, sizeof mine.failure)),
                      ErrorCode::InvalidArgument);
  }
  for (const CollectiveHeader& h : all) {
    if (h.failure[0] != 0) {
      throw AgreedError(std::string(name) + ": rank " + std::to_string(h.rank) + " failed its own checks: " +
                            std::string(h.failure, strnlen(h.failure, sizeof h.failure)),
                        ErrorCode::InvalidArgument);
    }
  }
  for (const CollectiveHeader& h : all) {
    if (h.kind != mine.kind) throw outOfStep(h);
  }
  return all;
}

void setFailure(CollectiveHeader& header, const std::string& why) {
  const size_t n = std::min(why.size(), sizeof header.failure - 1);
  std::memcpy(header.failure, why.data(), n);
  header.failure[n] = 0;
  if (n == 0) header.failure[0] = '?';
}

void describe(CollectiveHeader& header, const Tensor& t) {
  header.dtype = int32_t(t.dtype);
  header.ndims = int32_t(std::min<size_t>(t.shape.size(), kMaxDims));
  for (int i = 0; i < header.ndims; ++i) header.dims[i] = t.shape[size_t(i)];
}

void checkSame(const std::vector<CollectiveHeader>& all, const char* name, bool allDims) {
  const CollectiveHeader& first = all[0];
  for (const CollectiveHeader& h : all) {
    if (h.dtype != first.dtype) disagree(name, ErrorCode::Type, "dtype", dtypeText(first.dtype), h.rank, dtypeText(h.dtype));
    const int from = allDims ? 0 : 1;
    bool same = h.ndims == first.ndims;
    for (int i = from; same && i < h.ndims; ++i) same = h.dims[i] == first.dims[i];
    if (!same) {
      disagree(name, ErrorCode::Shape, allDims ? "shape" : "shape after the first dimension", shapeText(first, from),
               h.rank, shapeText(h, from));
    }
    if (h.op != first.op) {
      disagree(name, ErrorCode::InvalidArgument, "op", reduceOpName(ReduceOp(first.op)), h.rank, reduceOpName(ReduceOp(h.op)));
    }
    if (h.root != first.root) disagree(name, ErrorCode::InvalidArgument, "root", std::to_string(first.root), h.rank, std::to_string(h.root));
    if (h.wire != first.wire) disagree(name, ErrorCode::Type, "wire dtype", dtypeText(first.wire), h.rank, dtypeText(h.wire));
  }
}

// `t` in `device`'s memory: itself, or a copy made by the executor of the GPU involved.
Tensor staged(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor out;
  runOnDeviceAndWait(device.isCuda() ? device : t.device(), [&] { out = copyTensor(t, device); });
  return out;
}

// A copy on the same device, to work on in place (the input may view a JS array).
Tensor privateCopy(const Tensor& t) {
  if (!t.device().isCuda()) return copyTensor(t, t.device());
  Tensor out;
  runOnDeviceAndWait(t.device(), [&] { out = copyTensor(t, t.device()); });
  return out;
}

Tensor allocate(Device device, DType dtype, std::vector<int64_t> shape) {
  Tensor t{nullptr, dtype, std::move(shape)};
  t.buffer = Buffer::allocate(device, std::max<size_t>(t.bytes(), 1));
  return t;
}

int64_t rowElements(const Tensor& t) {
  int64_t n = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) n *= t.shape[i];
  return n;
}

// The 'local' backend (a world of one) returns inputs as they are; Gloo and NCCL run
// their whole path even alone, so a world of one exercises what a larger one runs.
bool isLocal(const ProcessGroup& group) { return group.backend() == "local"; }

// The payload bytes the running collective moves (ExchangeStats), set by its body.
thread_local uint64_t payloadSent = 0;
thread_local uint64_t payloadReceived = 0;

void payload(uint64_t sent, uint64_t received) {
  payloadSent = sent;
  payloadReceived = received;
}

// Runs one collective: numbers it, counts it (ExchangeStats), and turns what escapes into
// the Error every rank can act on (ProcessGroup::fail).
template <typename Body>
auto run(ProcessGroup& group, CollectiveKind kind, Body body) -> decltype(body(uint64_t(0))) {
  const char* name = collectiveName(kind);
  // Bounded: a compiled step's collective waiting for this thread's device while that
  // device's thread waits here would otherwise never end.
  std::unique_lock<std::timed_mutex> exclusive(group.exchangeMutex(), std::defer_lock);
  if (!exclusive.try_lock_for(group.config().timeout)) {
    failWith(ErrorCode::Timeout, name, ": another collective of this process held the process group for ",
             group.config().timeout.count(), " ms (HB_COMM_TIMEOUT_MS); hb.distribute's collectives and a running step's wait for each other");
  }
  const uint64_t sequence = group.beginCollective(name);
  const auto started = Clock::now();
  payload(0, 0);
  try {
    auto result = body(sequence);
    group.count(payloadSent, payloadReceived, std::chrono::duration<double>(Clock::now() - started).count());
    return result;
  } catch (const std::bad_alloc&) {
    // This rank alone ran out of memory while its peers went on: out of step.
    group.markBroken(std::string(name) + " #" + std::to_string(sequence) + " ran out of memory on rank " +
                     std::to_string(group.rank()));
    throw;
  } catch (const OutOfStep& e) {
    group.markBroken(e.what());
    throw;
  } catch (const std::exception& e) {
    group.fail(name, sequence, e, started);
  }
}

CollectiveHeader headerFor(CollectiveKind kind, uint64_t sequence) {
  CollectiveHeader h;
  h.kind = int32_t(kind);
  h.sequence = sequence;
  return h;
}

// The checks a rank can make alone; the first failure, or empty.
std::string checkRank(const Tensor& t) {
  if (int(t.shape.size()) > kMaxDims) return "tensors of rank above 8 are not supported";
  return "";
}

}  // namespace

const char* collectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::Allreduce: return "allreduce";
    case CollectiveKind::Allgather: return "allgather";
    case CollectiveKind::Alltoallv: return "alltoallv";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "collective";
}

Tensor allreduce(ProcessGroup& group, const Tensor& input, ReduceOp op) {
  std::string why = checkRank(input);
  const bool floating = input.dtype == DType::Float32 || input.dtype == DType::Float64;
  const bool integral = input.dtype == DType::Int32 || input.dtype == DType::Int64;
  if (why.empty() && !floating && !integral) why = std::string("cannot reduce ") + dtypeName(input.dtype);
  if (why.empty() && op == ReduceOp::Mean && !floating) why = std::string("op 'mean' needs float32 or float64, the tensor is ") + dtypeName(input.dtype);
  if (isLocal(group)) {
    HB_CHECK(why.empty(), "allreduce: ", why);
    return input;
  }
  return run(group, CollectiveKind::Allreduce, [&](uint64_t sequence) {
    CollectiveHeader mine = headerFor(CollectiveKind::Allreduce, sequence);
    describe(mine, input);
    mine.op = int32_t(op);
    if (!why.empty()) setFailure(mine, why);
    checkSame(exchangeHeaders(group, mine), "allreduce", true);
    Communicator& comm = group.communicator();
    Tensor work = input.device() == comm.device() ? privateCopy(input) : staged(input, comm.device());
    comm.allreduce(work.buffer->data(), work.size(), work.dtype, op);
    payload(work.bytes(), work.bytes());
    return staged(work, input.device());
  });
}

RowsResult allgather(ProcessGroup& group, const Tensor& input) {
  std::string why = checkRank(input);
  if (why.empty() && input.shape.empty()) why = "needs a tensor of rank >= 1 (rows to gather), got a scalar";
  if (isLocal(group)) {
    HB_CHECK(why.empty(), "allgather: ", why);
    return RowsResult{input, {input.shape[0]}};
  }
  return run(group, CollectiveKind::Allgather, [&](uint64_t sequence) {
    CollectiveHeader mine = headerFor(CollectiveKind::Allgather, sequence);
    describe(mine, input);
    if (!why.empty()) setFailure(mine, why);
    const std::vector<CollectiveHeader> all = exchangeHeaders(group, mine);
    checkSame(all, "allgather", false);
    Communicator& comm = group.communicator();
    const Tensor in = staged(input, comm.device());
    const int64_t rowBytes = rowElements(in) * int64_t(dtypeSize(in.dtype));
    std::vector<int64_t> rows, bytes;
    for (const CollectiveHeader& h : all) {
      rows.push_back(h.dims[0]);
      bytes.push_back(h.dims[0] * rowBytes);
    }
    std::vector<int64_t> shape = in.shape;
    shape[0] = std::accumulate(rows.begin(), rows.end(), int64_t(0));
    Tensor out = allocate(comm.device(), in.dtype, shape);
    comm.allgatherv(in.buffer->data(), out.buffer->data(), bytes);
    payload(in.bytes(), out.bytes() - in.bytes());
    return RowsResult{staged(out, input.device()), rows};
  });
}

RowsResult alltoallv(ProcessGroup& group, const Tensor& input, const std::vector<int64_t>& sendRows,
                     std::optional<DType> wire) {
  const int world = group.worldSize();
  std::string why = checkRank(input);
  if (why.empty() && input.shape.empty()) why = "needs a tensor of rank >= 1 (rows to send), got a scalar";
  if (why.empty() && int(sendRows.size()) != world) {
    why = "sendCounts has " + std::to_string(sendRows.size()) + " entries for a world of " + std::to_string(world);
  }
  if (why.empty()) {
    int64_t total = 0;
    for (size_t p = 0; p < sendRows.size() && why.empty(); ++p) {
      if (sendRows[p] < 0) why = "sendCounts[" + std::to_string(p) + "] is negative (" + std::to_string(sendRows[p]) + ")";
      total += sendRows[p];
    }
    if (why.empty() && total != input.shape[0]) {
      why = "sendCounts add up to " + std::to_string(total) + " rows but the tensor has " + std::to_string(input.shape[0]);
    }
  }
  if (why.empty() && wire && input.dtype != DType::Float32) {
    why = std::string("a wire dtype is for float32 rows, the tensor is ") + dtypeName(input.dtype);
  }
  if (why.empty() && !(input.dtype == DType::Float32 || input.dtype == DType::Float64 || input.dtype == DType::Int32 ||
                       input.dtype == DType::Int64)) {
    why = std::string("cannot exchange ") + dtypeName(input.dtype);
  }
  if (isLocal(group)) {
    HB_CHECK(why.empty(), "alltoallv: ", why);
    return RowsResult{input, sendRows};
  }
  return run(group, CollectiveKind::Alltoallv, [&](uint64_t sequence) {
    CollectiveHeader mine = headerFor(CollectiveKind::Alltoallv, sequence);
    describe(mine, input);
    if (wire) mine.wire = int32_t(*wire);
    if (!why.empty()) setFailure(mine, why);
    const bool inline_ = world <= kInlineCounts;
    if (inline_ && why.empty()) std::copy(sendRows.begin(), sendRows.end(), mine.counts);
    const std::vector<CollectiveHeader> all = exchangeHeaders(group, mine);
    checkSame(all, "alltoallv", false);
    Communicator& comm = group.communicator();
    std::vector<int64_t> recvRows(static_cast<size_t>(world));
    if (inline_) {
      for (int r = 0; r < world; ++r) recvRows[size_t(r)] = all[size_t(r)].counts[group.rank()];
    } else {
      // Every rank's counts, W x W: row r is what rank r sends to each peer.
      std::vector<int64_t> counts(size_t(world) * size_t(world));
      comm.allgatherHost(sendRows.data(), counts.data(), sizeof(int64_t) * size_t(world));
      for (int r = 0; r < world; ++r) recvRows[size_t(r)] = counts[size_t(r) * size_t(world) + size_t(group.rank())];
    }

    const Tensor in = staged(input, comm.device());
    const Device device = comm.device();
    const int64_t width = rowElements(in);
    const bool bfloat = wire && *wire == DType::BFloat16;
    const size_t valueBytes = wire ? 2 : dtypeSize(in.dtype);
    std::vector<int64_t> sendBytes(static_cast<size_t>(world)), recvBytes(static_cast<size_t>(world));
    for (int p = 0; p < world; ++p) {
      sendBytes[size_t(p)] = sendRows[size_t(p)] * width * int64_t(valueBytes);
      recvBytes[size_t(p)] = recvRows[size_t(p)] * width * int64_t(valueBytes);
    }
    std::vector<int64_t> shape = in.shape;
    shape[0] = std::accumulate(recvRows.begin(), recvRows.end(), int64_t(0));
    Tensor out = allocate(device, in.dtype, shape);
    if (!wire) {
      comm.alltoallv(in.buffer->data(), sendBytes, out.buffer->data(), recvBytes);
    } else {
      Tensor packed = allocate(device, *wire, in.shape);
      Tensor received = allocate(device, *wire, shape);
      if (device.isCuda()) {
        cuda::packWire(device.index, in.data<float>(), packed.data<uint16_t>(), in.size(), bfloat);
      } else {
        packWireCpu(in.data<float>(), packed.data<uint16_t>(), in.size(), bfloat);
      }
      comm.alltoallv(packed.buffer->data(), sendBytes, received.buffer->data(), recvBytes);
      if (device.isCuda()) {
        cuda::unpackWire(device.index, received.data<uint16_t>(), out.data<float>(), out.size(), bfloat);
      } else {
        unpackWireCpu(received.data<uint16_t>(), out.data<float>(), out.size(), bfloat);
      }
    }
    uint64_t sent = 0, received = 0;
    for (int p = 0; p < world; ++p) {
      if (p == group.rank()) continue;
      sent += uint64_t(sendBytes[size_t(p)]);
      received += uint64_t(recvBytes[size_t(p)]);
    }
    payload(sent, received);
    return RowsResult{staged(out, input.device()), recvRows};
  });
}

Tensor broadcast(ProcessGroup& group, const Tensor& input, int root) {
  std::string why = checkRank(input);
  if (why.empty() && (root < 0 || root >= group.worldSize())) {
    why = "root " + std::to_string(root) + " is not a rank of the world of " + std::to_string(group.worldSize());
  }
  if (isLocal(group)) {
    HB_CHECK(why.empty(), "broadcast: ", why);
    return input;
  }
  return run(group, CollectiveKind::Broadcast, [&](uint64_t sequence) {
    CollectiveHeader mine = headerFor(CollectiveKind::Broadcast, sequence);
    describe(mine, input);
    mine.root = root;
    if (!why.empty()) setFailure(mine, why);
    checkSame(exchangeHeaders(group, mine), "broadcast", true);
    Communicator& comm = group.communicator();
    Tensor work = input.device() == comm.device() ? privateCopy(input) : staged(input, comm.device());
    comm.broadcast(work.buffer->data(), int64_t(work.bytes()), root);
    payload(group.rank() == root ? work.bytes() : 0, group.rank() == root ? 0 : work.bytes());
    return staged(work, input.device());
  });
}

void barrier(ProcessGroup& group) {
  if (isLocal(group)) return;
  run(group, CollectiveKind::Barrier, [&](uint64_t sequence) {
    // Every rank's header arrives only once every rank has sent it: that is a barrier.
    exchangeHeaders(group, headerFor(CollectiveKind::Barrier, sequence));
    return 0;
  });
}

void announceFailure(ProcessGroup& group, CollectiveKind kind, const std::string& why) {
  if (isLocal(group)) fail(collectiveName(kind), ": ", why);
  run(group, kind, [&](uint64_t sequence) {
    CollectiveHeader mine = headerFor(kind, sequence);
    setFailure(mine, why);
    exchangeHeaders(group, mine);
    return 0;
  });
  fail(collectiveName(kind), ": ", why);  // not reached: the exchange throws
}

}  // namespace distribute
}  // namespace hb
