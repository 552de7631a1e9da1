// `loom launch`: the ranks of one job as child processes of this one, their output
// prefixed with their rank, and one failure stopping them all (Note [The launcher]).
#include "launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::cli {
namespace {

// Note [The launcher]
// ~~~~~~~~~~~~~~~~~~~
// `loom launch --nproc N [--nnodes M --node-rank R --master-addr A --master-port P]
// [--iface NAME] -- PROGRAM ARGS...` starts N processes of PROGRAM, torchrun's job with
// loom's prefix on its variables: each gets LOOM_RANK (R * N + its local rank),
// LOOM_LOCAL_RANK, LOOM_WORLD_SIZE (M * N), LOOM_LOCAL_WORLD_SIZE, LOOM_NODE_RANK,
// LOOM_MASTER_ADDR, LOOM_MASTER_PORT and, with --iface, LOOM_SOCKET_IFNAME (the interface
// the engines bind, a known pitfall of multi-host runs). Each rank runs in a process group
// of its own, its stdout and stderr read through pipes and written out line by line as
// "[rank K] line", so that ranks' lines never interleave mid-line. When a rank exits with
// a code other than 0 or is killed by a signal, the launcher names it, sends SIGTERM to
// every other rank's group and, after a grace period, SIGKILL, and exits with 1: a job
// never hangs on a dead peer. The rank it names is the cause: one killed by a signal
// before the others that exited with an error (their connections to it broke), whatever
// order the kernel reports them in; a rank that exited with an error is named once no
// killed rank turned up within 250 ms of it. SIGINT or SIGTERM to the launcher goes to
// every rank.

volatile std::sig_atomic_t received_signal = 0;

extern "C" void on_signal(int signal) {
  received_signal = signal;
}

struct Rank {
  int64_t rank = 0;
  int64_t local_rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  int fds[2] = {-1, -1};  // read ends of its stdout and stderr
  std::string pending[2];
};

std::string how_it_ended(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    return "was killed by signal " + std::to_string(s) + " (" + strsignal(s) + ")";
  }
  return "ended";
}

bool failed(int status) {
  return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

// Writes the complete lines of `text` with the rank's prefix (and the rest too when
// `all`), keeping an unfinished line for later.
void write_lines(std::string& text, FILE* stream, int64_t rank, bool all) {
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::fprintf(stream, "[rank %lld] %.*s\n", static_cast<long long>(rank),
                 static_cast<int>(end - start), text.data() + start);
  }
  text.erase(0, start);
  if (all && !text.empty()) {
    std::fprintf(stream, "[rank %lld] %s\n", static_cast<long long>(rank), text.c_str());
    text.clear();
  }
  std::fflush(stream);
}

// Reads what `r`'s stream k holds now; closes it at its end.
void drain(Rank& r, int k) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(r.fds[k], buffer, sizeof buffer);
    if (n > 0) {
      r.pending[k].append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const bool ended = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    write_lines(r.pending[k], k == 0 ? stdout : stderr, r.rank, ended);
    if (ended) {
      close(r.fds[k]);
      r.fds[k] = -1;
    }
    return;
  }
}

std::optional<std::string> check(const LaunchOptions& o) {
  if (o.nproc < 1) return "--nproc: expected at least 1 process, found " + std::to_string(o.nproc);
  if (o.nnodes < 1) return "--nnodes: expected at least 1 node, found " + std::to_string(o.nnodes);
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    return "--node-rank: expected 0 to " + std::to_string(o.nnodes - 1) + " (--nnodes " +
           std::to_string(o.nnodes) + "), found " + std::to_string(o.node_rank);
  }
  if (o.master_port < 1 || o.master_port > 65535) {
    return "--master-port: expected a port from 1 to 65535, found " + std::to_string(o.master_port);
  }
  if (o.master_addr.empty()) return "--master-addr: expected an address, found none";
  if (o.program.empty() || o.program[0].empty()) {
    return "expected the program to run after `--` (loom launch --nproc N -- PROGRAM "
           "ARGS...)";
  }
  return std::nullopt;
}

// Forks rank `r` running the program with the job's variables.
void start(const LaunchOptions& o, Rank& r) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  // SIGINT and SIGTERM stay blocked until the child has the default handlers back: one
  // that came before would otherwise run the launcher's handler in the child, and be lost
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop_signals, &previous);
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    auto set = [](const char* name, const std::string& value) { setenv(name, value.c_str(), 1); };
    set("LOOM_RANK", std::to_string(r.rank));
    set("LOOM_LOCAL_RANK", std::to_string(r.local_rank));
    set("LOOM_WORLD_SIZE", std::to_string(o.nnodes * o.nproc));
    set("LOOM_LOCAL_WORLD_SIZE", std::to_string(o.nproc));
    set("LOOM_NODE_RANK", std::to_string(o.node_rank));
    set("LOOM_MASTER_ADDR", o.master_addr);
    set("LOOM_MASTER_PORT", std::to_string(o.master_port));
    if (!o.iface.empty()) set("LOOM_SOCKET_IFNAME", o.iface);
    std::vector<char*> argv;
    for (const std::string& a : o.program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "[loom launch] rank %lld: cannot run '%s': %s\n",
                 static_cast<long long>(r.rank), argv[0], std::strerror(errno));
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  setpgid(pid, pid);  // also here: the group exists before the launcher may signal it
  close(out[1]);
  close(err[1]);
  r.fds[0] = out[0];
  r.fds[1] = err[0];
  for (int fd : r.fds) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  r.pid = pid;
  r.running = true;
}

void signal_all(std::vector<Rank>& ranks, int signal) {
  for (Rank& r : ranks) {
    if (r.running) kill(-r.pid, signal);
  }
}

}  // namespace

int run_launch(const LaunchOptions& options) {
  if (std::optional<std::string> why = check(options)) {
    std::fprintf(stderr, "[loom launch] %s\n", why->c_str());
    return 2;
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  std::vector<Rank> ranks(static_cast<size_t>(options.nproc));
  std::fflush(stdout);
  std::fflush(stderr);
  try {
    for (int64_t i = 0; i < options.nproc; ++i) {
      Rank& r = ranks[static_cast<size_t>(i)];
      r.local_rank = i;
      r.rank = options.node_rank * options.nproc + i;
      start(options, r);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[loom launch] %s\n", e.what());
    signal_all(ranks, SIGKILL);
    for (Rank& r : ranks) {
      if (r.running) waitpid(r.pid, nullptr, 0);
    }
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  const Rank* first_failure = nullptr;
  const Rank* cause = nullptr;  // the failed rank to name, once settled
  std::optional<Clock::time_point> settle_until;
  constexpr auto kSettle = std::chrono::milliseconds(250);
  int forwarded = 0;
  std::optional<Clock::time_point> kill_at;
  auto any_running = [&] {
    for (const Rank& r : ranks) {
      if (r.running) return true;
    }
    return false;
  };
  while (any_running()) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owners;
    for (size_t i = 0; i < ranks.size(); ++i) {
      for (int k = 0; k < 2; ++k) {
        if (ranks[i].fds[k] < 0) continue;
        fds.push_back({ranks[i].fds[k], POLLIN, 0});
        owners.emplace_back(i, k);
      }
    }
    // wakes for output, or every 50 ms to reap ranks and keep the deadlines
    poll(fds.data(), fds.size(), 50);
    for (size_t j = 0; j < fds.size(); ++j) {
      if (fds[j].revents != 0) drain(ranks[owners[j].first], owners[j].second);
    }
    // Every rank that ended since the last look. Of those that failed first, one killed
    // by a signal is the cause and the others (whose connections to it broke) the
    // symptoms, whatever order waitpid returns them in.
    int status = 0;
    for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;) {
      for (Rank& r : ranks) {
        if (r.pid != pid || !r.running) continue;
        r.running = false;
        r.status = status;
        const bool signalled = WIFSIGNALED(status);
        if (failed(status) && (cause == nullptr || (signalled && !WIFSIGNALED(cause->status)))) {
          cause = &r;
          if (!signalled && !settle_until) settle_until = Clock::now() + kSettle;
        }
      }
    }
    // A rank that exited with an error is named only once no rank killed by a signal
    // turns up within kSettle: the killed one's sockets close before the kernel reports
    // its death, so its peers' error exits may be reaped a look earlier.
    const bool settled = cause != nullptr && (WIFSIGNALED(cause->status) || !any_running() ||
                                              Clock::now() >= *settle_until);
    if (settled && first_failure == nullptr && forwarded == 0) {
      first_failure = cause;
      signal_all(ranks, SIGTERM);
      kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options.grace_seconds));
    }
    if (received_signal != 0 && forwarded == 0) {
      forwarded = received_signal;
      signal_all(ranks, forwarded);
      kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options.grace_seconds));
    }
    if (kill_at && Clock::now() >= *kill_at) {
      signal_all(ranks, SIGKILL);
      kill_at.reset();
    }
  }
  for (Rank& r : ranks) {
    for (int k = 0; k < 2; ++k) {
      if (r.fds[k] >= 0) drain(r, k);
      if (r.fds[k] >= 0) {  // a process the rank started still holds it: what came is out
        write_lines(r.pending[k], k == 0 ? stdout : stderr, r.rank, true);
        close(r.fds[k]);
      }
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (forwarded != 0) {
    std::fprintf(stderr, "[loom launch] interrupted by signal %d (%s); stopped every rank\n",
                 forwarded, strsignal(forwarded));
    return 1;
  }
  if (first_failure != nullptr) {
    std::fprintf(stderr, "[loom launch] rank %lld (local rank %lld, pid %d) %s%s\n",
                 static_cast<long long>(first_failure->rank),
                 static_cast<long long>(first_failure->local_rank), first_failure->pid,
                 how_it_ended(first_failure->status).c_str(),
                 ranks.size() > 1 ? "; the other ranks were stopped" : "");
    return 1;
  }
  return 0;
}

}  // namespace loom::cli
