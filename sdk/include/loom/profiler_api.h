/* loom/profiler_api.h — the profiler plugin's control table, published as the extension
 * table "loom.profiler" (LoomHostApi::extension_find). Frontends start and stop
 * recording and read what was recorded through it; plugins that only add records (ranges,
 * device activities) use the host's trace service instead (Note [Trace service] in
 * loom/plugin.h) and never need this table.
 *
 * Follows Note [ABI evolution rules]: structs start with struct_size, fields are only
 * appended. */
#ifndef LOOM_PROFILER_API_H_
#define LOOM_PROFILER_API_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_PROFILER_EXTENSION_NAME "loom.profiler"

typedef struct LoomProfilerConfig {
  size_t struct_size;
  int32_t record_shapes;  /* each op's input shapes and dtypes */
  int32_t profile_memory; /* bytes allocated and freed during each op; memory counters */
  int32_t with_stack;     /* the C++ call stack of each op called from outside any op */
} LoomProfilerConfig;

typedef enum LoomProfilerEventKind {
  LOOM_PROFILER_OP = 0,            /* an op call, as the dispatcher saw it */
  LOOM_PROFILER_USER_RANGE = 1,    /* a range opened through the trace service */
  LOOM_PROFILER_BACKWARD_NODE = 2, /* autograd running one node of the graph */
  LOOM_PROFILER_DEVICE_KERNEL = 3, /* device activities (trace_device_event) */
  LOOM_PROFILER_DEVICE_COPY = 4,
  LOOM_PROFILER_DEVICE_OTHER = 5,
  LOOM_PROFILER_MEMORY = 6 /* one allocation (bytes > 0) or free (bytes < 0) */
} LoomProfilerEventKind;

/* One record. Strings are borrowed for the duration of the visit call. */
typedef struct LoomProfilerEvent {
  size_t struct_size;
  int32_t kind;             /* LoomProfilerEventKind */
  const char* name;         /* "ns::op.overload", the range's or node's name, the kernel's */
  int64_t start_ns;         /* host steady clock; MEMORY: when it happened */
  int64_t end_ns;           /* MEMORY: == start_ns; an op or range open at stop: the stop */
  uint64_t id;              /* unique among the records of one recording; MEMORY: 0 */
  uint64_t parent_id;       /* the enclosing op or range on the same thread; 0 at the top */
  uint64_t thread_id;       /* the OS thread id of the thread that made the record */
  uint32_t dispatch_key;    /* OP: the LoomDispatchKey whose kernel ran below the profiler */
  const char* input_shapes; /* OP with record_shapes: "[[2, 3], [3], []]" ("" otherwise) */
  const char* input_dtypes; /* OP with record_shapes: "[float32, float32, Scalar]" */
  int64_t bytes_allocated;  /* OP/ranges with profile_memory: during it, children included */
  int64_t bytes_freed;
  uint64_t sequence_nr;    /* OP: the autograd node it created; BACKWARD_NODE: the node's */
  int32_t has_sequence_nr; /* whether sequence_nr is set */
  LoomDevice device;       /* device records and MEMORY */
  uint64_t stream;         /* device records */
  int64_t bytes;           /* DEVICE_COPY: bytes moved; MEMORY: + allocated / - freed;
                              OP of the distributed family: its tensor arguments' bytes */
  uint64_t correlation_id; /* device records: the op or range that launched it */
  const char* stack;       /* OP with with_stack: frames, innermost first, one per line */
} LoomProfilerEvent;

typedef void (*LoomProfilerVisitFn)(void* ctx, const LoomProfilerEvent* event);

typedef struct LoomProfilerApi {
  size_t struct_size;
  /* Starts recording every op on every thread (FAILED_PRECONDITION when recording). */
  LoomError* (*start)(const LoomProfilerConfig* config);
  /* Stops recording; what was recorded stays until clear or the next start. */
  LoomError* (*stop)(void);
  /* Drops what was recorded so far (recording goes on if it was on). */
  LoomError* (*clear)(void);
  /* Calls visit once per record, ordered by thread then start time. Not while recording
   * (FAILED_PRECONDITION): stop first. */
  LoomError* (*visit_events)(void* ctx, LoomProfilerVisitFn visit);
  /* 1 while recording. */
  int32_t (*is_recording)(void);
} LoomProfilerApi;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_PROFILER_API_H_ */
