// The core CPU allocator's blocks: a per-thread cache of small 64-byte-aligned blocks
// (Note [Small host blocks]), and the routing of larger ones.
#pragma once

#include <cstddef>

namespace loom::host_blocks {

// A block of at least `nbytes` (> 0), 64-byte aligned; null when out of memory.
void* allocate(size_t nbytes);
// Frees a block from allocate(nbytes) with the same `nbytes`.
void deallocate(void* block, size_t nbytes);

// allocate() for the core's own objects (operator new of TensorImpl and Storage): throws
// std::bad_alloc instead of returning null. Free with deallocate(object, size).
void* allocate_object(size_t size);

}  // namespace loom::host_blocks
