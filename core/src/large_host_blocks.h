// The pool of large host blocks behind the core's CPU allocator (Note [Large host
// blocks]); its statistics and controls are public in loom/core/host_memory.h.
#pragma once

#include <cstddef>

namespace loom::large_host_blocks {

// The size class (bytes actually mapped) of a request of `nbytes` (>= 1 page).
size_t class_bytes(size_t nbytes);
// A page-aligned block of at least `nbytes`; null when out of memory.
void* allocate(size_t nbytes);
// Frees a block from allocate(nbytes) with the same `nbytes`.
void deallocate(void* block, size_t nbytes);

}  // namespace loom::large_host_blocks
