// Wire format, both ways in host byte order (every rank of a job runs this build):
//   request:  u8 op, u32 key length, key, u64 value length, value
//   response: u64 length, bytes
// A get is answered when its key is set; the client bounds the wait with poll(2).
#include "native/distribute/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "native/core/status.h"

namespace hb {
namespace distribute {

namespace {

enum StoreOp : uint8_t { kHello = 1, kSet = 2, kGet = 3, kHas = 4, kAdd = 5, kGone = 6, kLeave = 7 };
// kHello's answers.
constexpr char kWelcome = 1, kRankTaken = 0, kRankLeft = 2;

constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint64_t kMaxValueBytes = uint64_t(64) << 20;

using Clock = std::chrono::steady_clock;

// Reads or writes all of `bytes`, waiting at most until `deadline` (none when
// `deadline` is Clock::time_point::max()). False when the peer closed, on an error or
// past the deadline; `timedOut` tells the last apart.
bool transfer(int fd, char* data, size_t bytes, bool reading, Clock::time_point deadline, bool* timedOut = nullptr) {
  if (timedOut) *timedOut = false;
  size_t done = 0;
  while (done < bytes) {
    if (deadline != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        if (timedOut) *timedOut = true;
        return false;
      }
      pollfd p{fd, short(reading ? POLLIN : POLLOUT), 0};
      const int ready = ::poll(&p, 1, int(std::min<long long>(left, 1000)));
      if (ready < 0 && errno != EINTR) return false;
      if (ready <= 0) continue;
    }
    const int dontWait = deadline != Clock::time_point::max() ? MSG_DONTWAIT : 0;
    const ssize_t n = reading ? ::recv(fd, data + done, bytes - done, dontWait)
                              : ::send(fd, data + done, bytes - done, MSG_NOSIGNAL | dontWait);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    done += size_t(n);
  }
  return true;
}

bool sendAll(int fd, const void* data, size_t bytes) {
  return transfer(fd, static_cast<char*>(const_cast<void*>(data)), bytes, false, Clock::time_point::max());
}

bool recvAll(int fd, void* data, size_t bytes) {
  return transfer(fd, static_cast<char*>(data), bytes, true, Clock::time_point::max());
}

std::string addressString(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  } else if (address->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text, sizeof text);
  }
  return text;
}

struct AddressList {
  addrinfo* head = nullptr;
  ~AddressList() {
    if (head) ::freeaddrinfo(head);
  }
};

void resolve(const std::string& host, int port, bool passive, AddressList* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &out->head);
  if (rc != 0) {
    failWith(ErrorCode::Communication, "rendezvous: MASTER_ADDR '", host, "' cannot be resolved: ", ::gai_strerror(rc));
  }
}

// connect(2) bounded by `deadline`: a blocking connect to an unreachable address waits
// for the kernel's SYN retries, minutes past any timeout the user gave.
bool connectWithin(int fd, const sockaddr* address, socklen_t length, Clock::time_point deadline, std::string* why) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, address, length);
  if (rc != 0 && errno == EINPROGRESS) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, int(std::max<long long>(left, 0))) == 1) {
      int error = 0;
      socklen_t size = sizeof error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
      errno = error;
      rc = error == 0 ? 0 : -1;
    } else {
      errno = ETIMEDOUT;
    }
  }
  if (rc != 0) {
    *why = std::strerror(errno);
    return false;
  }
  ::fcntl(fd, F_SETFL, flags);
  return true;
}

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

// ---------------------------------------------------------------------------------
// Server

struct TcpStoreServer::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::vector<char>> values;
  std::map<int, bool> connectedRanks;  // rank -> still connected
  std::set<int> leftRanks;             // ranks that left this group (kLeave)
  std::set<int> connections;           // open client sockets
  bool stopping = false;
  int listenFd = -1;
  int port = 0;
  std::thread acceptor;              // touches only `threads`, under the mutex
  std::vector<std::thread> threads;  // one per connection

  void serve(int fd);
  bool answer(int fd, uint8_t op, const std::string& key, const std::vector<char>& value, int* helloRank);
};

TcpStoreServer::TcpStoreServer(const std::string& host, int port) : state_(std::make_shared<State>()) {
  AddressList addresses;
  resolve(host, port, true, &addresses);
  std::string why = "no address";
  for (addrinfo* a = addresses.head; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int one = 1;
    // Only lets a new job reuse a port whose old connections linger in TIME_WAIT; a
    // port another process listens on still fails to bind.
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      state_->listenFd = fd;
      break;
    }
    why = std::strerror(errno);
    if (errno == EADDRINUSE) why += " (another process listens there: choose another MASTER_PORT)";
    if (errno == EADDRNOTAVAIL) why += " (MASTER_ADDR must be an address of rank 0's machine)";
    ::close(fd);
  }
  if (state_->listenFd < 0) {
    failWith(ErrorCode::Communication, "rendezvous: rank 0 cannot serve the store on ", host, ":", port, ": ", why);
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(state_->listenFd, reinterpret_cast<sockaddr*>(&bound), &length);
  state_->port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  std::shared_ptr<State> state = state_;
  state_->acceptor = std::thread([state] {
    for (;;) {
      const int fd = ::accept4(state->listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors for now: a connection may close; try again shortly.
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          std::lock_guard<std::mutex> lock(state->mutex);
          if (state->stopping) return;
          continue;
        }
        return;  // shut down
      }
      setNoDelay(fd);
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->stopping) {
        ::close(fd);
        return;
      }
      state->connections.insert(fd);
      state->threads.emplace_back([state, fd] { state->serve(fd); });
    }
  });
}

int TcpStoreServer::port() const { return state_->port; }

TcpStoreServer::~TcpStoreServer() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
    ::shutdown(state_->listenFd, SHUT_RDWR);
    for (int fd : state_->connections) ::shutdown(fd, SHUT_RDWR);
  }
  state_->changed.notify_all();
  // The acceptor adds connection threads while it runs: join it first, then them.
  state_->acceptor.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    threads.swap(state_->threads);
  }
  for (std::thread& t : threads) t.join();
  ::close(state_->listenFd);
}

void TcpStoreServer::State::serve(int fd) {
  int rank = -1;
  for (;;) {
    uint8_t op = 0;
    uint32_t keyBytes = 0;
    uint64_t valueBytes = 0;
    if (!recvAll(fd, &op, 1) || !recvAll(fd, &keyBytes, 4) || keyBytes > kMaxKeyBytes) break;
    std::string key(keyBytes, '\0');
    if (!recvAll(fd, key.data(), keyBytes) || !recvAll(fd, &valueBytes, 8) || valueBytes > kMaxValueBytes) break;
    std::vector<char> value(valueBytes);
    if (!recvAll(fd, value.data(), valueBytes)) break;
    if (!answer(fd, op, key, value, &rank)) break;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (rank >= 0) connectedRanks[rank] = false;
  connections.erase(fd);
  ::close(fd);
}

bool TcpStoreServer::State::answer(int fd, uint8_t op, const std::string& key, const std::vector<char>& value,
                                   int* helloRank) {
  std::vector<char> reply;
  {
    std::unique_lock<std::mutex> lock(mutex);
    switch (op) {
      case kHello: {
        int32_t rank = -1;
        if (value.size() != 4) return false;
        std::memcpy(&rank, value.data(), 4);
        reply.push_back(kWelcome);
        if (rank >= 0) {  // -1: a probe, not a rank
          if (leftRanks.count(rank)) {
            // This rank left the group this store serves and is joining the next one
            // before rank 0 has closed it: it must wait for the next store.
            reply[0] = kRankLeft;
            break;
          }
          auto it = connectedRanks.find(rank);
          if (it != connectedRanks.end() && it->second) {
            reply[0] = kRankTaken;  // two processes say they are this rank
            break;
          }
          *helloRank = rank;
          connectedRanks[rank] = true;
        }
        break;
      }
      case kSet:
        values[key] = value;
        changed.notify_all();
        break;
      case kGet: {
        // Woken by sets; every 100 ms it also looks whether the client has hung up, so
        // that a rank killed while waiting is seen as gone.
        while (!stopping && values.find(key) == values.end()) {
          changed.wait_for(lock, std::chrono::milliseconds(100));
          pollfd p{fd, POLLRDHUP, 0};
          if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return false;
        }
        if (stopping) return false;
        reply = values[key];
        break;
      }
      case kHas:
        reply.push_back(values.count(key) ? 1 : 0);
        break;
      case kAdd: {
        int64_t delta = 0, sum = 0;
        if (value.size() != 8) return false;
        std::memcpy(&delta, value.data(), 8);
        auto it = values.find(key);
        if (it != values.end() && it->second.size() == 8) std::memcpy(&sum, it->second.data(), 8);
        sum += delta;
        std::vector<char> stored(8);
        std::memcpy(stored.data(), &sum, 8);
        values[key] = stored;
        reply = stored;
        changed.notify_all();
        break;
      }
      case kLeave:
        if (*helloRank >= 0) leftRanks.insert(*helloRank);
        reply.push_back(1);
        break;
      case kGone:
        for (const auto& [rank, connected] : connectedRanks) {
          if (connected) continue;
          int32_t r = rank;
          reply.insert(reply.end(), reinterpret_cast<char*>(&r), reinterpret_cast<char*>(&r) + 4);
        }
        break;
      default:
        return false;
    }
  }
  const uint64_t length = reply.size();
  return sendAll(fd, &length, 8) && sendAll(fd, reply.data(), reply.size());
}

// ---------------------------------------------------------------------------------
// Client

TcpStoreClient::TcpStoreClient(const std::string& host, int port, int rank, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    connectBy(deadline);
    char welcome;
    try {
      welcome = sayHello(rank, deadline);
    } catch (const Error& e) {
      // Rank 0 closed the store this connection reached (the previous group's, going
      // away as this rank comes back): connect again, to the next one.
      if (e.code() != ErrorCode::Communication || Clock::now() >= deadline) throw;
      broken_ = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (welcome == kWelcome) return;
    if (welcome != kRankLeft) {
      ::close(fd_);
      fd_ = -1;
      failWith(ErrorCode::Communication, "rendezvous: rank ", rank, " is already connected to the store at ", endpoint(),
               ": two processes were started with RANK=", rank);
    }
    // Rank 0 still serves the group this rank has just left: its store closes this
    // connection when it goes; then the next store is there (or soon will be).
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    const int ready = left > 0 ? ::poll(&p, 1, int(std::min<int64_t>(left, INT32_MAX))) : 0;
    ::close(fd_);
    fd_ = -1;
    if (ready <= 0 && Clock::now() >= deadline) {
      failWith(ErrorCode::Timeout, "rendezvous: rank 0's store at ", endpoint(), " still served the previous group after ",
               timeout.count(), " ms; did rank 0 call hb.distribute.shutdown()?");
    }
  }
}

void TcpStoreClient::connectBy(std::chrono::steady_clock::time_point deadline) {
  std::string why;
  // Retries: rank 0 may not have started its server yet.
  while (fd_ < 0) {
    AddressList addresses;
    resolve(host_, port_, false, &addresses);
    for (addrinfo* a = addresses.head; a != nullptr && fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (connectWithin(fd, a->ai_addr, a->ai_addrlen, deadline, &why)) {
        fd_ = fd;
        break;
      }
      ::close(fd);
    }
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline) {
      failWith(ErrorCode::Timeout, "rendezvous: could not reach rank 0's store at ", endpoint(), " within ", timeout_.count(),
               " ms (", why, "); check MASTER_ADDR and MASTER_PORT and that rank 0 is running");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  setNoDelay(fd_);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &length);
  localAddress_ = addressString(reinterpret_cast<sockaddr*>(&local));
}

char TcpStoreClient::sayHello(int rank, std::chrono::steady_clock::time_point deadline) {
  int32_t r = rank;
  std::vector<char> welcome;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  try {
    welcome = request(kHello, "", std::vector<char>(reinterpret_cast<char*>(&r), reinterpret_cast<char*>(&r) + 4),
                      std::max(left, std::chrono::milliseconds(1)), "hello");
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  return welcome.size() == 1 ? welcome[0] : kRankTaken;
}

void TcpStoreClient::leave() { request(kLeave, "", {}, timeout_, "leave"); }

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<char> TcpStoreClient::request(uint8_t op, const std::string& key, const std::vector<char>& value,
                                          std::chrono::milliseconds timeout, const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  HB_CHECK_CODE(!broken_, Communication, "rendezvous store ", endpoint(), ": an earlier request failed, the connection is unusable");
  HB_CHECK(key.size() <= kMaxKeyBytes && value.size() <= kMaxValueBytes, "rendezvous store: key or value too large");
  const auto deadline = Clock::now() + timeout;
  std::vector<char> message(1 + 4 + key.size() + 8 + value.size());
  char* p = message.data();
  *p++ = char(op);
  const uint32_t keyBytes = uint32_t(key.size());
  std::memcpy(p, &keyBytes, 4);
  p += 4;
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  const uint64_t valueBytes = value.size();
  std::memcpy(p, &valueBytes, 8);
  p += 8;
  if (!value.empty()) std::memcpy(p, value.data(), value.size());
  bool timedOut = false;
  uint64_t length = 0;
  std::vector<char> reply;
  bool ok = transfer(fd_, message.data(), message.size(), false, deadline, &timedOut) &&
            transfer(fd_, reinterpret_cast<char*>(&length), 8, true, deadline, &timedOut) && length <= kMaxValueBytes;
  if (ok) {
    reply.resize(length);
    ok = transfer(fd_, reply.data(), length, true, deadline, &timedOut);
  }
  if (!ok) {
    broken_ = true;
    if (timedOut) {
      failWith(ErrorCode::Timeout, "rendezvous: ", what, " '", key, "' got no answer from the store at ", endpoint(),
               " within ", timeout.count(), " ms");
    }
    failWith(ErrorCode::Communication, "rendezvous: the store at ", endpoint(), " closed the connection during ", what,
             " (rank 0 has gone)");
  }
  return reply;
}

void TcpStoreClient::set(const std::string& key, const std::vector<char>& value) {
  request(kSet, key, value, timeout_, "set");
}

std::vector<char> TcpStoreClient::get(const std::string& key) { return get(key, timeout_); }

std::vector<char> TcpStoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  return request(kGet, key, {}, timeout, "get");
}

bool TcpStoreClient::has(const std::string& key) {
  std::vector<char> reply = request(kHas, key, {}, timeout_, "has");
  return reply.size() == 1 && reply[0] == 1;
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  std::vector<char> value(8);
  std::memcpy(value.data(), &delta, 8);
  std::vector<char> reply = request(kAdd, key, value, timeout_, "add");
  int64_t sum = 0;
  if (reply.size() == 8) std::memcpy(&sum, reply.data(), 8);
  return sum;
}

std::vector<int> TcpStoreClient::goneRanks(std::chrono::milliseconds timeout) {
  std::vector<char> reply = request(kGone, "", {}, timeout, "gone");
  std::vector<int> ranks(reply.size() / 4);
  for (size_t i = 0; i < ranks.size(); ++i) {
    int32_t r;
    std::memcpy(&r, reply.data() + 4 * i, 4);
    ranks[i] = r;
  }
  return ranks;
}

}  // namespace distribute
}  // namespace hb
