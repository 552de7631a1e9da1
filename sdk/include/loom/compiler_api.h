/* loom/compiler_api.h — the compiler plugin's table, published as the extension table
 * "loom.compiler" (LoomHostApi::extension_find). loom::compile (loom/compile.h) is built
 * on it: the plugin captures the op calls a function makes (a fallback on the Tracer key)
 * and builds fused kernels from their programs (Note [Fused kernel programs] below) into
 * operators the graph then calls; the graph library does the rest (graphs, passes,
 * guards).
 *
 * Every function that returns LoomError* returns NULL or an error whose message starts
 * with "[compiler] ". A table found with extension_find is valid while the caller stays
 * inside one read of the host: look it up for each call.
 *
 * Follows Note [ABI evolution rules]: structs start with struct_size, fields are only
 * appended.
 *
 * Note [Fused kernel programs]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A fused kernel is described as text, one statement per line, so the program is its own
 * cache key and can be read in LOOM_COMPILE_DEBUG's files:
 *
 *   loom-kernel 1
 *   target cuda                optional: where it runs (cpu, the default, cuda or hip)
 *   in a0 float32 dense        inputs in order: dtype and layout
 *   in a1 float32 scalar
 *   v2 float32 float32 = loom::mul.Tensor a0 #2
 *   v3 float32 float32 = loom::add.Tensor v2 a1 #1
 *   out v3
 *
 * A statement names its value, its dtype and the dtype it computes in (a comparison
 * computes in its operands' promoted dtype and gives bool), then the operator and every
 * argument of its schema in order: a value (a0, v2), or a constant: #2, #-1.5, #true,
 * #none, or a string "tanh". Layouts: `dense` (contiguous, the kernel's full shape),
 * `scalar` (one element, read for every place) and `strided` (any strides, broadcast
 * to the kernel's shape). Every statement is elementwise over the kernel's shape, the
 * broadcast of the inputs' shapes, which is known only when it runs; each `out` is a
 * new contiguous tensor of that shape. `out v8 into a5` writes the value into dense input
 * a5 instead (of the value's dtype; each element is read before it is written) and
 * returns that input: an in-place update. The operator runs as
 * `compiled::kernel_<hash>(Tensor[] inputs) -> Tensor[]` on the target's backend (CPU,
 * or CUDA or HIP with every input on one GPU); a program that writes into inputs takes
 * them again in a second list, `(Tensor[] inputs, Tensor(a!)[] written)`, in the order of
 * its `out ... into` lines, so that their versions bump and no other input's do. A GPU
 * kernel is element-wise only (no row operators).
 */
#ifndef LOOM_COMPILER_API_H_
#define LOOM_COMPILER_API_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_COMPILER_EXTENSION_NAME "loom.compiler"

/* One op call made while capturing, in the order the calls began (a call before the
 * calls made inside it). Everything is borrowed for the duration of the visit: the
 * arguments as the op received them, and its returns. The tensors stay alive until
 * capture_end returns, so a tensor is identified by its handle. */
typedef struct LoomCapturedCall {
  size_t struct_size;
  const LoomOperator* op;
  const LoomValue* args;
  size_t num_args;
  const LoomValue* returns;
  size_t num_returns;
  int64_t index;        /* its place in the visit order, from 0 */
  int64_t parent;       /* the call it was made inside (an index), or -1 at the top */
  int64_t num_children; /* the calls made directly inside it */
} LoomCapturedCall;

typedef void (*LoomCaptureVisitFn)(void* ctx, const LoomCapturedCall* call);

typedef struct LoomKernelBuildArgs {
  size_t struct_size;
  const char* program;   /* Note [Fused kernel programs] */
  const char* cache_dir; /* the disk cache; NULL: $LOOM_CACHE_DIR or ~/.cache/loom/compile;
                            "": no disk cache */
  const char* debug_dir; /* NULL: none; otherwise the program and its source are written there */
  const LoomOperator* out_op; /* the operator that runs the kernel */
  int32_t out_source;         /* 0: built now, 1: this process had it, 2: the disk cache */
  double out_build_ms;        /* the time spent building (or loading) it */
} LoomKernelBuildArgs;

typedef void (*LoomCompilerTextFn)(void* ctx, const char* text);

typedef struct LoomCompilerApi {
  size_t struct_size;
  /* Starts recording the op calls of the calling thread (FAILED_PRECONDITION when it is
   * recording already). The ops still run. */
  LoomError* (*capture_begin)(void);
  /* Stops recording on the calling thread and visits each recorded call, in order; the
   * records are dropped afterwards, also when visit is NULL. */
  LoomError* (*capture_end)(void* ctx, LoomCaptureVisitFn visit);
  /* Builds the kernel of a program (or finds it built) and returns its operator. */
  LoomError* (*build_kernel)(LoomKernelBuildArgs* args);
  /* visit(ctx, "loom::sin") once per operator a program may use. */
  LoomError* (*visit_fusible_ops)(void* ctx, LoomCompilerTextFn visit);
  /* Writes the C++ compiler the plugin uses ("g++ 12.2.0 (/usr/bin/c++)") and the flags
   * that go into every kernel's cache key, or fails naming what was looked for. */
  LoomError* (*toolchain)(void* ctx, LoomCompilerTextFn write);
} LoomCompilerApi;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_COMPILER_API_H_ */
