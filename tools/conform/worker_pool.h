// Running work items in child processes (Note [Conformance isolation]): a crash (a
// signal, an abort) or a hang in one item is reported for that item and the run goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loom::conform {

// Note [Conformance isolation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `loom conform` runs each op in its own child, forked from a parent that has loaded no
// plugin (a vendor's runtime may not survive fork, and a child must not inherit another
// op's state); the child loads the manifest, runs the op's checks and writes each
// result to a pipe as a frame (a kind byte, a little-endian uint32 length, the bytes) as
// soon as it is known, before the next sample starts. The parent keeps up to `jobs`
// children running, reads their frames with poll(), and when a child ends reports how:
// exited with 0; exited otherwise; killed by a signal (CRASH, naming the signal and the
// sample last announced by a progress frame); or past the time limit, when the parent
// kills it with SIGKILL (TIMEOUT). Results already written survive either way.
class FrameWriter {
 public:
  explicit FrameWriter(int fd) : fd_(fd) {}
  // Blocks until the frame is in the pipe.
  void write(char kind, const std::string& bytes) const;

 private:
  int fd_;
};

struct ChildEnd {
  bool timed_out = false;
  int signal = 0;       // the signal that killed it, 0 if none
  int exit_status = 0;  // when it exited
  double seconds = 0;
};

struct PoolOptions {
  int jobs = 1;
  double timeout_seconds = 60;
};

// For each item i in [0, count): forks, calls child(i, writer) in the child and _exits
// with its return value; the parent calls on_frame(i, kind, bytes) per frame and
// on_end(i, how) once the child is gone.
void run_in_children(size_t count, const PoolOptions& options,
                     const std::function<int(size_t, const FrameWriter&)>& child,
                     const std::function<void(size_t, char, const std::string&)>& on_frame,
                     const std::function<void(size_t, const ChildEnd&)>& on_end);

}  // namespace loom::conform
