// CPU collectives between the ranks of one machine through one shared-memory segment,
// in place of Gloo's TCP over loopback (which costs two kernel copies, a wake-up and
// Gloo's own thread per message: 0.4 ms for 1 KiB, about 1 GB/s for MiB).
//
// The segment holds, per rank, a control line (counters the others wait on) and an
// outbox of two halves. A collective is a sequence of rounds, the same on every rank:
// in round R a rank waits until every peer has finished reading its half R % 2 (they
// read it in round R - 2), writes that half, publishes R, then reads each peer's half
// R % 2 once the peer has published R, and says it is done with R. Messages larger
// than a half take several rounds; two halves let a rank write round R + 1 while a
// slow peer still reads round R. Each half starts with a header saying which
// collective and chunk it holds and how many bytes the whole message has, so ranks
// that are out of step or disagree on sizes fail at once instead of reading garbage.
//
// Waiting spins briefly, then sleeps on a futex in slices, between which it checks
// that the peers' processes are alive (pidfds) and have not given up (a rank whose collective
// failed raises its `failed` flag), and the collective's deadline.
#include "native/distribute/shared_memory_communicator.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#if defined(__linux__)
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "native/core/status.h"
#include "native/distribute/rank_order_reduce.h"
#include "native/distribute/tcp_store.h"

namespace hb {
namespace distribute {

#if defined(__linux__)

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kSegmentMagic = 0x31464d5353424842ull;  // 'HBSSMF1' + version
constexpr size_t kLine = 128;                             // apart from a neighbour's prefetch too
constexpr size_t kPage = 4096;
// What the segment may take of /dev/shm for all ranks together (Docker gives 64 MiB):
// each half is this / (2 W), within [256 KiB, 4 MiB].
constexpr size_t kSegmentBudget = size_t(32) << 20;
constexpr size_t kMinHalf = size_t(256) << 10;
constexpr size_t kMaxHalf = size_t(4) << 20;
// Beyond this many ranks on one machine an alltoallv's slot per peer would be too
// small to be worth it (a 256 KiB half over 63 peers: 4 KiB each); they use TCP.
constexpr int kMaxRanks = 64;

struct SegmentHeader {
  uint64_t magic;
  uint32_t worldSize;
  uint32_t reserved;
  uint64_t halfBytes;
  uint64_t totalBytes;
};

struct alignas(kLine) RankControl {
  std::atomic<uint32_t> published;  // the last round this rank's half was written for
  std::atomic<uint32_t> done;       // the last round it finished reading its peers' halves
  std::atomic<uint32_t> sleepers;   // peers asleep on published or done
  std::atomic<uint32_t> failed;     // its collective failed: it will not publish again
  std::atomic<int32_t> pid;         // set when it maps the segment, for checkPeers
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "counters shared between processes must be lock-free");
static_assert(sizeof(RankControl) == kLine, "one control line per rank");

enum class RoundKind : uint32_t { AllgatherV = 1, AllReduce, AllToAllV, Broadcast, Barrier };

// The start of every half: what it holds. Then worldSize totals: per destination for
// alltoallv (bytes to rank p), else only the first: the bytes (allreduce: elements) of
// the whole message.
struct RoundHeader {
  uint32_t kind;
  uint32_t more;  // alltoallv: this rank has bytes for a later round
  uint32_t round;
  uint32_t reserved;
  uint64_t chunk;
  int64_t* totals() { return reinterpret_cast<int64_t*>(this + 1); }
  const int64_t* totals() const { return reinterpret_cast<const int64_t*>(this + 1); }
};

size_t roundHeaderBytes(int worldSize) {
  const size_t bytes = sizeof(RoundHeader) + sizeof(int64_t) * size_t(worldSize);
  return (bytes + 63) & ~size_t(63);
}

size_t alignUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

std::string readSmallFile(const char* path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

std::string linkTarget(const char* path) {
  char buffer[256];
  const ssize_t n = readlink(path, buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, size_t(n)) : std::string();
}

// Ranks that print the same identity share /dev/shm, process ids and the kernel's
// futexes. One that cannot take part says why after a '!'.
std::string hostIdentity() {
  const char* setting = std::getenv("HB_COMM_SHM");
  if (setting != nullptr && std::string(setting) == "0") return "!HB_COMM_SHM=0";
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::string boot = readSmallFile("/proc/sys/kernel/random/boot_id");
  if (boot.empty()) return "!no /proc/sys/kernel/random/boot_id to tell its machine by";
  return std::string(host) + "|" + boot + "|" + linkTarget("/proc/self/ns/ipc") + "|" + linkTarget("/proc/self/ns/mnt") +
         "|" + linkTarget("/proc/self/ns/pid") + "|" + std::to_string(getuid());
}

long futexCall(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is in memory shared with other processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

bool reached(uint32_t value, uint32_t round) { return int32_t(value - round) >= 0; }

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// pidfd_open is 434 on every architecture but alpha; older headers lack the name.
#if !defined(SYS_pidfd_open) && (defined(__x86_64__) || defined(__aarch64__))
#define SYS_pidfd_open 434
#endif

// A handle on a peer's process, taken right after it mapped the segment, so a pid the
// kernel reuses later cannot pass for the peer. -1 where the kernel has no pidfd_open
// (before Linux 5.3) or the peer has already gone: processGone's pid checks then.
int openProcessHandle(int32_t pid) {
#if defined(SYS_pidfd_open)
  if (pid > 0) return int(syscall(SYS_pidfd_open, pid_t(pid), 0));
#endif
  return -1;
}

// A process that has exited, or exited and awaits its parent (a zombie).
bool processGone(int handle, int32_t pid) {
  if (handle >= 0) {
    pollfd p{handle, POLLIN, 0};  // readable once the process has exited
    return ::poll(&p, 1, 0) > 0;
  }
  if (pid <= 0) return false;
  if (kill(pid_t(pid), 0) != 0 && errno == ESRCH) return true;
  const std::string stat = readSmallFile(("/proc/" + std::to_string(pid) + "/stat").c_str());
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

class SharedMemoryCommunicator : public Communicator {
 public:
  SharedMemoryCommunicator(const CommunicatorConfig& config, char* base, size_t bytes)
      : config_(config), base_(base), bytes_(bytes) {
    const SegmentHeader* header = reinterpret_cast<const SegmentHeader*>(base_);
    half_ = size_t(header->halfBytes);
    headerBytes_ = roundHeaderBytes(config.worldSize);
    me_ = config.rank;
    for (int q = 0; q < config.worldSize; ++q) {
      handles_.push_back(q == me_ ? -1 : openProcessHandle(control(q).pid.load(std::memory_order_acquire)));
    }
  }
  ~SharedMemoryCommunicator() override {
    abort();  // a peer still waiting for this rank learns at once that it will not come
    for (int handle : handles_) {
      if (handle >= 0) ::close(handle);
    }
    munmap(base_, bytes_);
  }
  SharedMemoryCommunicator(const SharedMemoryCommunicator&) = delete;
  SharedMemoryCommunicator& operator=(const SharedMemoryCommunicator&) = delete;

  // This rank will run no more rounds: peers waiting for it fail now, not at the timeout.
  // Safe after a completed collective: a peer never waits again for a round this rank
  // has finished.
  void abort() override {
    failed_ = true;
    RankControl& mine = control(me_);
    mine.failed.store(1, std::memory_order_seq_cst);
    futexCall(&mine.published, FUTEX_WAKE, INT_MAX, nullptr);
    futexCall(&mine.done, FUTEX_WAKE, INT_MAX, nullptr);
  }

  const char* backend() const override { return "gloo"; }
  const char* transport() const override { return "shm"; }
  Device device() const override { return Device::cpu(); }

  void allgatherHost(const void* mine, void* all, size_t bytes) override {
    allgatherv(mine, all, std::vector<int64_t>(size_t(world()), int64_t(bytes)));
  }

  void allgatherv(const void* in, void* out, const std::vector<int64_t>& bytesPerRank) override {
    guarded([&] {
      std::vector<size_t> offsets(size_t(world()) + 1, 0);
      int64_t largest = 0;
      for (int r = 0; r < world(); ++r) {
        offsets[size_t(r) + 1] = offsets[size_t(r)] + size_t(bytesPerRank[size_t(r)]);
        largest = std::max(largest, bytesPerRank[size_t(r)]);
      }
      const size_t mine = size_t(bytesPerRank[size_t(me_)]);
      if (mine > 0 && static_cast<char*>(out) + offsets[size_t(me_)] != in) {
        std::memmove(static_cast<char*>(out) + offsets[size_t(me_)], in, mine);
      }
      const size_t chunk = payloadBytes();
      const uint64_t chunks = std::max<uint64_t>(1, (uint64_t(largest) + chunk - 1) / chunk);
      for (uint64_t k = 0; k < chunks; ++k) {
        const size_t begin = size_t(k) * chunk;
        round(
            RoundKind::AllgatherV, k,
            [&](RoundHeader* h, char* payload) {
              h->totals()[0] = int64_t(mine);
              if (begin < mine) std::memcpy(payload, static_cast<const char*>(in) + begin, std::min(chunk, mine - begin));
            },
            [&](int q, const RoundHeader* h, const char* payload) {
              const size_t theirs = size_t(bytesPerRank[size_t(q)]);
              expectTotal("allgather", q, h->totals()[0], int64_t(theirs));
              if (begin < theirs) {
                std::memcpy(static_cast<char*>(out) + offsets[size_t(q)] + begin, payload, std::min(chunk, theirs - begin));
              }
            });
      }
    });
  }

  void allreduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    guarded([&] {
      const size_t size = dtypeSize(dtype);
      const int64_t perChunk = int64_t(payloadBytes() / size);
      const uint64_t chunks = std::max<uint64_t>(1, uint64_t((count + perChunk - 1) / perChunk));
      std::vector<const void*> inputs(static_cast<size_t>(world()));
      for (uint64_t k = 0; k < chunks; ++k) {
        const int64_t begin = int64_t(k) * perChunk;
        const int64_t n = std::max<int64_t>(0, std::min(perChunk, count - begin));
        char* mine = static_cast<char*>(data) + size_t(begin) * size;
        round(
            RoundKind::AllReduce, k,
            [&](RoundHeader* h, char* payload) {
              h->totals()[0] = count;
              if (n > 0) std::memcpy(payload, mine, size_t(n) * size);
              inputs[size_t(me_)] = payload;  // not `mine`: the reduction writes there
            },
            [&](int q, const RoundHeader* h, const char* payload) {
              expectTotal("allreduce", q, h->totals()[0], count);
              inputs[size_t(q)] = payload;
            },
            [&] {
              // Every rank's chunk is in the halves (this rank's own too): reduce them
              // in rank order before anyone may overwrite them.
              if (n > 0) reduceInRankOrder(inputs.data(), world(), mine, n, dtype, op, "shm");
            });
      }
    });
  }

  void alltoallv(const void* in, const std::vector<int64_t>& sendBytes, void* out,
                 const std::vector<int64_t>& recvBytes) override {
    guarded([&] {
      std::vector<size_t> sendAt(size_t(world()) + 1, 0), recvAt(size_t(world()) + 1, 0);
      for (int r = 0; r < world(); ++r) {
        sendAt[size_t(r) + 1] = sendAt[size_t(r)] + size_t(sendBytes[size_t(r)]);
        recvAt[size_t(r) + 1] = recvAt[size_t(r)] + size_t(recvBytes[size_t(r)]);
      }
      HB_CHECK_CODE(sendBytes[size_t(me_)] == recvBytes[size_t(me_)], Communication, "alltoallv: rank ", me_, " sends ",
                    sendBytes[size_t(me_)], " bytes to itself but expects ", recvBytes[size_t(me_)]);
      if (sendBytes[size_t(me_)] > 0) {
        std::memmove(static_cast<char*>(out) + recvAt[size_t(me_)], static_cast<const char*>(in) + sendAt[size_t(me_)],
                     size_t(sendBytes[size_t(me_)]));
      }
      // Each peer gets a slot of the half; the rounds go on while any rank has more.
      const size_t slot = world() > 1 ? payloadBytes() / size_t(world() - 1) / 64 * 64 : payloadBytes();
      HB_CHECK_CODE(slot > 0, Internal, "shm: no room for ", world() - 1, " peers in a half of ", half_, " bytes");
      for (uint64_t k = 0;; ++k) {
        const size_t begin = size_t(k) * slot;
        bool more = false;
        round(
            RoundKind::AllToAllV, k,
            [&](RoundHeader* h, char* payload) {
              h->more = 0;
              for (int p = 0; p < world(); ++p) {
                h->totals()[p] = sendBytes[size_t(p)];
                if (p == me_) continue;
                const size_t length = size_t(sendBytes[size_t(p)]);
                if (begin < length) {
                  std::memcpy(payload + slotIndex(me_, p) * slot, static_cast<const char*>(in) + sendAt[size_t(p)] + begin,
                              std::min(slot, length - begin));
                }
                if (begin + slot < length) h->more = 1;
              }
              more = more || h->more != 0;
            },
            [&](int q, const RoundHeader* h, const char* payload) {
              expectTotal("alltoallv", q, h->totals()[me_], recvBytes[size_t(q)]);
              const size_t length = size_t(recvBytes[size_t(q)]);
              if (begin < length) {
                std::memcpy(static_cast<char*>(out) + recvAt[size_t(q)] + begin, payload + slotIndex(q, me_) * slot,
                            std::min(slot, length - begin));
              }
              more = more || h->more != 0;
            });
        if (!more) break;
      }
    });
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    guarded([&] {
      const size_t chunk = payloadBytes();
      const uint64_t chunks = std::max<uint64_t>(1, (uint64_t(bytes) + chunk - 1) / chunk);
      for (uint64_t k = 0; k < chunks; ++k) {
        const size_t begin = size_t(k) * chunk;
        const size_t n = begin < size_t(bytes) ? std::min(chunk, size_t(bytes) - begin) : 0;
        round(
            RoundKind::Broadcast, k,
            [&](RoundHeader* h, char* payload) {
              h->totals()[0] = bytes;
              if (me_ == root && n > 0) std::memcpy(payload, static_cast<char*>(data) + begin, n);
            },
            [&](int q, const RoundHeader* h, const char* payload) {
              expectTotal("broadcast", q, h->totals()[0], bytes);
              if (q == root && n > 0) std::memcpy(static_cast<char*>(data) + begin, payload, n);
            });
      }
    });
  }

  void barrier() override {
    guarded([&] {
      round(
          RoundKind::Barrier, 0, [](RoundHeader* h, char*) { h->totals()[0] = 0; },
          [](int, const RoundHeader*, const char*) {});
    });
  }

 private:
  int world() const { return config_.worldSize; }
  size_t payloadBytes() const { return half_ - headerBytes_; }
  // Where rank `from`'s half keeps its bytes for rank `to` (no slot for itself).
  static size_t slotIndex(int from, int to) { return size_t(to < from ? to : to - 1); }

  RankControl& control(int rank) const {
    return reinterpret_cast<RankControl*>(base_ + kLine)[rank];
  }
  char* halfOf(int rank, uint32_t round) const {
    const size_t dataAt = alignUp(kLine * (1 + size_t(world())), kPage);
    return base_ + dataAt + (size_t(rank) * 2 + (round & 1u)) * half_;
  }

  // Runs `body` as one collective: bounded by the timeout, and on failure tells the
  // peers (they stop waiting for this rank) before rethrowing.
  template <typename Body>
  void guarded(Body body) {
    deadline_ = Clock::now() + config_.timeout;
    HB_CHECK_CODE(!failed_, Communication, "shm: an earlier collective failed on this rank");
    try {
      body();
    } catch (...) {
      abort();
      throw;
    }
  }

  template <typename Write, typename Read>
  void round(RoundKind kind, uint64_t chunk, Write write, Read read) {
    round(kind, chunk, write, read, [] {});
  }

  // One round (see the file's comment). `afterReads` runs once every peer's half has
  // been read and before this rank says it is done: the peers' halves stay valid.
  template <typename Write, typename Read, typename AfterReads>
  void round(RoundKind kind, uint64_t chunk, Write write, Read read, AfterReads afterReads) {
    const uint32_t r = ++round_;
    for (int q = 0; q < world(); ++q) {
      if (q != me_) awaitRound(q, control(q).done, r - 2);
    }
    RoundHeader* header = reinterpret_cast<RoundHeader*>(halfOf(me_, r));
    header->kind = uint32_t(kind);
    header->round = r;
    header->chunk = chunk;
    write(header, halfOf(me_, r) + headerBytes_);
    publish(control(me_).published, r);
    for (int q = 0; q < world(); ++q) {
      if (q == me_) continue;
      awaitRound(q, control(q).published, r);
      const RoundHeader* theirs = reinterpret_cast<const RoundHeader*>(halfOf(q, r));
      if (theirs->kind != uint32_t(kind) || theirs->chunk != chunk || theirs->round != r) {
        failWith(ErrorCode::Communication, "shm: rank ", q, " is in another collective or chunk (", theirs->kind, "/",
                 theirs->chunk, ", this rank ", uint32_t(kind), "/", chunk, "): the ranks are out of step");
      }
      read(q, theirs, halfOf(q, r) + headerBytes_);
    }
    afterReads();
    publish(control(me_).done, r);
  }

  void publish(std::atomic<uint32_t>& word, uint32_t round) {
    word.store(round, std::memory_order_seq_cst);
    if (control(me_).sleepers.load(std::memory_order_seq_cst) != 0) futexCall(&word, FUTEX_WAKE, INT_MAX, nullptr);
  }

  void expectTotal(const char* what, int q, int64_t theirs, int64_t expected) const {
    if (theirs != expected) {
      failWith(ErrorCode::Communication, "shm: ", what, ": rank ", q, " has ", theirs, " for rank ", me_, ", which expects ",
               expected, ": the ranks disagree on the sizes");
    }
  }

  // Waits until rank q's `word` reaches `round`: spins, yields, then sleeps in slices,
  // checking between them that the peers are alive and the deadline has not passed.
  void awaitRound(int q, std::atomic<uint32_t>& word, uint32_t round) {
    for (int i = 0; i < 256; ++i) {
      if (reached(word.load(std::memory_order_acquire), round)) return;
      cpuRelax();
    }
    for (int i = 0; i < 16; ++i) {
      if (reached(word.load(std::memory_order_acquire), round)) return;
      std::this_thread::yield();
    }
    RankControl& theirs = control(q);
    auto nextCheck = Clock::now();
    uint32_t checks = 0;
    for (;;) {
      theirs.sleepers.fetch_add(1, std::memory_order_seq_cst);
      const uint32_t seen = word.load(std::memory_order_seq_cst);
      if (!reached(seen, round)) {
        const timespec slice{0, 20 * 1000 * 1000};
        futexCall(&word, FUTEX_WAIT, seen, &slice);
      }
      theirs.sleepers.fetch_sub(1, std::memory_order_seq_cst);
      if (reached(word.load(std::memory_order_acquire), round)) return;
      const auto now = Clock::now();
      if (now >= nextCheck) {
        // The awaited peer every 50 ms, all of them every 500 ms (each check reads /proc).
        checkPeers(checks++ % 10 == 0 ? -1 : q);
        nextCheck = now + std::chrono::milliseconds(50);
      }
      if (now >= deadline_) {
        failWith(ErrorCode::Timeout, "shm: rank ", q, " did not reach round ", round, " within ", config_.timeout.count(),
                 " ms");
      }
    }
  }

  // Rank `only`, or every peer when -1. A dead process is named before a rank that gave
  // up (which may have given up because of it).
  void checkPeers(int only) const {
    for (int q = 0; q < world(); ++q) {
      if (q == me_ || (only >= 0 && q != only)) continue;
      if (processGone(handles_[size_t(q)], control(q).pid.load(std::memory_order_relaxed))) {
        failWith(ErrorCode::Communication, "shm: rank ", q, "'s process has exited");
      }
    }
    for (int q = 0; q < world(); ++q) {
      if (q == me_ || (only >= 0 && q != only)) continue;
      if (control(q).failed.load(std::memory_order_acquire) != 0) {
        failWith(ErrorCode::Communication, "shm: rank ", q, " stopped (its collective failed, or it left the group)");
      }
    }
  }

  CommunicatorConfig config_;
  char* base_;
  size_t bytes_;
  size_t half_ = 0;
  size_t headerBytes_ = 0;
  int me_ = 0;
  uint32_t round_ = 0;  // the rounds this rank has run: the same on every rank
  bool failed_ = false;
  Clock::time_point deadline_;
  std::vector<int> handles_;  // each peer's pidfd, or -1
};

size_t halfBytesFor(int worldSize) {
  const size_t half = kSegmentBudget / (2 * size_t(worldSize));
  return std::min(kMaxHalf, std::max(kMinHalf, half / kPage * kPage));
}

size_t segmentBytes(int worldSize, size_t half) {
  return alignUp(kLine * (1 + size_t(worldSize)), kPage) + 2 * size_t(worldSize) * half;
}

// Maps `name`, made by rank 0 for this world; null (with `why`) when it cannot.
char* attachSegment(const std::string& name, int worldSize, size_t& bytes, std::string& why) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    why = std::string("shm_open: ") + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(SegmentHeader)) {
    close(fd);
    why = "the segment has the wrong size";
    return nullptr;
  }
  bytes = size_t(st.st_size);
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    why = std::string("mmap: ") + std::strerror(errno);
    return nullptr;
  }
  const SegmentHeader* header = static_cast<const SegmentHeader*>(base);
  if (header->magic != kSegmentMagic || header->worldSize != uint32_t(worldSize) || header->totalBytes != bytes ||
      segmentBytes(worldSize, size_t(header->halfBytes)) != bytes) {
    munmap(base, bytes);
    why = "the segment is not this job's";
    return nullptr;
  }
  return static_cast<char*>(base);
}

// Rank 0: a new segment, zeroed, its space reserved (so a full /dev/shm is an error
// here, not a SIGBUS when a page is first written).
char* createSegment(const std::string& name, int worldSize, size_t& bytes, std::string& why) {
  const size_t half = halfBytesFor(worldSize);
  bytes = segmentBytes(worldSize, half);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    why = std::string("shm_open: ") + std::strerror(errno);
    return nullptr;
  }
  const int reserved = posix_fallocate(fd, 0, off_t(bytes));
  if (reserved != 0) {
    close(fd);
    shm_unlink(name.c_str());
    why = "reserving " + std::to_string(bytes >> 20) + " MiB in /dev/shm: " + std::strerror(reserved);
    return nullptr;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    why = std::string("mmap: ") + std::strerror(errno);
    return nullptr;
  }
  SegmentHeader* header = static_cast<SegmentHeader*>(base);
  header->worldSize = uint32_t(worldSize);
  header->halfBytes = half;
  header->totalBytes = bytes;
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kSegmentMagic;
  return static_cast<char*>(base);
}

std::string segmentName() {
  std::random_device random;
  std::ostringstream name;
  name << "/hb-ts-" << getpid() << "-" << std::hex << random() << random();
  return name.str();
}

}  // namespace

namespace {

// What the ranks settle through the store: a segment every rank has mapped, or none.
struct Negotiation {
  std::string name;  // rank 0: the segment's name until it is unlinked
  char* base = nullptr;
  size_t bytes = 0;
  std::string why;  // why not, when the ranks do not all use it

  void drop() {
    if (base != nullptr) munmap(base, bytes);
    base = nullptr;
  }
  void unlinkName() {
    if (!name.empty()) shm_unlink(name.c_str());
    name.clear();
  }
};

// Rank 0 compares every rank's identity and makes the segment, or says why not.
bool takesPart(const std::string& identity) { return !identity.empty() && identity[0] != '!'; }

std::string notTakingPart(int rank, const std::string& identity) {
  return "rank " + std::to_string(rank) + " does not take part (" + identity.substr(1) + ")";
}

void offerSegment(const CommunicatorConfig& config, TcpStoreClient& store, const std::string& identity, Negotiation& n) {
  if (config.worldSize < 2) n.why = "a world of one process";
  if (n.why.empty() && !takesPart(identity)) n.why = notTakingPart(0, identity);
  if (n.why.empty() && config.worldSize > kMaxRanks) n.why = "more than " + std::to_string(kMaxRanks) + " ranks";
  for (int q = 1; q < config.worldSize && n.why.empty(); ++q) {
    const std::vector<char> answer = store.get("shm/host/" + std::to_string(q));
    const std::string theirs(answer.begin(), answer.end());
    if (!takesPart(theirs)) {
      n.why = notTakingPart(q, theirs);
    } else if (theirs != identity) {
      n.why = "rank " + std::to_string(q) + " is on another machine (or in another container)";
    }
  }
  if (n.why.empty()) {
    n.name = segmentName();
    n.base = createSegment(n.name, config.worldSize, n.bytes, n.why);
    if (n.base == nullptr) {
      n.name.clear();
      n.why = "rank 0: " + n.why;
    }
  }
  // The segment's name (it starts with '/'), or why there is none.
  const std::string answer = n.base != nullptr ? n.name : n.why;
  store.set("shm/segment", std::vector<char>(answer.begin(), answer.end()));
}

void takeSegment(const CommunicatorConfig& config, TcpStoreClient& store, const std::string& identity, Negotiation& n) {
  const std::vector<char> answer = store.get("shm/segment");
  const std::string text(answer.begin(), answer.end());
  if (text.empty() || text[0] != '/') {
    n.why = text;
  } else {
    // Every rank keeps the name until the set-up ends, so whichever fails unlinks it
    // (rank 0 may be the one that died).
    n.name = text;
    n.base = attachSegment(text, config.worldSize, n.bytes, n.why);
    if (n.base == nullptr) n.why = "rank " + std::to_string(config.rank) + ": " + n.why;
  }
}

// Every rank says whether it mapped the segment ("1") or why not; true when all did.
bool everyRankAttached(const CommunicatorConfig& config, TcpStoreClient& store, Negotiation& n) {
  const std::string mine = n.base != nullptr ? "1" : (n.why.empty() ? "0" : n.why);
  store.set("shm/attached/" + std::to_string(config.rank), std::vector<char>(mine.begin(), mine.end()));
  bool all = true;
  for (int q = 0; q < config.worldSize; ++q) {
    const std::vector<char> theirs = store.get("shm/attached/" + std::to_string(q));
    const std::string text(theirs.begin(), theirs.end());
    if (text == "1") continue;
    all = false;
    if (n.why.empty()) n.why = text;
  }
  return all;
}

}  // namespace

std::unique_ptr<Communicator> makeSharedMemoryCommunicator(const CommunicatorConfig& config, TcpStoreClient& store,
                                                           std::string& why) {
  const std::string identity = hostIdentity();
  Negotiation n;
  bool all = false;
  try {
    store.set("shm/host/" + std::to_string(config.rank), std::vector<char>(identity.begin(), identity.end()));
    if (config.rank == 0) {
      offerSegment(config, store, identity, n);
    } else {
      takeSegment(config, store, identity, n);
    }
    if (n.base != nullptr) {
      RankControl& mine = reinterpret_cast<RankControl*>(n.base + kLine)[config.rank];
      mine.pid.store(int32_t(getpid()), std::memory_order_relaxed);
    }
    all = everyRankAttached(config, store, n);
  } catch (...) {
    // A peer that never answered: nothing of the segment may outlive this.
    n.unlinkName();
    n.drop();
    throw;
  }
  // Every rank has opened it or given up: the name can go (rank 0 removes it), and the
  // memory goes with the last mapping, however the processes end.
  if (config.rank == 0) n.unlinkName();
  if (!all) {
    n.drop();
    why = n.why;
    return nullptr;
  }
  return std::make_unique<SharedMemoryCommunicator>(config, n.base, n.bytes);
}

#else

std::unique_ptr<Communicator> makeSharedMemoryCommunicator(const CommunicatorConfig&, TcpStoreClient&, std::string& why) {
  why = "shared memory collectives are built on Linux only";
  return nullptr;
}

#endif

}  // namespace distribute
}  // namespace hb
