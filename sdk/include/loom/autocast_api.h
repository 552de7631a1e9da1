/* loom/autocast_api.h — the autocast plugin's control table, published as the extension
 * table "loom.autocast" (LoomHostApi::extension_find), and the policy table a backend may
 * publish to change autocast's choices for its device type.
 *
 * Autocast runs on the Autocast functionality key, so it covers every backend, a vendor's
 * included, with no code from the vendor (Note [Autocast policy] in plugins/autocast). A
 * backend that wants other choices publishes, under "loom.autocast_policy.<device type>"
 * (sdk::publish_extension), a LoomAutocastPolicyTable: its lower dtype when a region names
 * none, and per-op overrides of the cast. The autocast plugin reads it when a region for
 * that device type is entered, so the plugins may load in any order.
 *
 * Follows Note [ABI evolution rules]: structs start with struct_size, fields are only
 * appended. */
#ifndef LOOM_AUTOCAST_API_H_
#define LOOM_AUTOCAST_API_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_AUTOCAST_EXTENSION_NAME "loom.autocast"
#define LOOM_AUTOCAST_POLICY_EXTENSION_PREFIX "loom.autocast_policy."

/* What autocast does to an op's floating-point tensor arguments on the region's device. */
typedef enum LoomAutocastCast {
  LOOM_AUTOCAST_KEEP = 0,    /* nothing: the op runs on what it was given */
  LOOM_AUTOCAST_LOWER = 1,   /* float32 to the region's lower dtype (float16, bfloat16) */
  LOOM_AUTOCAST_FLOAT32 = 2, /* float16 and bfloat16 to float32 */
  LOOM_AUTOCAST_PROMOTE = 3  /* all to the widest floating dtype among them */
} LoomAutocastCast;

/* One override: `op` is "ns::name" (every overload) or "ns::name.overload". */
typedef struct LoomAutocastOverride {
  const char* op;
  int32_t cast; /* LoomAutocastCast */
} LoomAutocastOverride;

typedef struct LoomAutocastPolicyTable {
  size_t struct_size;
  int32_t default_dtype;                 /* LOOM_DTYPE_FLOAT16 or LOOM_DTYPE_BFLOAT16 */
  const LoomAutocastOverride* overrides; /* static */
  size_t num_overrides;
} LoomAutocastPolicyTable;

/* A region: enter() with device_type and dtype (-1: the device type's default) enables
 * autocast for that device type on the calling thread until exit(out_token); regions nest
 * and must exit in reverse order. enabled = 0 disables it inside an enclosing region. */
typedef struct LoomAutocastRegion {
  size_t struct_size;
  const char* device_type; /* "cpu", "cuda", a vendor's */
  int32_t enabled;
  int32_t dtype;         /* LoomDType; -1: the device type's default */
  int32_t cache_enabled; /* keep one cast of each parameter for the outermost region */
  uint64_t out_token;
} LoomAutocastRegion;

typedef struct LoomAutocastApi {
  size_t struct_size;
  LoomError* (*enter)(LoomAutocastRegion* region);
  LoomError* (*exit)(uint64_t token);
  /* The calling thread's state for device_type: enabled and dtype (the default dtype when
   * not enabled). */
  LoomError* (*query)(LoomAutocastRegion* region);
  /* The cast autocast applies to `op` ("ns::name.overload") on device_type. */
  LoomError* (*cast_of)(const char* device_type, const char* op, int32_t* out_cast);
} LoomAutocastApi;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_AUTOCAST_API_H_ */
