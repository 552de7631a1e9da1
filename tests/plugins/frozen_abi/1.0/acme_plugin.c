/* acme_1_0: a device backend in plain C, written the way the ABI 1.0 plugin guide taught,
 * built against the frozen 1.0 plugin.h beside it.
 * FROZEN: this source is never edited; it is what a vendor's unchanged 1.0 binary does.
 *
 * Its device interface has only device_count, allocate and deallocate; its copy_ kernel,
 * registered for its backend key, moves tensors between the host and its devices. Device
 * memory is host memory (two simulated devices). float32 kernels, any strides: add.out,
 * mul.out, fill_ and copy_ (src broadcast to self's shape). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/plugin.h"

#define ACME_DEVICES 2
#define ACME_MAX_DIMS 16

static const LoomHostApi* g_host = NULL;
static int16_t g_device_type = -1;

static LoomError* fail(const char* op, const char* what) {
  char message[256];
  snprintf(message, sizeof(message), "[%s] acme_1_0: %s", op, what);
  return g_host->error_create(LOOM_STATUS_INVALID_ARGUMENT, message);
}

static LoomError* device_count(void* ctx, int32_t* out) {
  (void)ctx;
  *out = ACME_DEVICES;
  return NULL;
}

static LoomError* allocate(void* ctx, int32_t index, size_t nbytes, void** out) {
  (void)ctx;
  if (index < 0 || index >= ACME_DEVICES) return fail("allocate", "device index out of range");
  *out = malloc(nbytes == 0 ? 1 : nbytes);
  if (*out == NULL)
    return g_host->error_create(LOOM_STATUS_RESOURCE_EXHAUSTED, "[acme_1_0] out of memory");
  return NULL;
}

static void deallocate(void* ctx, int32_t index, void* ptr, size_t nbytes) {
  (void)ctx;
  (void)index;
  (void)nbytes;
  free(ptr);
}

static LoomDeviceInterface g_interface;

/* A float32 tensor argument read for a loop over `out_dims` dims: its first element and
 * its strides aligned to the right, 0 on broadcast dims. */
typedef struct Operand {
  float* data;
  int64_t strides[ACME_MAX_DIMS];
} Operand;

static LoomError* view_of(const char* op, const LoomValue* v, LoomTensorView* view) {
  if (v->tag != LOOM_VALUE_TENSOR) return fail(op, "expected a tensor argument");
  memset(view, 0, sizeof(*view));
  view->struct_size = sizeof(LoomTensorView);
  LoomError* err = g_host->tensor_view(v->u.tensor, view);
  if (err != NULL) return err;
  if (view->dtype != LOOM_DTYPE_FLOAT32) return fail(op, "only float32 tensors are supported");
  if (view->dl.ndim > ACME_MAX_DIMS) return fail(op, "too many dims");
  return NULL;
}

static LoomError* operand(const char* op, const LoomTensorView* t, const LoomTensorView* out,
                          Operand* o) {
  int32_t n = out->dl.ndim, m = t->dl.ndim;
  if (m > n) return fail(op, "an input of more dims than the output");
  o->data = (float*)((char*)t->dl.data + t->dl.byte_offset);
  for (int32_t d = 0; d < n; ++d) o->strides[d] = 0;
  for (int32_t d = 0; d < m; ++d) {
    int32_t od = n - m + d;
    if (t->dl.shape[d] == out->dl.shape[od]) {
      o->strides[od] = t->dl.strides[d];
    } else if (t->dl.shape[d] != 1) {
      return fail(op, "shapes do not broadcast");
    }
  }
  return NULL;
}

/* out[i] = f(a[i], b[i], s) over out's elements (b may be NULL). */
typedef float (*Combine)(float x, float y, float s);

static void loop(const LoomTensorView* out, const Operand* a, const Operand* b, Combine f,
                 float s) {
  int64_t index[ACME_MAX_DIMS] = {0};
  float* o = (float*)((char*)out->dl.data + out->dl.byte_offset);
  int32_t n = out->dl.ndim;
  for (int64_t i = 0; i < out->numel; ++i) {
    int64_t oo = 0, oa = 0, ob = 0;
    for (int32_t d = 0; d < n; ++d) {
      oo += index[d] * out->dl.strides[d];
      oa += index[d] * (a ? a->strides[d] : 0);
      ob += index[d] * (b ? b->strides[d] : 0);
    }
    o[oo] = f(a ? a->data[oa] : 0.0f, b ? b->data[ob] : 0.0f, s);
    for (int32_t d = n; d-- > 0;) {
      if (++index[d] < out->dl.shape[d]) break;
      index[d] = 0;
    }
  }
}

static float add_fn(float x, float y, float s) {
  return x + s * y;
}
static float mul_fn(float x, float y, float s) {
  (void)s;
  return x * y;
}
static float first_fn(float x, float y, float s) {
  (void)y;
  (void)s;
  return x;
}
static float fill_fn(float x, float y, float s) {
  (void)x;
  (void)y;
  return s;
}

static double scalar_value(const LoomValue* v) {
  return v->tag == LOOM_VALUE_DOUBLE ? v->u.d : (double)v->u.i;
}

static LoomError* return_arg(const LoomKernelCall* call, size_t index) {
  g_host->tensor_retain(call->args[index].u.tensor);
  call->returns[0] = call->args[index];
  return NULL;
}

/* add.out(self, other, *, alpha, out) and mul.out(self, other, *, out) */
static LoomError* binary_out(void* ctx, const LoomKernelCall* call) {
  const int is_add = ctx != NULL;
  const char* op = is_add ? "add" : "mul";
  size_t out_index = is_add ? 3 : 2;
  LoomTensorView a, b, out;
  Operand oa, ob;
  LoomError* err;
  if ((err = view_of(op, &call->args[0], &a)) || (err = view_of(op, &call->args[1], &b)) ||
      (err = view_of(op, &call->args[out_index], &out)))
    return err;
  if (out.device.type != g_device_type) return fail(op, "out must be on acme_1_0");
  if ((err = operand(op, &a, &out, &oa)) || (err = operand(op, &b, &out, &ob))) return err;
  loop(&out, &oa, &ob, is_add ? add_fn : mul_fn,
       is_add ? (float)scalar_value(&call->args[2]) : 1.0f);
  return return_arg(call, out_index);
}

static LoomError* fill_kernel(void* ctx, const LoomKernelCall* call) {
  (void)ctx;
  LoomTensorView self;
  LoomError* err = view_of("fill_", &call->args[0], &self);
  if (err != NULL) return err;
  loop(&self, NULL, NULL, fill_fn, (float)scalar_value(&call->args[1]));
  return return_arg(call, 0);
}

/* copy_(self, src, non_blocking): host -> device, device -> host, device -> device. */
static LoomError* copy_kernel(void* ctx, const LoomKernelCall* call) {
  (void)ctx;
  LoomTensorView self, src;
  Operand os;
  LoomError* err;
  if ((err = view_of("copy_", &call->args[0], &self)) ||
      (err = view_of("copy_", &call->args[1], &src)))
    return err;
  if (self.device.type != g_device_type && src.device.type != g_device_type)
    return fail("copy_", "one side of a copy must be on acme_1_0");
  if ((err = operand("copy_", &src, &self, &os))) return err;
  loop(&self, &os, NULL, first_fn, 0.0f);
  return return_arg(call, 0);
}

static LoomError* register_kernel(LoomPluginContext* plugin, const char* name, uint32_t key,
                                  LoomKernelFn fn, void* ctx) {
  const LoomOperator* op = NULL;
  LoomError* err = g_host->find_op(name, &op);
  if (err != NULL) return err;
  if (op == NULL) return fail("acme_1_0", "an operator it needs is not defined");
  if ((err = g_host->register_kernel(plugin, op, key, fn, ctx, NULL))) return err;
  return g_host->declare_capability(plugin, op, key, (uint64_t)1 << LOOM_DTYPE_FLOAT32);
}

static LoomError* initialize(LoomPluginContext* plugin, const LoomKeyValue* options,
                             size_t num_options) {
  (void)options;
  (void)num_options;
  static int add_tag = 1;
  uint32_t key = 0;
  LoomError* err = g_host->register_backend(plugin, "acme_1_0", &key);
  if (err != NULL) return err;
  memset(&g_interface, 0, sizeof(g_interface));
  g_interface.struct_size = sizeof(LoomDeviceInterface);
  g_interface.device_count = device_count;
  g_interface.allocate = allocate;
  g_interface.deallocate = deallocate;
  if ((err = g_host->register_device_type(plugin, "acme_1_0", key, &g_interface, &g_device_type)) ||
      (err = register_kernel(plugin, "loom::add.out", key, binary_out, &add_tag)) ||
      (err = register_kernel(plugin, "loom::mul.out", key, binary_out, NULL)) ||
      (err = register_kernel(plugin, "loom::fill_.Scalar", key, fill_kernel, NULL)) ||
      (err = register_kernel(plugin, "loom::copy_", key, copy_kernel, NULL)))
    return err;
  return g_host->set_attribute(plugin, "sdk_abi", "1.0");
}

static LoomError* shutdown(void) {
  return NULL;
}

static const LoomPluginApi kApi = {sizeof(LoomPluginApi),
                                   LOOM_ABI_VERSION_MAJOR,
                                   LOOM_ABI_VERSION_MINOR,
                                   "acme_1_0",
                                   "1.0.0",
                                   initialize,
                                   shutdown};

LOOM_PLUGIN_EXPORT LoomError* loom_plugin_entry(const LoomHostApi* host,
                                                const LoomPluginApi** out_api) {
  g_host = host;
  *out_api = &kApi;
  return NULL;
}
