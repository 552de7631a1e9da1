/* loom/distributed.h's way into the distributed plugin: the extension table
 * "loom.distributed" (LoomHostApi::extension_find). The collectives themselves are ops
 * of the standard op set's `distributed` family (loom::all_reduce_, ...), which the
 * plugin implements for CPU tensors; an op called with async_op=true returns a work id
 * that this table waits for.
 *
 * Every function that returns LoomError* returns NULL or an error whose message starts
 * with "[distributed] ". A table found with extension_find is valid while the caller
 * stays inside one read of the host: look it up for each call.
 *
 * Follows Note [ABI evolution rules]: structs start with struct_size, fields are only
 * appended.
 */
#ifndef LOOM_DISTRIBUTED_API_H_
#define LOOM_DISTRIBUTED_API_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_DISTRIBUTED_EXTENSION_NAME "loom.distributed"

typedef struct LoomDistributedInitArgs {
  size_t struct_size;
  const char* backend;     /* "gloo" (an engine module of the plugin) */
  const char* init_method; /* "env://" (or NULL), "tcp://HOST:PORT", "file:///PATH" */
  int64_t rank;            /* -1: LOOM_RANK */
  int64_t world_size;      /* -1: LOOM_WORLD_SIZE */
  int64_t timeout_ms;      /* of every collective and of the rendezvous; <= 0: 300000 */
} LoomDistributedInitArgs;

/* A process group: its id (0 is the world) and this process's place in it. */
typedef struct LoomDistributedGroupInfo {
  size_t struct_size;
  int64_t rank;       /* in the group; -1 when this process is not a member */
  int64_t size;       /* the number of ranks in the group */
  int64_t timeout_ms; /* of its collectives */
} LoomDistributedGroupInfo;

typedef void (*LoomDistributedTextFn)(void* ctx, const char* text);

typedef struct LoomDistributedApi {
  size_t struct_size;
  LoomError* (*init_process_group)(const LoomDistributedInitArgs* args);
  /* Waits for the other ranks to leave (up to the timeout), then closes every group. */
  LoomError* (*destroy_process_group)(void);
  LoomError* (*is_initialized)(int32_t* out);
  LoomError* (*group_info)(int64_t group, LoomDistributedGroupInfo* out);
  /* Collective over the world: every rank calls it with the same ranks (world ranks,
   * increasing). timeout_ms <= 0: the world's. */
  LoomError* (*new_group)(const int64_t* ranks, size_t num_ranks, int64_t timeout_ms,
                          int64_t* out_group);
  /* A work id from an async op: waits up to timeout_ms (<= 0: the group's timeout) and
   * raises the collective's error. The id is forgotten after the wait. */
  LoomError* (*work_wait)(int64_t work, int64_t timeout_ms);
  /* Whether the work has ended; raises its error when it failed. */
  LoomError* (*work_is_completed)(int64_t work, int32_t* out);
  /* write(ctx, "gloo") for each engine module present, or "gloo: <why not>" when absent. */
  LoomError* (*backends)(void* ctx, LoomDistributedTextFn write);
  /* The JSON flight record of a group: this rank's last collectives in it. */
  LoomError* (*flight_record)(int64_t group, void* ctx, LoomDistributedTextFn write);
  /* The world ranks of a group, in group-rank order (out_ranks: num_ranks entries; pass
   * NULL to learn num_ranks first). */
  LoomError* (*group_ranks)(int64_t group, int64_t* out_ranks, size_t* num_ranks);
} LoomDistributedApi;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_DISTRIBUTED_API_H_ */
