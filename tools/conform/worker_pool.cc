// Child processes for conformance checks (worker_pool.h, Note [Conformance isolation]).
#include "worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>

#include "loom/core/error.h"

namespace loom::conform {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  size_t item = 0;
  pid_t pid = -1;
  int fd = -1;  // read end of its pipe; -1 once it reached end of file
  Clock::time_point started;
  std::string pending;  // bytes of frames not complete yet
  bool timed_out = false;
};

// Hands the complete frames in `c.pending` to on_frame.
void deliver(Child& c, const std::function<void(size_t, char, const std::string&)>& on_frame) {
  size_t at = 0;
  while (c.pending.size() - at >= 5) {
    uint32_t length = 0;
    for (int b = 0; b < 4; ++b) {
      length |= static_cast<uint32_t>(static_cast<uint8_t>(c.pending[at + 1 + b])) << (8 * b);
    }
    if (c.pending.size() - at - 5 < length) break;
    on_frame(c.item, c.pending[at], c.pending.substr(at + 5, length));
    at += 5 + length;
  }
  c.pending.erase(0, at);
}

}  // namespace

void FrameWriter::write(char kind, const std::string& bytes) const {
  std::string frame(5, '\0');
  frame[0] = kind;
  const uint32_t length = static_cast<uint32_t>(bytes.size());
  for (int b = 0; b < 4; ++b) frame[1 + b] = static_cast<char>((length >> (8 * b)) & 0xff);
  frame += bytes;
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(120);  // the parent is gone: nothing to report to
    done += static_cast<size_t>(n);
  }
}

void run_in_children(size_t count, const PoolOptions& options,
                     const std::function<int(size_t, const FrameWriter&)>& child,
                     const std::function<void(size_t, char, const std::string&)>& on_frame,
                     const std::function<void(size_t, const ChildEnd&)>& on_end) {
  const size_t jobs = static_cast<size_t>(std::max(1, options.jobs));
  const auto limit = std::chrono::duration<double>(options.timeout_seconds);
  std::deque<Child> running;
  size_t next = 0;
  while (next < count || !running.empty()) {
    while (next < count && running.size() < jobs) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) {
        throw Error("conform", str_cat("cannot create a pipe: ", std::strerror(errno)));
      }
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid < 0) throw Error("conform", str_cat("cannot fork: ", std::strerror(errno)));
      if (pid == 0) {
        ::close(fds[0]);
        for (const Child& other : running) ::close(other.fd);
        const int status = child(next, FrameWriter(fds[1]));
        std::fflush(nullptr);
        _exit(status);
      }
      ::close(fds[1]);
      ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
      running.push_back({next++, pid, fds[0], Clock::now(), "", false});
    }
    // Wait for output from any child, at most until the earliest deadline.
    std::vector<pollfd> polls;
    auto wait = std::chrono::duration<double>(1.0);
    for (const Child& c : running) {
      if (c.fd >= 0) polls.push_back({c.fd, POLLIN, 0});
      wait = std::min(wait, std::chrono::duration<double>(c.started + limit - Clock::now()));
    }
    const int ms = std::max(0, static_cast<int>(wait.count() * 1000) + 1);
    if (!polls.empty()) {
      ::poll(polls.data(), polls.size(), ms);
    } else {
      ::usleep(static_cast<useconds_t>(std::min(ms, 20)) * 1000);  // all at EOF: reap below
    }
    for (auto it = running.begin(); it != running.end();) {
      Child& c = *it;
      if (c.fd >= 0) {
        char buffer[65536];
        for (;;) {
          pollfd p{c.fd, POLLIN, 0};
          if (::poll(&p, 1, 0) <= 0) break;
          const ssize_t n = ::read(c.fd, buffer, sizeof buffer);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && errno == EAGAIN) break;
          if (n <= 0) {
            ::close(c.fd);
            c.fd = -1;
            break;
          }
          c.pending.append(buffer, static_cast<size_t>(n));
        }
        deliver(c, on_frame);
      }
      if (!c.timed_out && Clock::now() - c.started > limit) {
        ::kill(c.pid, SIGKILL);
        c.timed_out = true;
      }
      int status = 0;
      const pid_t done = ::waitpid(c.pid, &status, c.timed_out ? 0 : WNOHANG);
      if (done != c.pid) {
        ++it;
        continue;
      }
      if (c.fd >= 0) {  // drain what it wrote before it ended (non-blocking: a process it
                        // forked may still hold the pipe)
        char buffer[65536];
        ssize_t n;
        while ((n = ::read(c.fd, buffer, sizeof buffer)) > 0) {
          c.pending.append(buffer, static_cast<size_t>(n));
        }
        ::close(c.fd);
        deliver(c, on_frame);
      }
      ChildEnd end;
      end.timed_out = c.timed_out;
      end.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      end.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
      end.seconds = std::chrono::duration<double>(Clock::now() - c.started).count();
      const size_t item = c.item;
      it = running.erase(it);
      on_end(item, end);
    }
  }
}

}  // namespace loom::conform
