// Lock-free read-side critical sections and the writer's wait for them (an RCU-style
// grace period). Dispatch and allocation run inside a ReadSection; unregistering a
// kernel or unloading a plugin calls synchronize_readers() before freeing anything a
// reader could still be using.
#pragma once

#include <atomic>
#include <cstdint>

namespace loom {

// Note [Lock-free dispatch and safe unload]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Readers (threads calling ops) never lock. Each thread owns a ReaderRecord whose
// `depth` counts the ReadSections it is inside; entering and leaving are plain stores
// to the thread's own cache line. A writer first unpublishes what it wants to free
// (swaps table pointers), then calls synchronize_readers(): a process-wide memory
// barrier (membarrier(2), or a fence on the reader side where the kernel lacks it)
// makes every reader's depth visible, and the writer waits until each thread that was
// inside a section has left it once. After that no reader can hold an old pointer, so
// the writer may free kernel slots or dlclose a plugin. A thread inside a section that
// itself writes (a kernel that unregisters something) must not wait: the dispatcher
// defers freeing what it unlinked to the next writer outside any section, and the
// plugin host refuses to load or unload from inside an op call.
struct alignas(64) ReaderRecord {
  std::atomic<uint32_t> depth{0};
  std::atomic<uint64_t> exits{0};  // times depth returned to zero
  std::atomic<bool> in_use{false};
  ReaderRecord* next = nullptr;  // immutable once linked
};

namespace detail {
extern thread_local ReaderRecord* tls_reader_record __attribute__((tls_model("initial-exec")));
extern bool g_reader_needs_fence;  // set once at startup, read-only afterwards
ReaderRecord* register_reader_thread();
}  // namespace detail

class ReadSection {
 public:
  ReadSection() {
    ReaderRecord* r = detail::tls_reader_record;
    if (r == nullptr) [[unlikely]]
      r = detail::register_reader_thread();
    record_ = r;
    uint32_t d = r->depth.load(std::memory_order_relaxed);
    r->depth.store(d + 1, std::memory_order_relaxed);
    if (detail::g_reader_needs_fence) [[unlikely]] {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  }
  ~ReadSection() {
    uint32_t d = record_->depth.load(std::memory_order_relaxed) - 1;
    record_->depth.store(d, std::memory_order_release);
    if (d == 0) {
      record_->exits.store(record_->exits.load(std::memory_order_relaxed) + 1,
                           std::memory_order_release);
    }
  }
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

 private:
  ReaderRecord* record_;
};

// True when the calling thread is inside a ReadSection (e.g. running a kernel).
inline bool in_read_section() {
  ReaderRecord* r = detail::tls_reader_record;
  return r != nullptr && r->depth.load(std::memory_order_relaxed) > 0;
}

// Waits until every thread that was inside a ReadSection when this was called has left
// it. Throws loom::Error when the calling thread is itself inside one (two such waiters
// would wait for each other): code running inside an op call defers what it frees
// instead (see Dispatcher::deregister). Must not be called while holding a lock that a
// reader may need to make progress.
void synchronize_readers();

}  // namespace loom
