/* loom/autograd_hooks.h — kept for code written before the "loom.autograd" table:
 * the hook callback types now live in loom/autograd_api.h. */
#ifndef LOOM_AUTOGRAD_HOOKS_H_
#define LOOM_AUTOGRAD_HOOKS_H_

#include "loom/autograd_api.h"

#endif /* LOOM_AUTOGRAD_HOOKS_H_ */
