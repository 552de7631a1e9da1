// The file store (Note [Stores] in tcp_store.cc): one file per key in a directory every
// rank can read, values written under a temporary name and renamed into place, add
// serialised by flock(2) on a lock file.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "store.h"

namespace loom::distributed {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("[distributed] " + what);
}

// A key as a file name: letters and digits kept, everything else as %XX.
std::string file_name(const std::string& key) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

class FileStore final : public Store {
 public:
  explicit FileStore(std::string directory) : dir_(std::move(directory)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (!fs::is_directory(dir_)) {
      fail("the file store needs a directory at '" + dir_ + "'" +
           (ec ? ": " + ec.message() : std::string(", found a file")));
    }
  }

  void set(const std::string& key, const std::vector<char>& value) override {
    const fs::path target = path(key);
    const fs::path temp = target.string() + ".tmp" + std::to_string(::getpid()) + "_" +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      out.write(value.data(), static_cast<std::streamsize>(value.size()));
      if (!out) fail("the file store cannot write '" + temp.string() + "'");
    }
    std::error_code ec;
    fs::rename(temp, target, ec);
    if (ec) fail("the file store cannot rename '" + temp.string() + "': " + ec.message());
  }

  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    wait({key}, timeout);
    return read(path(key));
  }

  int64_t add(const std::string& key, int64_t delta) override {
    const std::string lock_path = (fs::path(dir_) / ".lock").string();
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) fail("the file store cannot open '" + lock_path + "': " + std::strerror(errno));
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    int64_t now = 0;
    try {
      if (fs::exists(path(key))) {
        std::vector<char> old = read(path(key));
        now = std::strtoll(std::string(old.begin(), old.end()).c_str(), nullptr, 10);
      }
      now += delta;
      std::string text = std::to_string(now);
      set(key, {text.begin(), text.end()});
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);  // releases the lock
    return now;
  }

  bool check(const std::string& key) override { return fs::exists(path(key)); }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    const Clock::time_point deadline = Clock::now() + timeout;
    std::chrono::microseconds pause(100);
    for (const std::string& key : keys) {
      // Files appear by rename; there is no notification to wait on, so poll with backoff.
      while (!fs::exists(path(key))) {
        if (Clock::now() >= deadline) {
          fail("timed out after " + std::to_string(timeout.count()) +
               " ms waiting for the store key '" + key + "' in '" + dir_ + "'");
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
      }
    }
  }

 private:
  fs::path path(const std::string& key) const { return fs::path(dir_) / file_name(key); }
  std::vector<char> read(const fs::path& p) const {
    std::ifstream in(p, std::ios::binary);
    if (!in) fail("the file store cannot read '" + p.string() + "'");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::string dir_;
};

int int_from(const std::string& text, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < 0 || v > 1 << 30) {
    fail("expected " + what + " to be a non-negative integer, found '" + text + "'");
  }
  return static_cast<int>(v);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

std::unique_ptr<Store> make_file_store(const std::string& directory) {
  return std::make_unique<FileStore>(directory);
}

Rendezvous resolve_rendezvous(const std::string& init_method, int rank, int world_size) {
  Rendezvous r;
  if (rank < 0) {
    std::string v = env("LOOM_RANK");
    if (v.empty()) fail("the rank is not set: pass .rank or set LOOM_RANK (loom launch does)");
    rank = int_from(v, "LOOM_RANK");
  }
  if (world_size < 0) {
    std::string v = env("LOOM_WORLD_SIZE");
    if (v.empty()) {
      fail("the world size is not set: pass .world_size or set LOOM_WORLD_SIZE (loom launch does)");
    }
    world_size = int_from(v, "LOOM_WORLD_SIZE");
  }
  if (world_size < 1)
    fail("the world size must be at least 1, found " + std::to_string(world_size));
  if (rank >= world_size) {
    fail("rank " + std::to_string(rank) + " is out of range for a world of " +
         std::to_string(world_size) + " (ranks are 0.." + std::to_string(world_size - 1) + ")");
  }
  r.rank = rank;
  r.world_size = world_size;
  const std::string method = init_method.empty() ? "env://" : init_method;
  if (method == "env://") {
    r.host = env("LOOM_MASTER_ADDR");
    std::string port = env("LOOM_MASTER_PORT");
    if (r.host.empty() || port.empty()) {
      fail(
          "init_method env:// needs LOOM_MASTER_ADDR and LOOM_MASTER_PORT (loom launch sets "
          "them), found " +
          std::string(r.host.empty() ? "no LOOM_MASTER_ADDR" : "no LOOM_MASTER_PORT"));
    }
    r.port = int_from(port, "LOOM_MASTER_PORT");
  } else if (method.rfind("tcp://", 0) == 0) {
    std::string rest = method.substr(6);
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      fail("expected init_method tcp://HOST:PORT, found '" + method + "'");
    }
    r.host = rest.substr(0, colon);
    if (r.host.front() == '[' && r.host.back() == ']') r.host = r.host.substr(1, r.host.size() - 2);
    r.port = int_from(rest.substr(colon + 1), "the port of '" + method + "'");
  } else if (method.rfind("file://", 0) == 0) {
    r.kind = Rendezvous::Kind::kFile;
    r.path = method.substr(7);
    if (r.path.empty()) fail("expected init_method file:///PATH, found '" + method + "'");
  } else {
    fail("unknown init_method '" + method + "' (expected env://, tcp://HOST:PORT or file:///PATH)");
  }
  if (r.kind == Rendezvous::Kind::kTcp && (r.port < 1 || r.port > 65535)) {
    fail("the store port must be 1..65535, found " + std::to_string(r.port));
  }
  return r;
}

}  // namespace loom::distributed
