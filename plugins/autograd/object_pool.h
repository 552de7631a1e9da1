// Per-thread free lists for the objects autograd makes on every recorded op (nodes and
// tensor metadata), so recording does not go to malloc (Note [Node and metadata pools]).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace loom::autograd {

// Note [Node and metadata pools]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A 1-element op that records a node makes a node and the result's metadata and frees
// both when the result dies; through malloc those were a fifth of the recording cost.
// Blocks of one size class are kept on a per-thread list (at most kMaxCached, the rest go
// back to malloc); a block freed on another thread joins that thread's list. A thread's
// list is freed when it exits; frees after that (static destructors) go to free().
template <size_t Size>
class BlockPool {
 public:
  static constexpr size_t kMaxCached = 256;
  static void* allocate() {
    List& list = list_;
    if (list.head != nullptr) {
      Block* b = list.head;
      list.head = b->next;
      --list.count;
      return b;
    }
    void* p = std::malloc(Size < sizeof(Block) ? sizeof(Block) : Size);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  static void deallocate(void* p) {
    List& list = list_;
    if (list.count >= kMaxCached || list.gone) {
      std::free(p);
      return;
    }
    if (!list.armed) [[unlikely]] {
      drainer_.arm();
    }
    auto* b = static_cast<Block*>(p);
    b->next = list.head;
    list.head = b;
    ++list.count;
  }

 private:
  struct Block {
    Block* next;
  };
  // Plain data, initial-exec: reaching it is one %fs-relative load in this dlopen'ed
  // plugin (Note [TLS descriptors] in the top CMakeLists.txt says why not a descriptor).
  struct List {
    Block* head;
    size_t count;
    bool armed;  // the drainer below is registered for this thread
    bool gone;   // the thread's destructors ran: frees go to free()
  };
  // Frees the thread's cached blocks when it exits.
  struct Drainer {
    void arm() { list_.armed = true; }
    ~Drainer() {
      while (Block* b = list_.head) {
        list_.head = b->next;
        std::free(b);
      }
      list_.count = 0;
      list_.gone = true;
    }
  };
  static inline thread_local List list_ __attribute__((tls_model("initial-exec"))) = {};
  static inline thread_local Drainer drainer_;
};

// A standard allocator over BlockPool, for std::allocate_shared (node and control block
// in one pooled block).
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockPool<sizeof(T)>::allocate());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) {
      ::operator delete(p);
      return;
    }
    BlockPool<sizeof(T)>::deallocate(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(PoolAllocator<T>(), std::forward<Args>(args)...);
}

}  // namespace loom::autograd
