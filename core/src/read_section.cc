// Reader records, the process-wide barrier and the writer's wait (see
// Note [Lock-free dispatch and safe unload]).
#include "loom/core/read_section.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "loom/core/error.h"

namespace loom {
namespace detail {

thread_local ReaderRecord* tls_reader_record = nullptr;

namespace {

std::atomic<ReaderRecord*> g_records{nullptr};

bool register_membarrier() {
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}
const bool g_have_membarrier = register_membarrier();

// Returns the thread's record to the free pool when the thread exits.
struct ReaderRecordOwner {
  ReaderRecord* record = nullptr;
  ~ReaderRecordOwner() {
    if (record != nullptr) {
      tls_reader_record = nullptr;
      record->in_use.store(false, std::memory_order_release);
    }
  }
};
thread_local ReaderRecordOwner tls_owner;

}  // namespace

bool g_reader_needs_fence = !g_have_membarrier;

ReaderRecord* register_reader_thread() {
  ReaderRecord* record = nullptr;
  for (ReaderRecord* r = g_records.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    bool expected = false;
    if (r->in_use.compare_exchange_strong(expected, true)) {
      record = r;
      break;
    }
  }
  if (record == nullptr) {
    record = new ReaderRecord();  // never freed: writers may be scanning it
    record->in_use.store(true, std::memory_order_relaxed);
    ReaderRecord* head = g_records.load(std::memory_order_relaxed);
    do {
      record->next = head;
    } while (!g_records.compare_exchange_weak(head, record, std::memory_order_release));
  }
  tls_owner.record = record;
  tls_reader_record = record;
  return record;
}

}  // namespace detail

void synchronize_readers() {
  LOOM_CHECK(!in_read_section(), "read-section",
             "cannot wait for other op calls from inside an op call (expected a caller outside "
             "any kernel, e.g. not a kernel that unloads a plugin or removes an allocator)");
  static std::mutex writers;
  std::lock_guard<std::mutex> lock(writers);
  if (detail::g_have_membarrier) {
    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  for (ReaderRecord* r = detail::g_records.load(std::memory_order_acquire); r != nullptr;
       r = r->next) {
    if (r->depth.load(std::memory_order_acquire) == 0) continue;
    uint64_t exits = r->exits.load(std::memory_order_acquire);
    while (r->depth.load(std::memory_order_acquire) != 0 &&
           r->exits.load(std::memory_order_acquire) == exits) {
      std::this_thread::yield();
    }
  }
}

}  // namespace loom
