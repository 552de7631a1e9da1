// The TCP store: rank 0 hosts a key-value server on MASTER_ADDR:MASTER_PORT, and every
// rank (rank 0 too) is its client.
//
// Note [Stores]
// ~~~~~~~~~~~~~
// Ranks meet through a store before any engine connects: each publishes its rank and
// world size and the engines exchange their addresses through it (gloo's full mesh
// reads every peer's address from it). PyTorch's TCPStore and FileStore are the model:
// set, get (which blocks until the key exists), add (an atomic counter), check, wait.
// The TCP server is one thread in rank 0's process that polls its sockets: requests are
// framed as a command byte then length-prefixed strings, and a get or wait for a key
// that does not exist yet is parked until a set makes it true; the client enforces the
// timeout (a client that timed out reconnects before its next request, so a late reply
// never answers the wrong request). The server binds every interface; a port in use is
// an error on rank 0 naming the port, and other ranks retry their connection until the
// timeout, since rank 0 may start last. The file store keeps one file per key in a
// shared directory (written to a temporary name, then renamed, so a reader never sees
// half a value) and serialises add with flock(2).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "store.h"

namespace loom::distributed {
namespace {

using Clock = std::chrono::steady_clock;

enum Command : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5 };

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("[distributed] " + what);
}

std::string errno_text() {
  return std::strerror(errno);
}

void append_u32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<char*>(&v), 4);
}
void append_str(std::string& out, const std::string& s) {
  append_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Reads framed values from a byte buffer; nullopt-like `ok` false when incomplete.
struct Reader {
  const std::string& buf;
  size_t pos = 0;
  bool ok = true;
  uint32_t u32() {
    if (buf.size() < pos + 4) {
      ok = false;
      return 0;
    }
    uint32_t v;
    std::memcpy(&v, buf.data() + pos, 4);
    pos += 4;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    if (!ok || buf.size() < pos + n) {
      ok = false;
      return {};
    }
    std::string s = buf.substr(pos, n);
    pos += n;
    return s;
  }
};

// --- the server ---

class StoreServer {
 public:
  StoreServer(int port) {
    listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = listen_fd_ >= 0;
    if (!v6) listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail("the store cannot open a socket: " + errno_text());
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
      int zero = 0;
      ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      a.sin6_port = htons(static_cast<uint16_t>(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(static_cast<uint16_t>(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(listen_fd_, 1024) != 0) {
      std::string why = errno_text();
      ::close(listen_fd_);
      fail("rank 0 cannot host the store on port " + std::to_string(port) + ": " + why +
           " (is another job using it? choose another with --master-port or LOOM_MASTER_PORT)");
    }
    if (::pipe2(wake_, O_CLOEXEC) != 0) fail("the store cannot make a pipe: " + errno_text());
    thread_ = std::thread([this] { serve(); });
  }
  ~StoreServer() {
    char b = 0;
    (void)!::write(wake_[1], &b, 1);
    thread_.join();
    for (auto& [fd, c] : clients_) ::close(fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

 private:
  struct Client {
    std::string in;
    // A parked get (one key) or wait (its keys), answered once every key exists.
    bool parked = false;
    uint8_t parked_command = 0;
    std::vector<std::string> parked_keys;
  };

  void serve() {
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (auto& [fd, c] : clients_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents != 0) return;
      if (fds[1].revents & POLLIN) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients_[fd];
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        char buf[65536];
        ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          ::close(fds[i].fd);
          clients_.erase(fds[i].fd);
          continue;
        }
        Client& c = clients_[fds[i].fd];
        c.in.append(buf, static_cast<size_t>(n));
        handle(fds[i].fd, c);
      }
    }
  }

  // Answers every complete request of a client (none while it has a parked one).
  void handle(int fd, Client& c) {
    while (!c.parked && !c.in.empty()) {
      Reader r{c.in};
      uint8_t command = static_cast<uint8_t>(c.in[0]);
      r.pos = 1;
      std::vector<std::string> keys;
      std::string value;
      if (command == kSet || command == kAdd) {
        keys.push_back(r.str());
        value = r.str();
      } else if (command == kGet || command == kCheck) {
        keys.push_back(r.str());
      } else if (command == kWait) {
        uint32_t n = r.u32();
        for (uint32_t k = 0; r.ok && k < n; ++k) keys.push_back(r.str());
      } else {
        ::shutdown(fd, SHUT_RDWR);  // not a store client: drop it
        c.in.clear();
        return;
      }
      if (!r.ok) return;  // incomplete: wait for more bytes
      c.in.erase(0, r.pos);
      if (command == kSet) {
        data_[keys[0]] = value;
        reply(fd, "");
        wake_parked();
      } else if (command == kAdd) {
        int64_t delta = 0;
        std::memcpy(&delta, value.data(), std::min<size_t>(8, value.size()));
        int64_t now = 0;
        auto it = data_.find(keys[0]);
        if (it != data_.end()) now = std::strtoll(it->second.c_str(), nullptr, 10);
        now += delta;
        data_[keys[0]] = std::to_string(now);
        reply(fd, std::string(reinterpret_cast<char*>(&now), 8));
        wake_parked();
      } else if (command == kCheck) {
        reply(fd, std::string(1, data_.count(keys[0]) ? '\1' : '\0'));
      } else {
        c.parked = true;
        c.parked_command = command;
        c.parked_keys = std::move(keys);
        answer_if_ready(fd, c);
      }
    }
  }

  void answer_if_ready(int fd, Client& c) {
    for (const std::string& k : c.parked_keys) {
      if (!data_.count(k)) return;
    }
    c.parked = false;
    reply(fd, c.parked_command == kGet ? data_[c.parked_keys[0]] : std::string());
    c.parked_keys.clear();
  }

  void wake_parked() {
    for (auto& [fd, c] : clients_) {
      if (!c.parked) continue;
      answer_if_ready(fd, c);
      if (!c.parked) handle(fd, c);
    }
  }

  void reply(int fd, const std::string& payload) {
    std::string out;
    append_str(out, payload);
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::send(fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        return;  // the client went away; its socket closes on the next poll
      }
      done += static_cast<size_t>(n);
    }
  }

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::map<int, Client> clients_;
  std::map<std::string, std::string> data_;
  std::thread thread_;
};

// --- the client ---

class TcpStore final : public Store {
 public:
  TcpStore(std::string host, int port, bool serve, std::chrono::milliseconds timeout)
      : host_(std::move(host)), port_(port), timeout_(timeout) {
    if (serve) server_ = std::make_unique<StoreServer>(port);
    connect_until(Clock::now() + timeout_);
  }
  ~TcpStore() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void set(const std::string& key, const std::vector<char>& value) override {
    std::string req(1, char(kSet));
    append_str(req, key);
    append_str(req, std::string(value.begin(), value.end()));
    request(req, timeout_, key);
  }
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::string req(1, char(kGet));
    append_str(req, key);
    std::string v = request(req, timeout, key);
    return {v.begin(), v.end()};
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::string req(1, char(kAdd));
    append_str(req, key);
    append_str(req, std::string(reinterpret_cast<char*>(&delta), 8));
    std::string v = request(req, timeout_, key);
    int64_t out = 0;
    std::memcpy(&out, v.data(), std::min<size_t>(8, v.size()));
    return out;
  }
  bool check(const std::string& key) override {
    std::string req(1, char(kCheck));
    append_str(req, key);
    std::string v = request(req, timeout_, key);
    return !v.empty() && v[0] != 0;
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::string req(1, char(kWait));
    append_u32(req, static_cast<uint32_t>(keys.size()));
    std::string names;
    for (const std::string& k : keys) {
      append_str(req, k);
      names += (names.empty() ? "" : ", ") + k;
    }
    request(req, timeout, names);
  }

  std::string local_address() const override {
    sockaddr_storage a{};
    socklen_t n = sizeof a;
    if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) != 0) return "";
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, text, sizeof text);
    } else {
      const in6_addr& v6 = reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr;
      if (IN6_IS_ADDR_V4MAPPED(&v6)) {
        ::inet_ntop(AF_INET, &v6.s6_addr[12], text, sizeof text);
      } else {
        ::inet_ntop(AF_INET6, &v6, text, sizeof text);
      }
    }
    return text;
  }

 private:
  std::string address() const { return host_ + ":" + std::to_string(port_); }

  void connect_until(Clock::time_point deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string last = "no answer";
    std::chrono::milliseconds pause(10);
    for (;;) {
      addrinfo* found = nullptr;
      int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
      if (rc != 0) {
        fail("the store's host '" + host_ + "' cannot be resolved: " + gai_strerror(rc));
      }
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::freeaddrinfo(found);
          fd_ = fd;
          return;
        }
        last = errno_text();
        ::close(fd);
      }
      ::freeaddrinfo(found);
      if (Clock::now() + pause > deadline) {
        fail("no store answered at " + address() + " within " + std::to_string(timeout_.count()) +
             " ms (last error: " + last +
             "); is rank 0 running with the same LOOM_MASTER_ADDR and LOOM_MASTER_PORT?");
      }
      // Rank 0 may not listen yet: retry with a growing pause (connection backoff).
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(500));
    }
  }

  std::string request(const std::string& req, std::chrono::milliseconds timeout,
                      const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point deadline = Clock::now() + timeout;
    if (fd_ < 0) connect_until(Clock::now() + timeout_);
    size_t done = 0;
    while (done < req.size()) {
      ssize_t n = ::send(fd_, req.data() + done, req.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) broken("sending to the store at " + address() + " failed: " + errno_text());
      done += static_cast<size_t>(n);
    }
    std::string in;
    uint32_t need = 4;
    bool have_length = false;
    while (in.size() < need) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd_, POLLIN, 0};
      int rc = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
      if (rc < 0 && errno == EINTR) continue;
      if (rc == 0) {
        broken("timed out after " + std::to_string(timeout.count()) +
               " ms waiting for the store key(s) " + what + " at " + address());
      }
      char buf[65536];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) broken("the store at " + address() + " closed the connection (did rank 0 exit?)");
      in.append(buf, static_cast<size_t>(n));
      if (!have_length && in.size() >= 4) {
        uint32_t len;
        std::memcpy(&len, in.data(), 4);
        need = 4 + len;
        have_length = true;
      }
    }
    return in.substr(4, need - 4);
  }

  // The connection is in an unknown state (a reply may still come): drop it.
  [[noreturn]] void broken(const std::string& why) {
    ::close(fd_);
    fd_ = -1;
    fail(why);
  }

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<StoreServer> server_;
  std::mutex mutex_;
  int fd_ = -1;
};

class PrefixStore final : public Store {
 public:
  PrefixStore(Store& store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::vector<char>& value) override {
    store_.set(prefix_ + key, value);
  }
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return store_.get(prefix_ + key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return store_.add(prefix_ + key, delta);
  }
  bool check(const std::string& key) override { return store_.check(prefix_ + key); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::vector<std::string> full;
    for (const std::string& k : keys) full.push_back(prefix_ + k);
    store_.wait(full, timeout);
  }

 private:
  Store& store_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<Store> make_tcp_store(const std::string& host, int port, bool serve,
                                      std::chrono::milliseconds timeout) {
  return std::make_unique<TcpStore>(host, port, serve, timeout);
}

std::unique_ptr<Store> make_prefix_store(Store& store, std::string prefix) {
  return std::make_unique<PrefixStore>(store, std::move(prefix));
}

}  // namespace loom::distributed
