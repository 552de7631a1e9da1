/* loom/device_memory_api.h — a device plugin's memory statistics and cache control,
 * published as the extension table "loom.device_memory.<device type>" (for example
 * "loom.device_memory.cuda"; LoomHostApi::extension_publish). Apps read it through
 * loom::memory_stats, loom::empty_cache, loom::reset_peak_memory_stats and
 * loom::pinned_memory_stats (loom/devices.h), as PyTorch's torch.cuda.memory_stats and
 * host_memory_stats do; a device type without the table has no
 * caching allocator to report on.
 *
 * Follows Note [ABI evolution rules]: structs start with struct_size, fields are only
 * appended. */
#ifndef LOOM_DEVICE_MEMORY_API_H_
#define LOOM_DEVICE_MEMORY_API_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_DEVICE_MEMORY_EXTENSION_PREFIX "loom.device_memory."

/* One device's figures, in bytes and counts. */
typedef struct LoomDeviceMemoryStats {
  size_t struct_size;
  int64_t allocated_bytes;      /* held by live tensors (the allocator's block sizes) */
  int64_t reserved_bytes;       /* obtained from the driver: allocated + cached */
  int64_t peak_allocated_bytes; /* since the start or the last reset_peak */
  int64_t peak_reserved_bytes;
  int64_t allocations;        /* allocation requests served */
  int64_t cache_hits;         /* of them, served from cached memory */
  int64_t driver_allocations; /* calls into the driver */
  int64_t driver_frees;
} LoomDeviceMemoryStats;

/* Every function returns NULL or an owned LoomError (a device index out of range, for
 * one). */
typedef struct LoomDeviceMemoryApi {
  size_t struct_size;
  /* Fills `out` (its struct_size set by the caller) for device `index`. */
  LoomError* (*stats)(int32_t index, LoomDeviceMemoryStats* out);
  /* Returns cached memory of device `index` (every device when index < 0) to the driver. */
  LoomError* (*empty_cache)(int32_t index);
  /* Starts the peaks again from the current figures. */
  LoomError* (*reset_peak)(int32_t index);
  /* The pinned host memory the plugin lends (LoomDeviceInterface::host_allocate, ABI
   * 1.8), for the whole device type; optional (NULL or absent: none to report). Read by
   * loom::pinned_memory_stats. */
  LoomError* (*host_stats)(LoomDeviceMemoryStats* out);
} LoomDeviceMemoryApi;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_DEVICE_MEMORY_API_H_ */
