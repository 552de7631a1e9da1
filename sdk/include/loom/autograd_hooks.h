/* The contract between the autograd plugin and a frontend for gradient hooks, which
 * cross the plugin boundary as C function pointers (passed as int arguments of
 * autograd::register_hook and autograd::register_post_accumulate_grad_hook).
 *
 *   callback(context, grad, &replacement): `grad` is borrowed; a tensor hook may set
 *     *replacement to an owned tensor that replaces the gradient (NULL keeps it); a
 *     post-accumulate hook gets the leaf's accumulated .grad and must leave it NULL.
 *     Returns NULL or an error, which fails the backward that ran the hook.
 *   release(context): called once when the hook is dropped (its tensor's graph died).
 */
#ifndef LOOM_AUTOGRAD_HOOKS_H_
#define LOOM_AUTOGRAD_HOOKS_H_

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef LoomError* (*LoomGradHookFn)(void* context, LoomTensor* grad, LoomTensor** replacement);
typedef void (*LoomGradHookRelease)(void* context);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_AUTOGRAD_HOOKS_H_ */
