/* loom/autograd_api.h — the autograd plugin's table, published as the extension table
 * "loom.autograd" (LoomHostApi::extension_find). Frontends reach tensors' gradients,
 * backward, hooks and anomaly mode through it; the C++ frontend's Tensor methods
 * (requires_grad_(), backward(), grad(), ...) and loom/autograd.h are built on it.
 *
 * Tensors passed in are borrowed; tensors written to out parameters are owned by the
 * caller (NULL where the answer is "none"). Every function that returns LoomError*
 * returns NULL or an error whose message starts with "[autograd] ". A table found with
 * extension_find is valid while the caller stays inside one read of the host (Note
 * [Lock-free dispatch and safe unload]): look it up for each call.
 *
 * Follows Note [ABI evolution rules]: structs start with struct_size, fields are only
 * appended. */
#ifndef LOOM_AUTOGRAD_API_H_
#define LOOM_AUTOGRAD_API_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_AUTOGRAD_EXTENSION_NAME "loom.autograd"

/* Gradient hooks cross the plugin boundary as C function pointers.
 *   callback(context, grad, &replacement): `grad` is borrowed; a tensor hook may set
 *     *replacement to an owned tensor that replaces the gradient (NULL keeps it); a
 *     post-accumulate hook gets the leaf's accumulated .grad and must leave it NULL.
 *     Returns NULL or an error, which fails the backward that ran the hook.
 *   release(context): called once when the hook is dropped (its tensor's graph died, or
 *     the registration failed). */
typedef LoomError* (*LoomGradHookFn)(void* context, LoomTensor* grad, LoomTensor** replacement);
typedef void (*LoomGradHookRelease)(void* context);

/* One backward pass: backward() accumulates into the leaves' .grad (and into `inputs`'
 * .grad when given); grad() returns the gradients of `inputs` instead. */
typedef struct LoomBackwardArgs {
  size_t struct_size;
  LoomTensor* const* tensors; /* the outputs differentiated */
  size_t num_tensors;
  /* 0, or one per output; a NULL entry: ones, for an output of one element */
  LoomTensor* const* grad_tensors;
  size_t num_grad_tensors;
  LoomTensor* const* inputs; /* backward: 0 means every leaf; grad: at least one */
  size_t num_inputs;
  int32_t retain_graph;
  int32_t create_graph;   /* record the backward itself (higher-order gradients) */
  int32_t allow_unused;   /* grad only: an input the outputs do not use gets NULL */
  LoomTensor** out_grads; /* grad only: num_inputs entries, each owned or NULL */
} LoomBackwardArgs;

/* A custom function's backward (apply_function): grad_outputs[i] is the gradient of
 * output i (borrowed; NULL where none flowed); the function writes num_inputs gradients to
 * grad_inputs (owned; NULL for an input that gets none). */
typedef LoomError* (*LoomFunctionBackwardFn)(void* context, LoomTensor* const* grad_outputs,
                                             size_t num_outputs, LoomTensor** grad_inputs,
                                             size_t num_inputs);

/* apply_function: `outputs` were computed from `inputs` without recording (no grad mode);
 * they become the outputs of one node whose backward is `backward`, as
 * torch.autograd.Function's. Outputs must be new tensors with no history of their own. */
typedef struct LoomFunctionArgs {
  size_t struct_size;
  const char* name;          /* the node's name ("CompiledFunctionBackward") */
  LoomTensor* const* inputs; /* borrowed: the tensors gradients flow to */
  size_t num_inputs;
  LoomTensor* const* outputs; /* borrowed */
  size_t num_outputs;
  LoomFunctionBackwardFn backward;
  /* The plugin owns `context` from the call on: release(context) runs once, when the node
   * is destroyed or the call fails. */
  void* context;
  LoomGradHookRelease release;
} LoomFunctionArgs;

/* Saved-tensor hooks (push_saved_tensor_hooks), as torch.autograd.graph.saved_tensors_hooks:
 *   pack(context, tensor, &packed): `tensor` (borrowed) is what an op saves for backward;
 *     the hook returns an opaque handle, kept instead of the tensor.
 *   unpack(context, packed, &out): backward's read of it; *out must be an owned tensor of
 *     the saved one's shape and dtype.
 *   release_packed(context, packed): once per handle, when the node that kept it is freed.
 *   release(context): once, after the hooks are popped and every handle is released.
 * Hooks run with recording off and no saved-tensor hooks of their own (ones they push
 * apply to the ops they run). */
typedef LoomError* (*LoomPackHookFn)(void* context, LoomTensor* tensor, void** packed);
typedef LoomError* (*LoomUnpackHookFn)(void* context, void* packed, LoomTensor** out);
typedef void (*LoomPackedReleaseFn)(void* context, void* packed);
typedef struct LoomSavedTensorHooks {
  size_t struct_size;
  LoomPackHookFn pack;
  LoomUnpackHookFn unpack;
  LoomPackedReleaseFn release_packed;
  void* context;
  LoomGradHookRelease release;
} LoomSavedTensorHooks;

typedef void (*LoomAutogradTextFn)(void* ctx, const char* text);
typedef void (*LoomAutogradFormulaFn)(void* ctx, const char* op, int32_t differentiable);

typedef struct LoomAutogradApi {
  size_t struct_size;
  /* Leaves of a floating-point dtype only; turning it off needs a leaf. */
  LoomError* (*set_requires_grad)(LoomTensor* self, int32_t requires_grad);
  LoomError* (*requires_grad)(LoomTensor* self, int32_t* out);
  LoomError* (*is_leaf)(LoomTensor* self, int32_t* out);
  /* The accumulated gradient (NULL before any). */
  LoomError* (*grad)(LoomTensor* self, LoomTensor** out);
  /* grad NULL clears it; otherwise it must have self's shape and dtype. */
  LoomError* (*set_grad)(LoomTensor* self, LoomTensor* grad);
  LoomError* (*retain_grad)(LoomTensor* self);
  LoomError* (*retains_grad)(LoomTensor* self, int32_t* out);
  /* A view of self's data that records no history. */
  LoomError* (*detach)(LoomTensor* self, LoomTensor** out);
  /* write(ctx, "MulBackward0"), or "" for a leaf; the text is borrowed for the call. */
  LoomError* (*grad_fn_name)(LoomTensor* self, void* ctx, LoomAutogradTextFn write);
  LoomError* (*backward)(const LoomBackwardArgs* args);
  LoomError* (*grad_of)(const LoomBackwardArgs* args);
  /* The plugin owns `context` from the call on: release(context) runs once, even when
   * the registration fails. */
  LoomError* (*register_hook)(LoomTensor* self, LoomGradHookFn fn, void* context,
                              LoomGradHookRelease release);
  LoomError* (*register_post_accumulate_grad_hook)(LoomTensor* self, LoomGradHookFn fn,
                                                   void* context, LoomGradHookRelease release);
  LoomError* (*set_anomaly_enabled)(int32_t enabled);
  int32_t (*is_anomaly_enabled)(void);
  /* visit(ctx, "loom::mul.Tensor", 1) once per op the plugin records: 1 when it has a
   * backward formula, 0 when its outputs are marked not differentiable. */
  LoomError* (*visit_formulas)(void* ctx, LoomAutogradFormulaFn visit);
  /* Appended (test LOOM_HAS_FIELD(api, LoomAutogradApi, apply_function)): a custom
   * function's node, as LoomFunctionArgs describes. */
  LoomError* (*apply_function)(const LoomFunctionArgs* args);
  /* Appended (test LOOM_HAS_FIELD(api, LoomAutogradApi, reaches)): which of `leaves` the
   * graphs of `roots` lead to: reached[i] = 1 when a backward from the roots could
   * accumulate into leaves[i]'s .grad (a leaf is reached from itself), 0 otherwise (a
   * root that does not require grad reaches nothing; a non-leaf is never reached). What
   * DDP's search for unused parameters walks, as PyTorch's Reducer walks grad_fn's next
   * functions. */
  LoomError* (*reaches)(LoomTensor* const* roots, size_t num_roots, LoomTensor* const* leaves,
                        size_t num_leaves, int32_t* reached);
  /* Appended (test LOOM_HAS_FIELD(api, LoomAutogradApi, pop_saved_tensor_hooks)): saved-tensor
   * hooks for the ops recorded on the calling thread until the matching pop, innermost
   * first. The plugin owns hooks->context from the push on (released even when it fails,
   * unless `hooks` is null or too small to hold `release`); pop fails when this thread has
   * none pushed. */
  LoomError* (*push_saved_tensor_hooks)(const LoomSavedTensorHooks* hooks);
  LoomError* (*pop_saved_tensor_hooks)(void);
} LoomAutogradApi;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_AUTOGRAD_API_H_ */
