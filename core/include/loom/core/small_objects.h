// Small objects made per tensor (extension tables, the plugin host's slot boxes), from the
// per-thread cache of small host blocks rather than malloc (Note [Small host objects] in
// core/src/tensor_impl.cc).
#pragma once

#include <cstddef>

namespace loom {

// At least `size` bytes, 64-byte aligned; throws std::bad_alloc when out of memory.
void* allocate_small_object(size_t size);
// Frees an object from allocate_small_object(size), with the same size.
void free_small_object(void* object, size_t size);

}  // namespace loom
