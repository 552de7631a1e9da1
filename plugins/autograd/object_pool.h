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
// back to malloc); a block freed on another thread joins that thread's list.
template <size_t Size>
class BlockPool {
 public:
  static constexpr size_t kMaxCached = 256;
  static void* allocate() {
    List& list = local();
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
    List& list = local();
    if (list.count >= kMaxCached) {
      std::free(p);
      return;
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
  struct List {
    Block* head = nullptr;
    size_t count = 0;
    ~List() {
      while (head != nullptr) {
        Block* next = head->next;
        std::free(head);
        head = next;
      }
    }
  };
  static List& local() {
    thread_local List list;
    return list;
  }
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
