// A per-thread cache of small 64-byte-aligned host blocks behind the core's CPU
// allocator (Note [Small host blocks]).
#pragma once

#include <cstddef>

namespace loom::host_blocks {

// A block of at least `nbytes` (> 0), 64-byte aligned; null when out of memory.
void* allocate(size_t nbytes);
// Frees a block from allocate(nbytes) with the same `nbytes`.
void deallocate(void* block, size_t nbytes);

}  // namespace loom::host_blocks
