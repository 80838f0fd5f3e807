// The key-value store that carries a job's bootstrap (Gloo pair addresses, the NCCL
// unique id, shutdown counts), served by rank 0 over TCP as PyTorch's TCPStore is.
// Debian's Gloo ships File/Hash/Redis stores but no TCP one, hence this.
//
// Every rank, rank 0 included, talks to the server through a TcpStoreClient. The
// server also remembers which rank each connection said it was, so that after a
// failed collective the survivors can ask which peers have gone (goneRanks).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hb {
namespace distribute {

class TcpStoreServer {
 public:
  // Listens on host:port (a numeric address or a name); throws hb::Error naming
  // MASTER_ADDR / MASTER_PORT when the port is in use or the address is not local.
  TcpStoreServer(const std::string& host, int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

class TcpStoreClient {
 public:
  // Connects, retrying until `timeout` (rank 0's server may start after this rank),
  // and says which rank this is. Throws hb::Error naming host:port when it cannot.
  TcpStoreClient(const std::string& host, int port, int rank, std::chrono::milliseconds timeout);
  ~TcpStoreClient();
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const std::vector<char>& value);
  // Waits until `key` is set, up to the client's timeout (or `timeout` when given).
  std::vector<char> get(const std::string& key);
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout);
  bool has(const std::string& key);
  // Adds `delta` to the integer at `key` (0 when unset) and returns the sum.
  int64_t add(const std::string& key, int64_t delta);
  // This rank has left the group the store serves: a later hello from it (the next
  // group's, while rank 0 still closes this one) is told to retry until a new store.
  void leave();
  // Ranks that said hello and whose connection has since closed, ascending.
  std::vector<int> goneRanks(std::chrono::milliseconds timeout);

  // The local address of the connection to the server: an address of this machine the
  // other ranks can reach (the one they reach the server by), for Gloo's pairs.
  const std::string& localAddress() const { return localAddress_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::string endpoint() const { return host_ + ":" + std::to_string(port_); }

 private:
  std::vector<char> request(uint8_t op, const std::string& key, const std::vector<char>& value,
                            std::chrono::milliseconds timeout, const char* what);
  // Connects (fd_), retrying until the deadline.
  void connectBy(std::chrono::steady_clock::time_point deadline);
  // The server's answer to this rank's hello (kWelcome, kRankTaken or kRankLeft),
  // waited for until the deadline.
  char sayHello(int rank, std::chrono::steady_clock::time_point deadline);

  std::mutex mutex_;  // one request at a time per connection
  int fd_ = -1;
  bool broken_ = false;  // a request timed out or failed half-way: the stream is out of step
  std::string host_;
  int port_ = 0;
  std::chrono::milliseconds timeout_;
  std::string localAddress_;
};

}  // namespace distribute
}  // namespace hb
