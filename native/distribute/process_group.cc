#include "native/distribute/process_group.h"

#include <cstring>
#include <exception>
#include <sstream>
#include <thread>
#include <vector>

#include "native/core/status.h"
#include "native/distribute/shared_memory_communicator.h"

namespace hb {
namespace distribute {

namespace {

using Clock = std::chrono::steady_clock;

std::string rankList(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

// What every rank says about itself at arrival; ranks compare them so a job started
// with mismatched settings fails at once, naming who differs.
std::string arrivalRecord(const ProcessGroupConfig& config) {
  return std::to_string(config.worldSize) + " " + config.backend;
}

}  // namespace

std::string processGroupQueue() { return "distribute"; }

ProcessGroup::ProcessGroup(const ProcessGroupConfig& config) : config_(config) {
  HB_CHECK(config.worldSize >= 1, "distribute.init: WORLD_SIZE must be >= 1, got ", config.worldSize);
  HB_CHECK(config.rank >= 0 && config.rank < config.worldSize, "distribute.init: RANK ", config.rank,
           " is outside the world of ", config.worldSize, " processes (ranks 0..", config.worldSize - 1, ")");
  HB_CHECK(config.timeout.count() > 0, "distribute.init: timeoutMs must be > 0");
  CommunicatorConfig comm{config.rank, config.worldSize, config.device, config.timeout};
  if (config.backend == "local") {
    HB_CHECK(config.worldSize == 1, "distribute.init: backend 'local' is for a world of 1 process, WORLD_SIZE is ",
             config.worldSize, "; use 'gloo' (CPU) or 'nccl' (GPU)");
    communicator_ = makeLocalCommunicator(comm);
    transport_ = communicator_->transport();
    return;
  }
  HB_CHECK(config.backend == "gloo" || config.backend == "nccl", "distribute.init: backend must be 'local', 'gloo' or 'nccl', got '",
           config.backend, "'");
  HB_CHECK(config.masterPort > 0 && config.masterPort < 65536, "distribute.init: MASTER_PORT must be in 1..65535, got ",
           config.masterPort);
  if (config.rank == 0) server_ = std::make_unique<TcpStoreServer>(config.masterAddr, config.masterPort);
  store_ = std::make_unique<TcpStoreClient>(config.masterAddr, config.masterPort, config.rank, config.timeout);
  awaitArrivals();
  if (config.backend == "gloo") {
    communicator_ = makeSharedMemoryCommunicator(comm, *store_, whyNotSharedMemory_);
    if (!communicator_) communicator_ = makeGlooCommunicator(comm, *store_);
  } else {
    communicator_ = makeNcclCommunicator(comm, *store_);
  }
  transport_ = communicator_->transport();
}

ProcessGroup::~ProcessGroup() {
  // The communicator's connections go before the store's: peers still shutting down
  // ask the store which ranks have gone.
  communicator_.reset();
  store_.reset();
  server_.reset();
}

void ProcessGroup::awaitArrivals() {
  const std::string mine = arrivalRecord(config_);
  store_->set("arrived/" + std::to_string(config_.rank), std::vector<char>(mine.begin(), mine.end()));
  const auto deadline = Clock::now() + config_.timeout;
  for (int r = 0; r < config_.worldSize; ++r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::vector<char> theirs;
    try {
      theirs = store_->get("arrived/" + std::to_string(r), std::max(left, std::chrono::milliseconds(1)));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Timeout) throw;
      // The connection is out of step after a timeout: ask through a new one who came.
      TcpStoreClient probe(config_.masterAddr, config_.masterPort, -1, std::chrono::milliseconds(5000));
      std::vector<int> missing;
      for (int q = 0; q < config_.worldSize; ++q) {
        if (!probe.has("arrived/" + std::to_string(q))) missing.push_back(q);
      }
      failWith(ErrorCode::Timeout, "distribute.init: rank", missing.size() == 1 ? " " : "s ", rankList(missing),
               " of ", config_.worldSize, " did not arrive within ", config_.timeout.count(),
               " ms (HB_COMM_TIMEOUT_MS / timeoutMs); was every rank started with WORLD_SIZE=", config_.worldSize, "?");
    }
    const std::string record(theirs.begin(), theirs.end());
    if (record != mine) {
      failWith(ErrorCode::Communication, "distribute.init: rank ", r, " was started with WORLD_SIZE and backend '",
               record, "' but rank ", config_.rank, " with '", mine, "'");
    }
  }
}

uint64_t ProcessGroup::beginCollective(const char* name) {
  std::lock_guard<std::mutex> lock(mutex_);
  HB_CHECK_CODE(broken_.empty(), Communication, name, ": the process group failed earlier and cannot be used (", broken_,
                "); call hb.distribute.shutdown() and start the job again");
  return ++sequence_;
}

void ProcessGroup::fail(const char* name, uint64_t sequence, const std::exception& error, Clock::time_point started) {
  if (const AgreedError* agreed = dynamic_cast<const AgreedError*>(&error)) throw *agreed;
  const Error* ours = dynamic_cast<const Error*>(&error);
  const bool transport = ours == nullptr || ours->code() == ErrorCode::Communication || ours->code() == ErrorCode::Timeout;
  if (!transport) {
    // This rank alone failed after the headers (out of memory, a device error): its
    // peers went on into the data phase, so the group is out of step from here.
    std::string why = std::string(name) + " (collective #" + std::to_string(sequence) + " on rank " +
                      std::to_string(config_.rank) + ") failed on this rank: " + error.what();
    markBroken(why);
    failWith(ours->code(), why, "; the process group cannot be used any more");
  }
  std::ostringstream message;
  message << name << " (collective #" << sequence << " on rank " << config_.rank << "): ";
  std::vector<int> gone;
  bool storeGone = false;
  if (store_) {
    // The store sees a dead peer's connection close a moment after the transport does.
    const auto deadline = Clock::now() + std::chrono::milliseconds(1000);
    try {
      for (;;) {
        gone = store_->goneRanks(std::chrono::milliseconds(5000));
        if (!gone.empty() || Clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    } catch (const std::exception&) {
      storeGone = true;
    }
  }
  const bool timedOut = Clock::now() - started >= config_.timeout;
  ErrorCode code = ErrorCode::Communication;
  if (storeGone) {
    message << "rank 0 has gone (its process exited; it also served the rendezvous store)";
  } else if (!gone.empty()) {
    message << "rank" << (gone.size() == 1 ? " " : "s ") << rankList(gone) << (gone.size() == 1 ? " has" : " have")
            << " gone (the process exited or closed its connections)";
  } else if (timedOut) {
    code = ErrorCode::Timeout;
    const std::vector<int> absent = ranksAbsentFrom(name, sequence);
    message << "no answer from the other ranks within " << config_.timeout.count() << " ms (HB_COMM_TIMEOUT_MS); ";
    if (absent.empty()) {
      message << "a peer is stuck or has not reached this collective";
    } else {
      message << "rank" << (absent.size() == 1 ? " " : "s ") << rankList(absent)
              << " never reached it (alive, but stuck or in other work)";
    }
  } else {
    message << "the transport failed";
  }
  message << " [" << config_.backend << ": " << error.what() << "]";
  markBroken(message.str());
  failWith(code, message.str());
}

std::vector<int> ProcessGroup::ranksAbsentFrom(const char* name, uint64_t sequence) {
  // Every rank that times out in this collective says so in the store; those that have
  // not within a moment never reached it. Only after a timeout: no store traffic in the
  // collectives themselves.
  const std::string key = std::string("timed_out/") + name + "#" + std::to_string(sequence) + "/";
  std::vector<int> absent;
  try {
    store_->set(key + std::to_string(config_.rank), {1});
    const auto deadline = Clock::now() + std::chrono::milliseconds(2000);
    for (;;) {
      absent.clear();
      for (int r = 0; r < config_.worldSize; ++r) {
        if (!store_->has(key + std::to_string(r))) absent.push_back(r);
      }
      if (absent.empty() || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (const std::exception&) {
    absent.clear();  // the store is gone too: say nothing rather than something wrong
  }
  return absent;
}

void ProcessGroup::markBroken(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_.empty()) broken_ = why;
  // This rank is out of step from here: its peers stop waiting for it.
  if (communicator_) communicator_->abort();
}

void ProcessGroup::shutdown() {
  bool wasHealthy;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wasHealthy = broken_.empty();
    if (wasHealthy) broken_ = "hb.distribute.shutdown() was called";
  }
  std::exception_ptr failure;
  try {
    if (store_) leaveStore();
  } catch (const Error&) {
    // A group that failed leaves as it can: its peers or rank 0's store may be gone.
    if (wasHealthy) failure = std::current_exception();
  }
  // Torn down here, on the group's own thread, not wherever the last reference goes; and
  // not under a collective another thread still runs (a step not awaited): that one
  // finishes or fails first (it sees the group broken from here on). One stuck past the
  // timeout keeps the communicator, and the group keeps it until its last reference goes.
  std::unique_lock<std::timed_mutex> exclusive(exchangeMutex_, std::defer_lock);
  if (exclusive.try_lock_for(config_.timeout)) {
    std::unique_ptr<Communicator> communicator;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      communicator = std::move(communicator_);
    }
    communicator.reset();
    store_.reset();
    server_.reset();
  }
  if (failure) std::rethrow_exception(failure);
}

void ProcessGroup::leaveStore() {
  // Leave first: rank 0 may close the store as soon as it sees the last shutdown key.
  store_->leave();
  if (config_.rank != 0) {
    try {
      store_->set("shutdown/" + std::to_string(config_.rank), {1});
    } catch (const Error& e) {
      // Rank 0 saw the key and closed its store before the answer came back (or has
      // gone): this rank has left either way.
      if (e.code() != ErrorCode::Communication) throw;
    }
    return;
  }
  store_->set("shutdown/0", {1});
  // Rank 0 serves the store: it stays until each other rank has left, or has gone.
  const auto deadline = Clock::now() + config_.timeout;
  std::vector<bool> left(size_t(config_.worldSize), false);
  left[0] = true;
  while (Clock::now() < deadline) {
    const std::vector<int> gone = store_->goneRanks(config_.timeout);
    for (int r : gone) {
      if (r >= 0 && r < config_.worldSize) left[size_t(r)] = true;
    }
    bool all = true;
    for (int r = 1; r < config_.worldSize; ++r) {
      if (!left[size_t(r)]) left[size_t(r)] = store_->has("shutdown/" + std::to_string(r));
      all = all && left[size_t(r)];
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace distribute
}  // namespace hb
