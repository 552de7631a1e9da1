/*
 * loom/plugin.h — the stable C ABI between the loom core and its plugins.
 *
 * This is the only header a plugin needs (the C++ helpers under loom/sdk/ wrap it).
 * It is plain C11 and compiles as C++. See docs/architecture.md, "The plugin ABI".
 *
 * Note [ABI evolution rules]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 *  - LOOM_ABI_VERSION_MAJOR must match between host and plugin. A MINOR release only
 *    adds: new fields at the end of structs, new enumerators, new functions at the end
 *    of tables. Nothing is removed, renamed or reordered.
 *  - Every struct that crosses the boundary starts with `size_t struct_size`, filled
 *    by whoever allocates the struct with sizeof() as that side compiled it. A reader
 *    checks LOOM_HAS_FIELD() before reading a field and never compares sizes for
 *    equality. A struct_size of zero is rejected.
 *  - Errors are LoomError objects returned as a pointer; NULL means success. An error
 *    carries its own destroy function, so whoever created it frees it, whoever holds it
 *    calls err->destroy(err) exactly once.
 *  - No C++ exception, std:: type or RTTI crosses this boundary.
 *
 * Note [Argument structs]
 * ~~~~~~~~~~~~~~~~~~~~~~~
 *  Functions added since 1.2 take one argument struct (LoomXxxArgs) that starts with
 *  struct_size, as PJRT's do: the caller zero-initialises it, sets struct_size =
 *  sizeof() and the inputs, and reads the outputs (fields named out_*) after the call.
 *  A later minor appends fields; the host reads a field only when the caller's
 *  struct_size covers it and otherwise uses the documented default, so adding an
 *  argument never changes a function's signature.
 *
 * Note [Ownership annotations]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 *  "borrowed"  the callee may read it only for the duration of the call.
 *  "static"    the pointer stays valid until the plugin that provided it is unloaded.
 *  "owned"     the receiver now holds one reference / the object and must release it
 *              through the table it came from.
 */
#ifndef LOOM_PLUGIN_H_
#define LOOM_PLUGIN_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_ABI_VERSION_MAJOR 1
/* Minor history (a plugin that uses a service of minor N needs a host with minor >= N;
 * check LOOM_HAS_FIELD(host, LoomHostApi, field) before using it on an older host):
 *   1.0  the initial ABI
 *   1.1  LoomHostApi::generator_reserve (random numbers)
 *   1.2  per-tensor extension slots, tensor key bits and version counter, thread-local
 *        key guards, allocation observers (Note [Argument structs]); the current stream
 *        in LoomKernelCall; the host uses the device interface (counts, copies, streams)
 *   1.3  LoomTensorView::view_base (the tensor a view was made from);
 *        LoomHostApi::tensor_alias
 *   1.4  process-wide key includes, named extension tables, trace ranges and device
 *        events (the profiler's seams: Note [Trace service])
 *   1.5  LoomHostApi::current_stream (a device plugin's allocator learns the stream an
 *        allocation is for)
 *   1.6  LoomHostApi::redispatch_with_keys (redispatch under a key guard in one call);
 *        LoomTensorSlotArgs::key (a slot value and a key bit set together)
 *   1.7  LoomDeviceInterface::flags (copies to the device that need no wait); a wait's
 *        LOOM_STATUS_INVALID_ARGUMENT raised as the error of an op found by its kernel
 *   1.8  LoomDeviceInterface::host_allocate, host_deallocate and copy_async (pinned host
 *        memory and copies that return once queued: Note [Pinned host memory])
 *   1.9  the complex dtypes LOOM_DTYPE_COMPLEX64 and LOOM_DTYPE_COMPLEX128 (a kernel that
 *        declares them needs a host that knows them)
 *   1.10 quantizers of quantized tensors: LoomTensorView::quantizer, LoomQuantizer and
 *        LoomHostApi::tensor_empty_quantized
 *   1.11 LOOM_DEVICE_TAKES_HOST_SCALARS (a C++ number reaches a device's pointwise kernel
 *        by value; a plugin that sets it on an older host gets the number copied) */
#define LOOM_ABI_VERSION_MINOR 11

/* The one symbol a plugin exports (see LoomPluginEntryFn). */
#define LOOM_PLUGIN_ENTRY_SYMBOL "loom_plugin_entry"

#if defined(_WIN32)
#define LOOM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define LOOM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* True when `ptr` (a struct starting with struct_size) is large enough to hold `field`. */
#define LOOM_HAS_FIELD(ptr, type, field)       \
  ((ptr) != NULL && (ptr)->struct_size != 0 && \
   (ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* ------------------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------------------- */

typedef enum LoomStatusCode {
  LOOM_STATUS_OK = 0,
  LOOM_STATUS_INVALID_ARGUMENT = 1, /* wrong shape, dtype, device, value */
  LOOM_STATUS_NOT_FOUND = 2,        /* unknown op, key, device type */
  LOOM_STATUS_ALREADY_EXISTS = 3,   /* duplicate definition or registration */
  LOOM_STATUS_UNIMPLEMENTED = 4,    /* no kernel, unsupported dtype */
  LOOM_STATUS_FAILED_PRECONDITION = 5,
  LOOM_STATUS_RESOURCE_EXHAUSTED = 6, /* out of memory */
  LOOM_STATUS_INTERNAL = 7,
  LOOM_STATUS_VERSION_MISMATCH = 8
} LoomStatusCode;

typedef struct LoomError LoomError;
struct LoomError {
  size_t struct_size;
  int32_t code;        /* LoomStatusCode */
  const char* message; /* owned by the error; valid until destroy() */
  /* Frees the error. Provided by whoever created it. */
  void (*destroy)(LoomError* self);
};

/* ------------------------------------------------------------------------------------
 * Data types, devices, dispatch keys (ABI-stable numbering)
 * ---------------------------------------------------------------------------------- */

typedef enum LoomDType {
  LOOM_DTYPE_BOOL = 0,
  LOOM_DTYPE_UINT8 = 1,
  LOOM_DTYPE_INT8 = 2,
  LOOM_DTYPE_INT16 = 3,
  LOOM_DTYPE_INT32 = 4,
  LOOM_DTYPE_INT64 = 5,
  LOOM_DTYPE_FLOAT16 = 6,
  LOOM_DTYPE_BFLOAT16 = 7,
  LOOM_DTYPE_FLOAT32 = 8,
  LOOM_DTYPE_FLOAT64 = 9,
  LOOM_DTYPE_QINT8 = 10,
  LOOM_DTYPE_QUINT8 = 11,
  LOOM_DTYPE_QINT32 = 12,
  LOOM_DTYPE_COMPLEX64 = 13,  /* two float32: real, imaginary (ABI 1.9) */
  LOOM_DTYPE_COMPLEX128 = 14, /* two float64 (ABI 1.9) */
  LOOM_DTYPE_COUNT = 15
} LoomDType;

/* Device types known without any plugin. Others are assigned at run time by
 * register_device_type and are >= LOOM_DEVICE_FIRST_DYNAMIC. */
enum { LOOM_DEVICE_CPU = 0, LOOM_DEVICE_META = 1, LOOM_DEVICE_FIRST_DYNAMIC = 2 };

typedef struct LoomDevice {
  int16_t type;  /* a device type id */
  int16_t index; /* -1 means "current / any" */
} LoomDevice;

/* Dispatch keys. These ids are stable ABI; the host maps them to its internal priority
 * order, so a plugin never depends on bit positions. Key sets handed to kernels are
 * opaque: a kernel passes its LoomKernelCall::key_set on to redispatch unchanged. */
typedef enum LoomDispatchKey {
  LOOM_KEY_UNDEFINED = 0,
  /* backends (the "Dense" functionality on a device) */
  LOOM_KEY_CPU = 1,
  LOOM_KEY_CUDA = 2,
  LOOM_KEY_HIP = 3,
  LOOM_KEY_META = 4,
  LOOM_KEY_VENDOR_FIRST = 16, /* LOOM_KEY_VENDOR_FIRST + i, i < LOOM_MAX_VENDOR_BACKENDS */
  /* functionalities, from lowest to highest priority */
  LOOM_KEY_QUANTIZED = 64,
  LOOM_KEY_AUTOGRAD = 65,
  LOOM_KEY_AUTOCAST = 66,
  LOOM_KEY_PROFILER = 67,
  LOOM_KEY_TRACER = 68,
  /* alias keys: register once, fill several table entries */
  LOOM_KEY_COMPOSITE_EXPLICIT = 128, /* every backend */
  LOOM_KEY_COMPOSITE_IMPLICIT = 129  /* a decomposition: backends without a kernel */
} LoomDispatchKey;

#define LOOM_MAX_VENDOR_BACKENDS 12

/* ------------------------------------------------------------------------------------
 * Tensors
 * ---------------------------------------------------------------------------------- */

/* Opaque refcounted tensor handle owned by the host. */
typedef struct LoomTensor LoomTensor;

/* A DLPack-compatible view of a tensor. Filled by LoomHostApi::tensor_view.
 * dl.shape and dl.strides (in elements) are borrowed from the tensor and valid while
 * the caller holds a reference to it. dl.data is the storage base pointer; the first
 * element is at (char*)dl.data + dl.byte_offset. */
/* How a quantized tensor's integers q map to real values: (q - zero_point) * scale, per
 * tensor or per index of channel axis `axis` (ABI 1.10). */
typedef enum LoomQScheme {
  LOOM_QSCHEME_PER_TENSOR_AFFINE = 0,
  LOOM_QSCHEME_PER_CHANNEL_AFFINE = 1
} LoomQScheme;

typedef struct LoomQuantizer {
  int32_t scheme;     /* LoomQScheme */
  int32_t axis;       /* per channel: the channel dim */
  double scale;       /* per tensor */
  int64_t zero_point; /* per tensor */
  /* per channel, borrowed: float64 [channels] and int64 [channels], contiguous, CPU */
  LoomTensor* scales;
  LoomTensor* zero_points;
} LoomQuantizer;

typedef struct LoomTensorView {
  size_t struct_size;
  DLTensor dl;
  int32_t dtype;     /* LoomDType; authoritative (DLPack has no quantized types) */
  LoomDevice device; /* loom device (dl.device is the DLPack equivalent) */
  int64_t numel;
  int32_t is_contiguous; /* row-major contiguous */
  /* Since 1.3 (check LOOM_HAS_FIELD): borrowed, the tensor this one is a view of (the
   * root of a chain of views), or NULL when it is not a view. */
  LoomTensor* view_base;
  /* Since 1.10 (check LOOM_HAS_FIELD): borrowed, the quantizer of a tensor of a quantized
   * dtype (qint8, quint8, qint32), NULL for other dtypes. */
  const LoomQuantizer* quantizer;
} LoomTensorView;

/* ------------------------------------------------------------------------------------
 * Boxed values: what a kernel receives and returns
 * ---------------------------------------------------------------------------------- */

typedef enum LoomValueTag {
  LOOM_VALUE_NONE = 0,
  LOOM_VALUE_TENSOR = 1,      /* u.tensor */
  LOOM_VALUE_INT = 2,         /* u.i */
  LOOM_VALUE_DOUBLE = 3,      /* u.d */
  LOOM_VALUE_BOOL = 4,        /* u.i (0 or 1) */
  LOOM_VALUE_STRING = 5,      /* u.str, NUL-terminated, `length` bytes before the NUL */
  LOOM_VALUE_DTYPE = 6,       /* u.i is a LoomDType */
  LOOM_VALUE_DEVICE = 7,      /* u.device */
  LOOM_VALUE_INT_LIST = 8,    /* u.ints[length] */
  LOOM_VALUE_DOUBLE_LIST = 9, /* u.doubles[length] */
  LOOM_VALUE_BOOL_LIST = 10,  /* u.bools[length] */
  LOOM_VALUE_TENSOR_LIST = 11 /* u.tensors[length]; an element may be NULL for Tensor?[] */
} LoomValueTag;

/* 16 bytes. Arguments are borrowed by the kernel for the duration of the call (tensors,
 * strings and list arrays included). Returns written by a kernel are owned by the caller:
 * a returned tensor carries one reference; a returned list array or string must be
 * allocated with LoomHostApi::list_allocate (the receiver frees it with value_release).
 * A fixed-size list argument (int[2]) is always a list of that length. */
typedef struct LoomValue {
  uint32_t tag;    /* LoomValueTag */
  uint32_t length; /* element count for lists and strings */
  union {
    int64_t i;
    double d;
    LoomTensor* tensor;
    const char* str;
    const int64_t* ints;
    const double* doubles;
    const uint8_t* bools;
    LoomTensor* const* tensors;
    LoomDevice device;
  } u;
} LoomValue;

/* ------------------------------------------------------------------------------------
 * Kernels
 * ---------------------------------------------------------------------------------- */

/* Opaque handles owned by the host. */
typedef struct LoomOperator LoomOperator;           /* lives as long as the host */
typedef struct LoomRegistration LoomRegistration;   /* see deregister */
typedef struct LoomPluginContext LoomPluginContext; /* the host's record of one plugin */

typedef struct LoomKernelCall {
  size_t struct_size;
  const LoomOperator* op;
  /* Opaque. The keys below the one this kernel runs under; pass it to redispatch to
   * call the next kernel in line. */
  uint64_t key_set;
  uint32_t dispatch_key; /* LoomDispatchKey this kernel was selected for */
  const LoomValue* args; /* borrowed; num_args == the schema's argument count */
  size_t num_args;
  LoomValue* returns; /* the kernel fills all num_returns entries with owned values */
  size_t num_returns;
  /* ABI 1.2 (test LOOM_HAS_FIELD(call, LoomKernelCall, stream)): the calling thread's
   * current stream of the backend's device type (set by a stream guard; NULL: the default
   * stream). A kernel queues its work on it; loom's copies off the device wait for it. */
  void* stream;
} LoomKernelCall;

/* A boxed kernel. `ctx` is the pointer given at registration (borrowed, static). */
typedef LoomError* (*LoomKernelFn)(void* ctx, const LoomKernelCall* call);

/* ------------------------------------------------------------------------------------
 * Devices (docs/architecture.md §4, Device interface). Everything a device plugin
 * provides; the host holds no vendor types. Streams and events are opaque handles of the
 * plugin.
 * ---------------------------------------------------------------------------------- */

typedef struct LoomDeviceProperties {
  size_t struct_size;
  char name[128];
  int64_t total_memory_bytes;
  int32_t compute_units;
} LoomDeviceProperties;

typedef enum LoomCopyKind {
  LOOM_COPY_HOST_TO_DEVICE = 0,
  LOOM_COPY_DEVICE_TO_HOST = 1,
  LOOM_COPY_DEVICE_TO_DEVICE = 2
} LoomCopyKind;

/* Slots marked REQUIRED must be set; the others may be NULL, and the host then says the
 * device cannot do that (device_count NULL: the count is unknown and indices are not
 * checked; copy NULL: tensors cannot move on or off the device). loom/sdk/device.hpp
 * supplies every slot for devices whose memory is host memory. */
typedef struct LoomDeviceInterface {
  size_t struct_size;
  void* ctx; /* static; passed to every function below */
  LoomError* (*device_count)(void* ctx, int32_t* out_count);                         /* optional */
  LoomError* (*get_properties)(void* ctx, int32_t index, LoomDeviceProperties* out); /* optional */
  /* memory: REQUIRED */
  LoomError* (*allocate)(void* ctx, int32_t index, size_t nbytes, void** out_ptr);
  void (*deallocate)(void* ctx, int32_t index, void* ptr, size_t nbytes);
  /* streams (optional): a NULL stream is the device's default stream */
  LoomError* (*stream_create)(void* ctx, int32_t index, void** out_stream);
  LoomError* (*stream_destroy)(void* ctx, int32_t index, void* stream);
  LoomError* (*stream_synchronize)(void* ctx, int32_t index, void* stream);
  /* events (optional) */
  LoomError* (*event_create)(void* ctx, int32_t index, void** out_event);
  LoomError* (*event_destroy)(void* ctx, int32_t index, void* event);
  LoomError* (*event_record)(void* ctx, int32_t index, void* event, void* stream);
  LoomError* (*event_wait)(void* ctx, int32_t index, void* event, void* stream);
  LoomError* (*event_synchronize)(void* ctx, int32_t index, void* event);
  LoomError* (*device_synchronize)(void* ctx, int32_t index); /* optional */
  /* A wait (stream, event or device synchronize) may return LOOM_STATUS_INVALID_ARGUMENT
   * with the error of an op queued earlier whose kernel found bad input (an index out of
   * range): its message starts with that op in brackets, and the host raises it as that
   * op's error. */
  /* copies of nbytes between host and device or within the device, ordered on stream;
   * optional: the host moves tensors between devices through it (it then waits with
   * stream_synchronize when present). Without it, every copy_ to, from or within the
   * device type goes to the loom::copy_ kernel the plugin registers for its backend key
   * (as the ABI 1.0 and 1.1 guides taught); a device type with neither cannot move
   * tensors. */
  LoomError* (*copy)(void* ctx, int32_t index, LoomCopyKind kind, void* dst, const void* src,
                     size_t nbytes, void* stream);
  /* LOOM_DEVICE_* bits (ABI 1.7; an older plugin's shorter struct has none) */
  uint64_t flags;
  /* Page-locked host memory, for copies that need not wait (ABI 1.8; optional, both or
   * neither): a host block of nbytes the device's DMA can read and write. The host makes
   * pinned CPU tensors of it (Tensor::pin_memory). */
  LoomError* (*host_allocate)(void* ctx, size_t nbytes, void** out_ptr);
  void (*host_deallocate)(void* ctx, void* ptr, size_t nbytes);
  /* As copy, but returns once the copy is queued on stream, without waiting for it (ABI
   * 1.8; optional). The host calls it only for a copy asked to be non-blocking whose host
   * side lies in a block of host_allocate, and then does not wait. A block given to
   * host_deallocate while such a copy of it is queued must not be handed out again before
   * that copy has run. */
  LoomError* (*copy_async)(void* ctx, int32_t index, LoomCopyKind kind, void* dst, const void* src,
                           size_t nbytes, void* stream);
} LoomDeviceInterface;

/* copy(LOOM_COPY_HOST_TO_DEVICE) returns only once its source may be freed or changed
 * (the bytes are staged or moved), so the host does not wait for the stream after it:
 * a C++ number used with a device tensor then costs no wait for the device. */
#define LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE 1u

/* The backend's kernels of pointwise structured ops (the out= variants of the "pointwise"
 * ops: add.out, where.self_out, ...) take an input that is a 0-dim CPU tensor (a C++
 * number, or any 0-dim CPU tensor used with the device's tensors) as it is: of the compute
 * dtype (a mask's bool), not expanded, its one element read on the host and passed to the
 * device kernel by value. Without the bit the host copies such an input to the device
 * first. (Meaningful to hosts of ABI 1.11 on; an older host copies, which stays correct.) */
#define LOOM_DEVICE_TAKES_HOST_SCALARS 2u

/* ------------------------------------------------------------------------------------
 * ABI 1.2 argument structs (Note [Argument structs])
 * ---------------------------------------------------------------------------------- */

/* slot_claim: a slot by name, idempotent (the same name gives the same slot). There are
 * 8 slots per process; claiming a ninth name fails with RESOURCE_EXHAUSTED. */
typedef struct LoomSlotClaimArgs {
  size_t struct_size;
  LoomPluginContext* plugin;
  const char* name; /* borrowed, e.g. "autograd" */
  int32_t out_slot;
} LoomSlotClaimArgs;

/* tensor_slot_get writes the slot's value (NULL when unset) to `value`. tensor_slot_set
 * replaces it: the previous value's destroy runs; `value` and `destroy` become the
 * tensor's (destroy runs when the value is replaced or the tensor dies; NULL value
 * clears). A plugin that sets values is not unloaded while any is alive. A tensor is
 * shared by every handle of it but not by its views: each view has its own slots. */
typedef struct LoomTensorSlotArgs {
  size_t struct_size;
  LoomTensor* tensor; /* borrowed */
  int32_t slot;
  void* value;
  void (*destroy)(void* value);
  LoomPluginContext* plugin; /* tensor_slot_set: the plugin owning `destroy` */
  /* Since 1.6 (an older host ignores it: check LOOM_HAS_FIELD(host, LoomHostApi,
   * redispatch_with_keys) first): tensor_slot_set also adds this functionality key to the
   * tensor's key set, as tensor_key_set would; LOOM_KEY_UNDEFINED (0) adds none. */
  uint32_t key;
} LoomTensorSlotArgs;

/* tensor_key_get writes whether the tensor's key set holds `dispatch_key` to `present`;
 * tensor_key_set adds it (present = 1) or removes it (present = 0). Only functionality
 * keys (LOOM_KEY_QUANTIZED .. LOOM_KEY_TRACER). Not synchronised: set key bits before
 * the tensor is shared with other threads. */
typedef struct LoomTensorKeyArgs {
  size_t struct_size;
  LoomTensor* tensor; /* borrowed */
  uint32_t dispatch_key;
  int32_t present;
} LoomTensorKeyArgs;

/* tensor_version writes the counter to out_version, after adding `bump` to it. The host
 * bumps it by one after every op call from the top (call_op, an app's call) that writes
 * the tensor (a `Tensor(a!)` argument); autograd compares versions to refuse a backward
 * through a tensor modified in place. */
typedef struct LoomTensorVersionArgs {
  size_t struct_size;
  LoomTensor* tensor; /* borrowed */
  uint64_t bump;
  uint64_t out_version;
} LoomTensorVersionArgs;

/* Since 1.3: tensor_alias makes a new tensor (owned, in out_alias) over `tensor`'s
 * storage, sizes, strides and offset, sharing its version counter, with no view base,
 * no slot values and no functionality key bits: what autograd keeps of a tensor it saves
 * for backward without keeping the tensor itself (and its history) alive. */
typedef struct LoomTensorAliasArgs {
  size_t struct_size;
  LoomTensor* tensor;    /* borrowed */
  LoomTensor* out_alias; /* owned by the caller */
} LoomTensorAliasArgs;

/* local_keys_push adds `include` keys to, and `exclude` keys to the excluded set of,
 * every dispatch on the calling thread, and writes the thread's previous sets (opaque)
 * to out_saved; local_keys_restore(args) puts them back. Pushes and restores nest. */
typedef struct LoomLocalKeysArgs {
  size_t struct_size;
  const uint32_t* include; /* borrowed LoomDispatchKey ids */
  size_t num_include;
  const uint32_t* exclude;
  size_t num_exclude;
  uint64_t out_saved[2];
} LoomLocalKeysArgs;

typedef struct LoomAllocationEvent {
  size_t struct_size;
  LoomDevice device;
  const void* ptr;
  size_t nbytes;
  int32_t is_free; /* 0: an allocation, 1: a free */
} LoomAllocationEvent;

/* Called on the allocating thread, for every allocation and free of every device type,
 * while the allocator's lock-free read section is held: it must not allocate tensors,
 * load or unload plugins, or block. */
typedef void (*LoomAllocationObserverFn)(void* ctx, const LoomAllocationEvent* event);

typedef struct LoomAllocationObserverArgs {
  size_t struct_size;
  LoomPluginContext* plugin;
  LoomAllocationObserverFn fn;
  void* ctx;                          /* static; passed to fn */
  LoomRegistration* out_registration; /* for deregister */
} LoomAllocationObserverArgs;

/* ------------------------------------------------------------------------------------
 * ABI 1.4 argument structs
 * ---------------------------------------------------------------------------------- */

/* process_keys_include adds one count of `dispatch_key` (a functionality key) to the
 * process-wide include set when `include` is 1, removes one when it is 0: the key is in
 * every dispatch on every thread while its count is above zero (how a profiler sees the
 * ops of all threads). Removing a key whose count is zero fails. */
typedef struct LoomProcessKeysArgs {
  size_t struct_size;
  uint32_t dispatch_key;
  int32_t include;
} LoomProcessKeysArgs;

/* extension_publish makes `table` (static until `plugin` unloads) findable by `name`
 * ([a-z0-9_.]+); a second table of the same name fails with ALREADY_EXISTS. The table is
 * removed when its plugin unloads. extension_find writes the table published as `name` to
 * out_table, or NULL. A found table is valid for the duration of the caller's current
 * call into the host or from it (a kernel, an entry point): look it up again later,
 * since its plugin may have been unloaded since. */
typedef struct LoomExtensionArgs {
  size_t struct_size;
  LoomPluginContext* plugin; /* extension_publish only */
  const char* name;          /* borrowed */
  const void* table;         /* extension_publish: the table; extension_find: unused */
  const void* out_table;     /* extension_find */
} LoomExtensionArgs;

/* key_set_backend: the backend key (LOOM_KEY_CPU, a vendor key, ...) whose kernel a call
 * dispatched with the opaque `key_set` (a kernel's LoomKernelCall::key_set) reaches in
 * the end; LOOM_KEY_UNDEFINED when it has no backend. */
typedef struct LoomKeySetArgs {
  size_t struct_size;
  uint64_t key_set;
  uint32_t out_backend_key;
} LoomKeySetArgs;

/* Note [Trace service]
 * ~~~~~~~~~~~~~~~~~~~~
 *  The host relays trace records to at most one tracer (the profiler plugin, while it
 *  records): anyone may open a named range on the calling thread (user ranges, autograd's
 *  backward nodes), tell the tracer which autograd node the op running on this thread
 *  created (trace_sequence), or add a device activity (a kernel, a copy) timed by a device
 *  plugin. With no tracer set each call returns at once (out_id = 0); a device plugin asks
 *  trace_state first so that it times nothing nobody records. Times are the host's steady
 *  clock in nanoseconds (CLOCK_MONOTONIC); a plugin converts device timestamps to it. */
typedef enum LoomTraceKind {
  LOOM_TRACE_USER_RANGE = 0,    /* opened by an app or a plugin */
  LOOM_TRACE_BACKWARD_NODE = 1, /* autograd running one node; sequence_nr links the op */
  LOOM_TRACE_DEVICE_KERNEL = 2, /* device events only */
  LOOM_TRACE_DEVICE_COPY = 3,
  LOOM_TRACE_DEVICE_OTHER = 4
} LoomTraceKind;

/* trace_range_begin: name (borrowed, copied by the tracer), kind, sequence_nr (a backward
 * node's; 0 when none) in; out_id (0: nothing records) out. trace_range_end: the id. */
typedef struct LoomTraceRangeArgs {
  size_t struct_size;
  const char* name;
  int32_t kind; /* LoomTraceKind (USER_RANGE or BACKWARD_NODE) */
  uint64_t sequence_nr;
  uint64_t out_id;
} LoomTraceRangeArgs;

/* trace_sequence: the op running on the calling thread created the autograd node
 * numbered sequence_nr (forward-to-backward flow in a trace). */
typedef struct LoomTraceSequenceArgs {
  size_t struct_size;
  uint64_t sequence_nr;
} LoomTraceSequenceArgs;

/* trace_state: out_recording is 1 while a tracer records; out_correlation_id is the id of
 * the innermost op or range open on the calling thread (0: none), which a device plugin
 * keeps with work it launches and passes back in LoomTraceDeviceEventArgs. */
typedef struct LoomTraceStateArgs {
  size_t struct_size;
  int32_t out_recording;
  uint64_t out_correlation_id;
} LoomTraceStateArgs;

/* trace_device_event: one activity on a device, on the device's timeline. */
typedef struct LoomTraceDeviceEventArgs {
  size_t struct_size;
  const char* name; /* borrowed, e.g. the kernel's name */
  int32_t kind;     /* LoomTraceKind: DEVICE_KERNEL, DEVICE_COPY or DEVICE_OTHER */
  LoomDevice device;
  uint64_t stream;         /* the plugin's id for the stream (0: the default stream) */
  int64_t start_ns;        /* host steady clock */
  int64_t end_ns;          /* >= start_ns */
  int64_t bytes;           /* copies: bytes moved; else 0 */
  uint64_t correlation_id; /* from trace_state at launch; 0: the calling thread's now */
} LoomTraceDeviceEventArgs;

/* The tracer's side, registered with set_tracer. Every function is called on the thread
 * that made the record and must not call ops. range_begin returns the range's id
 * (non-zero). */
typedef struct LoomTracerArgs {
  size_t struct_size;
  LoomPluginContext* plugin;
  void* ctx; /* static; passed to every function */
  uint64_t (*range_begin)(void* ctx, const LoomTraceRangeArgs* range);
  void (*range_end)(void* ctx, uint64_t id);
  void (*sequence)(void* ctx, uint64_t sequence_nr);
  uint64_t (*correlation_id)(void* ctx);
  void (*device_event)(void* ctx, const LoomTraceDeviceEventArgs* event);
  LoomRegistration* out_registration; /* deregister it to stop relaying */
} LoomTracerArgs;

/* ------------------------------------------------------------------------------------
 * ABI 1.5 argument structs
 * ---------------------------------------------------------------------------------- */

/* current_stream: the calling thread's current stream of `device_type` (set by a stream
 * guard; NULL: the default stream), the stream a kernel call on this thread would get in
 * LoomKernelCall::stream. A caching allocator keys reuse of freed memory by it. */
typedef struct LoomCurrentStreamArgs {
  size_t struct_size;
  int16_t device_type;
  void* out_stream;
} LoomCurrentStreamArgs;

/* ------------------------------------------------------------------------------------
 * ABI 1.6 argument structs
 * ---------------------------------------------------------------------------------- */

/* redispatch_with_keys: LoomHostApi::redispatch (op, key_set, args, returns as there)
 * with the calling thread's local keys changed while it runs: `include` keys added to
 * and `exclude` keys removed from every dispatch (functionality keys only, as for
 * local_keys_push), restored when it returns, also on error. What a functionality kernel
 * does to run its op below itself without seeing the ops the kernels below call, in one
 * host call instead of local_keys_push, redispatch and local_keys_restore. */
typedef struct LoomRedispatchArgs {
  size_t struct_size;
  const LoomOperator* op;
  uint64_t key_set; /* the kernel's LoomKernelCall::key_set */
  const LoomValue* args;
  size_t num_args;
  LoomValue* returns;
  size_t num_returns;
  const uint32_t* include; /* borrowed LoomDispatchKey ids */
  size_t num_include;
  const uint32_t* exclude;
  size_t num_exclude;
} LoomRedispatchArgs;

/* ------------------------------------------------------------------------------------
 * The host's services, handed to the plugin at entry. Static for the plugin's lifetime.
 * Every function returns NULL on success or an owned LoomError.
 *
 * Note [The host services by purpose]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * LoomHostApi's entries are in the order ABI versions added them, which is frozen; by
 * purpose they form four groups (tests/check_host_api_groups.py keeps this list whole),
 * each wrapped by its own C++ helpers:
 *
 * core (every plugin: ops, kernels, tensors, errors; loom/sdk/plugin.hpp, kernel.hpp,
 * tensor.hpp, ops.hpp, error.hpp):
 *   define_op find_op op_name op_schema register_kernel register_fallback
 *   register_fallthrough deregister tensor_empty tensor_retain tensor_release tensor_view
 *   call_op redispatch value_release list_allocate declare_capability set_attribute
 *   error_create tensor_empty_quantized
 * backend (device plugins: their key, device type, random numbers, streams and device
 * activities; loom/sdk/plugin.hpp's Registrar, device.hpp, random.hpp, stream.hpp,
 * trace.hpp's Activity):
 *   register_backend register_device_type find_device_type generator_reserve
 *   current_stream trace_device_event
 * functionality (plugins above the backends, as autograd and the profiler: state on
 * tensors, key bits, key guards, redispatch below themselves, allocation observers, the
 * tracer; loom/sdk/extension.hpp, trace.hpp):
 *   slot_claim tensor_slot_get tensor_slot_set tensor_key_get tensor_key_set
 *   tensor_version local_keys_push local_keys_restore add_allocation_observer
 *   tensor_alias process_keys_include key_set_backend redispatch_with_keys set_tracer
 *   trace_sequence
 * shared (any plugin, and apps through the host: extension tables and trace ranges;
 * loom/sdk/extension.hpp, trace.hpp):
 *   extension_publish extension_find trace_state trace_range_begin trace_range_end
 * ---------------------------------------------------------------------------------- */

typedef struct LoomKeyValue {
  const char* key;   /* borrowed */
  const char* value; /* borrowed */
} LoomKeyValue;

typedef struct LoomHostApi {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* host_version; /* static, e.g. "0.1.0" */

  /* --- operators --- */
  /* Defines an operator from a schema string (PyTorch grammar). The definition is owned
   * by `plugin` and removed when it unloads. out_op: static handle. */
  LoomError* (*define_op)(LoomPluginContext* plugin, const char* schema,
                          const LoomOperator** out_op);
  /* Finds "ns::name" or "ns::name.overload". out_op is NULL when not found (no error). */
  LoomError* (*find_op)(const char* qualified_name, const LoomOperator** out_op);
  const char* (*op_name)(const LoomOperator* op);   /* static; "ns::name.overload" */
  const char* (*op_schema)(const LoomOperator* op); /* static: valid for the process */

  /* --- registration; out_registration may be NULL (the plugin keeps it until unload) --- */
  LoomError* (*register_kernel)(LoomPluginContext* plugin, const LoomOperator* op,
                                uint32_t dispatch_key, LoomKernelFn fn, void* ctx,
                                LoomRegistration** out_registration);
  /* A kernel for every op reaching `dispatch_key` that has no kernel of its own. */
  LoomError* (*register_fallback)(LoomPluginContext* plugin, uint32_t dispatch_key, LoomKernelFn fn,
                                  void* ctx, LoomRegistration** out_registration);
  /* Marks `dispatch_key` as skipped for every op (a functionality key not used). */
  LoomError* (*register_fallthrough)(LoomPluginContext* plugin, uint32_t dispatch_key,
                                     LoomRegistration** out_registration);
  /* Removes exactly this registration; what it replaced becomes visible again. */
  LoomError* (*deregister)(LoomRegistration* registration);
  /* Assigns a vendor backend slot by name (idempotent per plugin and name). */
  LoomError* (*register_backend)(LoomPluginContext* plugin, const char* name,
                                 uint32_t* out_dispatch_key);
  /* Registers a device type served by `backend_key`; `device` is static. Memory of the
   * new device type is allocated through device->allocate. */
  LoomError* (*register_device_type)(LoomPluginContext* plugin, const char* name,
                                     uint32_t backend_key, const LoomDeviceInterface* device,
                                     int16_t* out_device_type);
  LoomError* (*find_device_type)(const char* name, int16_t* out_device_type);

  /* --- tensors --- */
  /* A new uninitialised tensor. strides may be NULL (contiguous). out: owned. */
  LoomError* (*tensor_empty)(const int64_t* sizes, const int64_t* strides, int32_t ndim,
                             int32_t dtype, LoomDevice device, LoomTensor** out);
  void (*tensor_retain)(LoomTensor* t);
  void (*tensor_release)(LoomTensor* t);
  LoomError* (*tensor_view)(LoomTensor* t, LoomTensorView* out);

  /* --- calling ops --- */
  /* Dispatches from the top, like an app call. args borrowed; returns filled, owned. */
  LoomError* (*call_op)(const LoomOperator* op, const LoomValue* args, size_t num_args,
                        LoomValue* returns, size_t num_returns);
  /* Dispatches with an explicit key set (a kernel's call->key_set). */
  LoomError* (*redispatch)(const LoomOperator* op, uint64_t key_set, const LoomValue* args,
                           size_t num_args, LoomValue* returns, size_t num_returns);
  /* Releases what a LoomValue owns (tensor references, list arrays). */
  void (*value_release)(LoomValue* value);
  /* Memory for list returns; freed by the receiver through value_release. */
  void* (*list_allocate)(size_t nbytes);

  /* --- capabilities (docs/architecture.md §4, Capabilities and attributes) --- */
  /* Declares that this plugin's kernel for `op` under `dispatch_key` supports dtypes in
   * `dtype_mask` (bit i = LoomDType i). */
  LoomError* (*declare_capability)(LoomPluginContext* plugin, const LoomOperator* op,
                                   uint32_t dispatch_key, uint64_t dtype_mask);
  /* Key/value attributes, e.g. "driver_version". Strings are copied. */
  LoomError* (*set_attribute)(LoomPluginContext* plugin, const char* key, const char* value);

  /* --- errors created by the host for plugins that have no allocator of their own --- */
  LoomError* (*error_create)(int32_t code, const char* message);

  /* ---------------------------- ABI 1.1 ---------------------------------------------
   * Absent from 1.0 hosts: test LOOM_HAS_FIELD(host, LoomHostApi, generator_reserve). */

  /* --- random numbers (Note [Random stream layout] in loom/sdk/philox.hpp) --- */
  /* Reserves `count` Philox counters from the default generator of device.type (one
   * generator per device type; device.index is ignored): writes the generator's seed and
   * current offset, then advances the offset by `count`, atomically, so concurrent
   * callers get disjoint counter ranges. A kernel reserves once per call, one counter per
   * element, and element i uses counter *out_offset + i. */
  LoomError* (*generator_reserve)(LoomDevice device, uint64_t count, uint64_t* out_seed,
                                  uint64_t* out_offset);

  /* ---------------------------- ABI 1.2 ---------------------------------------------
   * Absent from 1.0 and 1.1 hosts: test LOOM_HAS_FIELD(host, LoomHostApi, slot_claim).
   * Each takes an argument struct (Note [Argument structs]). */

  /* --- per-tensor extension slots: state a plugin attaches to tensors --- */
  LoomError* (*slot_claim)(LoomSlotClaimArgs* args);
  LoomError* (*tensor_slot_get)(LoomTensorSlotArgs* args);
  LoomError* (*tensor_slot_set)(LoomTensorSlotArgs* args);
  /* --- a tensor's functionality key bits (e.g. Autograd when it requires grad) --- */
  LoomError* (*tensor_key_get)(LoomTensorKeyArgs* args);
  LoomError* (*tensor_key_set)(LoomTensorKeyArgs* args);
  /* --- the version counter of a tensor's storage (shared by its views) --- */
  LoomError* (*tensor_version)(LoomTensorVersionArgs* args);
  /* --- thread-local include/exclude key sets (profiling, no-grad) --- */
  LoomError* (*local_keys_push)(LoomLocalKeysArgs* args);
  LoomError* (*local_keys_restore)(const LoomLocalKeysArgs* args);
  /* --- observers of every allocation and free (removed with deregister or unload) --- */
  LoomError* (*add_allocation_observer)(LoomAllocationObserverArgs* args);
  /* --- ABI 1.3: a detached alias of a tensor (see LoomTensorAliasArgs) --- */
  LoomError* (*tensor_alias)(LoomTensorAliasArgs* args);

  /* ---------------------------- ABI 1.4 ---------------------------------------------
   * Absent from older hosts: test LOOM_HAS_FIELD(host, LoomHostApi, process_keys_include). */
  LoomError* (*process_keys_include)(LoomProcessKeysArgs* args);
  LoomError* (*extension_publish)(LoomExtensionArgs* args);
  LoomError* (*extension_find)(LoomExtensionArgs* args);
  LoomError* (*key_set_backend)(LoomKeySetArgs* args);
  /* --- the trace service (Note [Trace service]) --- */
  LoomError* (*set_tracer)(LoomTracerArgs* args); /* ALREADY_EXISTS while another is set */
  LoomError* (*trace_state)(LoomTraceStateArgs* args);
  LoomError* (*trace_range_begin)(LoomTraceRangeArgs* args);
  LoomError* (*trace_range_end)(const LoomTraceRangeArgs* args);
  LoomError* (*trace_sequence)(const LoomTraceSequenceArgs* args);
  LoomError* (*trace_device_event)(const LoomTraceDeviceEventArgs* args);

  /* ---------------------------- ABI 1.5 ---------------------------------------------
   * Absent from older hosts: test LOOM_HAS_FIELD(host, LoomHostApi, current_stream). */
  LoomError* (*current_stream)(LoomCurrentStreamArgs* args);

  /* ---------------------------- ABI 1.6 ---------------------------------------------
   * Absent from older hosts: test LOOM_HAS_FIELD(host, LoomHostApi, redispatch_with_keys). */
  LoomError* (*redispatch_with_keys)(const LoomRedispatchArgs* args);

  /* ---------------------------- ABI 1.10 --------------------------------------------
   * Absent from older hosts: test LOOM_HAS_FIELD(host, LoomHostApi, tensor_empty_quantized).
   * A new uninitialised contiguous tensor of a quantized dtype with a copy of `quantizer`
   * (per channel: scales and zero points of any floating and integer dtype, converted to
   * float64 and int64). INVALID_ARGUMENT naming what is wrong: a dtype that is not
   * quantized, a scale that is not positive and finite, a zero point outside the dtype,
   * an axis out of range or a channel count that is not the size of that dim. */
  LoomError* (*tensor_empty_quantized)(const int64_t* sizes, int32_t ndim, int32_t dtype,
                                       LoomDevice device, const LoomQuantizer* quantizer,
                                       LoomTensor** out);
} LoomHostApi;

/* ------------------------------------------------------------------------------------
 * The plugin's table, returned from the entry point. Static until unload.
 * ---------------------------------------------------------------------------------- */

typedef struct LoomPluginApi {
  size_t struct_size;
  uint32_t abi_major;  /* LOOM_ABI_VERSION_MAJOR the plugin was built with */
  uint32_t abi_minor;  /* the lowest host minor version it needs */
  const char* name;    /* static, [a-z0-9_]+ */
  const char* version; /* static, the plugin's own version */
  /* Registers everything. `plugin` identifies this plugin in host calls and is static
   * until shutdown returns. options: borrowed. On error the host undoes every
   * registration the plugin made and unloads it. */
  LoomError* (*initialize)(LoomPluginContext* plugin, const LoomKeyValue* options,
                           size_t num_options);
  /* Called once before unload, after which no kernel of the plugin is called. */
  LoomError* (*shutdown)(void);
} LoomPluginApi;

/* The exported entry point, named LOOM_PLUGIN_ENTRY_SYMBOL. The plugin may reject the host
 * (e.g. major mismatch) with an error. On success *out_api is the plugin's static table. */
typedef LoomError* (*LoomPluginEntryFn)(const LoomHostApi* host, const LoomPluginApi** out_api);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_PLUGIN_H_ */
