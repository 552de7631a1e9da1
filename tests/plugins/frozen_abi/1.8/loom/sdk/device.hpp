// Device interfaces for devices whose memory is host memory (simulators, CPU-like
// accelerators, the start of a real port): the SDK supplies every slot, so a vendor
// writes only what differs.
//
//   static const LoomDeviceInterface npu = loom::sdk::host_memory_device<2>("npu_sim");
//   r.device_type("npu_sim", key, &npu);
//
// Note [Optional device slots]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// loom/plugin.h marks which LoomDeviceInterface slots a device must provide (allocate,
// deallocate, and copy for tensors to move on and off it) and which may be NULL. The
// defaults here: malloc/free memory; memcpy copies; device count and properties from the
// arguments; streams as a real accelerator has them, simulated (Note [Worker streams]);
// and "pinned" host memory (malloc) with copies that return once queued (Note [Held
// blocks]).
//
// Note [Worker streams]
// ~~~~~~~~~~~~~~~~~~~~~
// A stream is a worker thread running the work queued on it in order; the default stream
// (NULL) runs work at once on the calling thread. A kernel queues its body with
// on_stream(ctx.stream(), fn), capturing the tensors it uses by value (each copy holds a
// reference until the work has run). An event records a position in a stream: record
// queues "the event reaches generation g", wait queues "block until it reaches g" on
// another stream, so work after the wait runs after work before the record, as with CUDA
// events. stream_synchronize waits until the queue is empty; a failure inside queued work
// is kept and returned by the next synchronisation of that stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"

namespace loom::sdk {

// A simulated stream (Note [Worker streams]).
class WorkerStream {
 public:
  WorkerStream() : worker_([this] { run(); }) {}
  ~WorkerStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  void enqueue(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_all();
  }
  // Waits until everything queued so far has run; returns the first failure, if any.
  std::string synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
    return std::exchange(failure_, std::string());
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      std::string failed;
      try {
        work();
      } catch (const std::exception& e) {
        failed = e.what();
      }
      work = nullptr;  // release the captured tensors before reporting idle
      lock.lock();
      if (!failed.empty() && failure_.empty()) failure_ = failed;
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stopping_ = false;
  std::string failure_;
  std::thread worker_;  // last: starts after the fields above exist
};

// A simulated event: generations recorded on a stream and reached when the stream gets there.
class WorkerEvent {
 public:
  uint64_t next_generation() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ++recorded_;
  }
  void reach(uint64_t generation) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (generation > reached_) reached_ = generation;
    }
    changed_.notify_all();
  }
  void wait_for(uint64_t generation) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return reached_ >= generation; });
  }
  uint64_t recorded() {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t recorded_ = 0, reached_ = 0;
};

// Note [Held blocks]
// ~~~~~~~~~~~~~~~~~~
// A copy_async (ABI 1.8) returns once queued, and the host may free either side at once:
// a device tensor it dropped, or a pinned tensor (the ABI's rule: a freed host block is
// not handed out again before its queued copies have run). So every block of a
// host_memory_device, device and host, is entered here; a queued copy holds the blocks
// its two pointers fall in, and a block freed while held is freed by the last release.
class HeldBlocks {
 public:
  void add(void* block, size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[reinterpret_cast<uintptr_t>(block)] = Block{nbytes == 0 ? 1 : nbytes, 0, false};
  }
  // Frees the block now, or when its last hold is released.
  void free(void* block) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = blocks_.find(reinterpret_cast<uintptr_t>(block));
      if (it != blocks_.end()) {
        if (it->second.holds > 0) {
          it->second.freed = true;
          return;
        }
        blocks_.erase(it);
      }
    }
    std::free(block);
  }
  // Holds the block `ptr` points into and returns its start; nullptr for memory that is
  // not a block here.
  void* hold(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto address = reinterpret_cast<uintptr_t>(ptr);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return nullptr;
    --it;
    if (address >= it->first + it->second.size) return nullptr;
    ++it->second.holds;
    return reinterpret_cast<void*>(it->first);
  }
  void release(void* block) {
    if (block == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = blocks_.find(reinterpret_cast<uintptr_t>(block));
      if (it == blocks_.end() || --it->second.holds > 0 || !it->second.freed) return;
      blocks_.erase(it);
    }
    std::free(block);
  }

 private:
  struct Block {
    size_t size;
    int holds;
    bool freed;
  };
  std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;
};

// Runs `work` on a stream of host_memory_device (queued), or now for the default stream.
template <typename F>
void on_stream(void* stream, F&& work) {
  if (stream == nullptr) {
    work();
  } else {
    static_cast<WorkerStream*>(stream)->enqueue(std::forward<F>(work));
  }
}

namespace detail {

template <int32_t Count>
LoomError* check_index(const char* name, int32_t index) {
  if (index >= 0 && index < Count) return nullptr;
  return make_error(LOOM_STATUS_INVALID_ARGUMENT,
                    std::string("[") + name + "] device index " + std::to_string(index) +
                        " is out of range (expected 0.." + std::to_string(Count - 1) + ")");
}

}  // namespace detail

// A complete interface for `Count` devices of host memory named `name` (static string).
template <int32_t Count>
LoomDeviceInterface host_memory_device(const char* name) {
  struct Impl {
    static LoomError* count(void*, int32_t* out) {
      *out = Count;
      return nullptr;
    }
    static LoomError* properties(void* ctx, int32_t index, LoomDeviceProperties* out) {
      if (LoomError* e = detail::check_index<Count>(static_cast<const char*>(ctx), index)) return e;
      std::snprintf(out->name, sizeof(out->name), "%s %d", static_cast<const char*>(ctx), index);
      out->compute_units = 1;
      return nullptr;
    }
    static LoomError* allocate(void* ctx, int32_t index, size_t nbytes, void** out) {
      if (LoomError* e = detail::check_index<Count>(static_cast<const char*>(ctx), index)) return e;
      return host_allocate(ctx, nbytes, out);
    }
    static void deallocate(void*, int32_t, void* ptr, size_t) { blocks().free(ptr); }
    // Every block, device and host (Note [Held blocks]).
    static HeldBlocks& blocks() {
      static HeldBlocks b;
      return b;
    }
    static LoomError* host_allocate(void* ctx, size_t nbytes, void** out) {
      *out = std::malloc(nbytes == 0 ? 1 : nbytes);
      if (*out == nullptr) {
        return make_error(LOOM_STATUS_RESOURCE_EXHAUSTED,
                          std::string("[") + static_cast<const char*>(ctx) +
                              "] out of memory allocating " + std::to_string(nbytes) + " bytes");
      }
      blocks().add(*out, nbytes);
      return nullptr;
    }
    static void host_deallocate(void*, void* ptr, size_t) { blocks().free(ptr); }
    // The live streams and their device index, for device_synchronize.
    struct Streams {
      std::mutex mutex;
      std::vector<std::pair<int32_t, WorkerStream*>> list;
    };
    static Streams& streams() {
      static Streams s;
      return s;
    }
    static LoomError* stream_create(void*, int32_t index, void** out) {
      auto* stream = new WorkerStream();
      std::lock_guard<std::mutex> lock(streams().mutex);
      streams().list.emplace_back(index, stream);
      *out = stream;
      return nullptr;
    }
    static LoomError* stream_destroy(void*, int32_t, void* stream) {
      {
        std::lock_guard<std::mutex> lock(streams().mutex);
        auto& list = streams().list;
        for (auto it = list.begin(); it != list.end(); ++it) {
          if (it->second == stream) {
            list.erase(it);
            break;
          }
        }
      }
      delete static_cast<WorkerStream*>(stream);  // runs what is queued, then joins
      return nullptr;
    }
    static LoomError* stream_synchronize(void* ctx, int32_t, void* stream) {
      if (stream == nullptr) return nullptr;
      std::string failed = static_cast<WorkerStream*>(stream)->synchronize();
      if (failed.empty()) return nullptr;
      return make_error(LOOM_STATUS_INTERNAL, std::string("[") + static_cast<const char*>(ctx) +
                                                  "] queued work failed: " + failed);
    }
    static LoomError* event_create(void*, int32_t, void** out) {
      *out = new WorkerEvent();
      return nullptr;
    }
    static LoomError* event_destroy(void*, int32_t, void* event) {
      delete static_cast<WorkerEvent*>(event);
      return nullptr;
    }
    static LoomError* event_record(void*, int32_t, void* event, void* stream) {
      auto* e = static_cast<WorkerEvent*>(event);
      const uint64_t generation = e->next_generation();
      on_stream(stream, [e, generation] { e->reach(generation); });
      return nullptr;
    }
    static LoomError* event_wait(void*, int32_t, void* event, void* stream) {
      auto* e = static_cast<WorkerEvent*>(event);
      const uint64_t generation = e->recorded();
      on_stream(stream, [e, generation] { e->wait_for(generation); });
      return nullptr;
    }
    static LoomError* event_synchronize(void*, int32_t, void* event) {
      auto* e = static_cast<WorkerEvent*>(event);
      e->wait_for(e->recorded());
      return nullptr;
    }
    // Work on the default stream has run already; wait for every stream of the device.
    static LoomError* device_synchronize(void* ctx, int32_t index) {
      std::lock_guard<std::mutex> lock(streams().mutex);
      for (auto& [stream_index, stream] : streams().list) {
        if (stream_index != index) continue;
        if (LoomError* e = stream_synchronize(ctx, index, stream)) return e;
      }
      return nullptr;
    }
    static LoomError* copy(void*, int32_t, LoomCopyKind, void* dst, const void* src, size_t n,
                           void* stream) {
      if (n != 0) on_stream(stream, [dst, src, n] { std::memcpy(dst, src, n); });
      return nullptr;
    }
    // Queued, holding both sides' blocks until it has run (Note [Held blocks]).
    static LoomError* copy_async(void* ctx, int32_t index, LoomCopyKind, void* dst, const void* src,
                                 size_t n, void* stream) {
      if (LoomError* e = detail::check_index<Count>(static_cast<const char*>(ctx), index)) return e;
      if (n == 0) return nullptr;
      void* dst_block = blocks().hold(dst);
      void* src_block = blocks().hold(src);
      on_stream(stream, [dst, src, n, dst_block, src_block] {
        std::memcpy(dst, src, n);
        blocks().release(dst_block);
        blocks().release(src_block);
      });
      return nullptr;
    }
  };
  LoomDeviceInterface d{};
  d.struct_size = sizeof(LoomDeviceInterface);
  d.ctx = const_cast<char*>(name);
  d.device_count = &Impl::count;
  d.get_properties = &Impl::properties;
  d.allocate = &Impl::allocate;
  d.deallocate = &Impl::deallocate;
  d.stream_create = &Impl::stream_create;
  d.stream_destroy = &Impl::stream_destroy;
  d.stream_synchronize = &Impl::stream_synchronize;
  d.event_create = &Impl::event_create;
  d.event_destroy = &Impl::event_destroy;
  d.event_record = &Impl::event_record;
  d.event_wait = &Impl::event_wait;
  d.event_synchronize = &Impl::event_synchronize;
  d.device_synchronize = &Impl::device_synchronize;
  d.copy = &Impl::copy;
  d.host_allocate = &Impl::host_allocate;
  d.host_deallocate = &Impl::host_deallocate;
  d.copy_async = &Impl::copy_async;
  return d;
}

}  // namespace loom::sdk
