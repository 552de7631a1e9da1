// Building kernels into operators and running them.
#include "fused_kernel.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpp_codegen.h"
#include "cuda_codegen.h"
#include "cuda_libraries.h"
#include "hip_libraries.h"
#include "kernel_program.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/tensor.hpp"
#include "toolchain.h"

namespace loom::compiler {
namespace {

int g_threads = 1;

struct Kernel {
  std::string key;
  Program program;
  std::vector<bool> row_values;  // per slot (Note [Row kernels])
  KernelFn fn = nullptr;         // the CPU kernel
  std::string image;             // a CUDA kernel's cubin or PTX
  std::mutex load_mutex;
  std::vector<void*> functions;  // a CUDA kernel's function per device index, once loaded
  const LoomOperator* op = nullptr;
};

struct Kernels {
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<Kernel>> by_key;
};
Kernels& kernels() {
  static Kernels k;
  return k;
}

std::string shape_text(std::span<const int64_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// A call's inputs checked against the program: dtypes, broadcasting into the kernel's
// shape, layouts; and each non-scalar input's strides over that shape.
struct CheckedCall {
  std::string name;  // "[compiled::kernel_<key>] "
  std::vector<sdk::Tensor> inputs;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  std::vector<std::vector<int64_t>> strides;  // per input (empty for a scalar)
};

CheckedCall check_call(const Kernel& k, const LoomKernelCall* call) {
  CheckedCall c;
  c.name = "[compiled::kernel_" + k.key + "] ";
  const std::string& name = c.name;
  const LoomValue& list = call->args[0];
  const size_t count = k.program.inputs.size();
  if (list.tag != LOOM_VALUE_TENSOR_LIST || list.length != count) {
    throw sdk::Error(name + "expected " + std::to_string(count) + " input tensors, found " +
                     std::to_string(list.tag == LOOM_VALUE_TENSOR_LIST ? list.length : 0));
  }
  std::vector<int64_t>& shape = c.shape;
  for (size_t i = 0; i < count; ++i) {
    if (list.u.tensors[i] == nullptr)
      throw sdk::Error(name + "input " + std::to_string(i) + " is None");
    c.inputs.push_back(sdk::Tensor::borrow(list.u.tensors[i]));
    const sdk::Tensor& t = c.inputs.back();
    if (t.dtype() != k.program.inputs[i].dtype) {
      throw sdk::Error(name + "input " + std::to_string(i) + " was compiled for " +
                       sdk::dtype_name(k.program.inputs[i].dtype) + ", found " +
                       sdk::dtype_name(t.dtype()));
    }
    // broadcast into the kernel's shape
    auto sizes = t.sizes();
    if (sizes.size() > shape.size()) shape.insert(shape.begin(), sizes.size() - shape.size(), 1);
    for (size_t d = 0; d < sizes.size(); ++d) {
      int64_t& s = shape[shape.size() - sizes.size() + d];
      if (s == 1) {
        s = sizes[d];
      } else if (sizes[d] != 1 && sizes[d] != s) {
        throw sdk::Error(name + "input " + std::to_string(i) + " of shape " + shape_text(sizes) +
                         " does not broadcast to " + shape_text(shape));
      }
    }
  }
  // the inputs written into, again (a mutable list: their versions bump, no others')
  size_t written = 0;
  for (int32_t into : k.program.output_into) {
    if (into < 0) continue;
    const LoomValue& w = call->args[1];
    if (w.tag != LOOM_VALUE_TENSOR_LIST || written >= w.length ||
        w.u.tensors[written] != list.u.tensors[into]) {
      throw sdk::Error(name + "expected input " + std::to_string(into) +
                       " again in `written`, as the tensor the kernel writes into");
    }
    ++written;
  }
  for (int64_t s : shape) c.numel *= s;
  const int32_t ndim = static_cast<int32_t>(shape.size());
  c.strides.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const sdk::Tensor& t = c.inputs[i];
    std::vector<int64_t>& s = c.strides[i];
    switch (k.program.inputs[i].layout) {
      case Layout::Dense: {
        if (!t.is_contiguous() || t.numel() != c.numel || t.dim() != ndim) {
          throw sdk::Error(name + "input " + std::to_string(i) +
                           " was compiled for a contiguous tensor of the kernel's shape " +
                           shape_text(shape) + ", found shape " + shape_text(t.sizes()) +
                           (t.is_contiguous() ? "" : " (not contiguous)"));
        }
        // a strided program reads dense inputs through their strides too
        s.assign(shape.size(), 0);
        int64_t step = 1;
        for (size_t d = shape.size(); d-- > 0;) {
          s[d] = shape[d] == 1 ? 0 : step;
          step *= shape[d];
        }
        break;
      }
      case Layout::Scalar:
        if (t.numel() != 1) {
          throw sdk::Error(name + "input " + std::to_string(i) +
                           " was compiled for one element, found shape " + shape_text(t.sizes()));
        }
        break;
      case Layout::Strided: {
        s.assign(shape.size(), 0);
        auto sz = t.sizes();
        auto st = t.strides();
        for (size_t d = 0; d < sz.size(); ++d) {
          if (sz[d] != 1) s[shape.size() - sz.size() + d] = st[d];
        }
        break;
      }
    }
  }
  return c;
}

// The outputs of a call: new contiguous tensors of the kernel's shape (one value per row
// for a row kernel's row values), or the inputs they are written into.
std::vector<sdk::Tensor> make_outputs(const Kernel& k, const CheckedCall& c, LoomDevice device) {
  std::vector<sdk::Tensor> outputs;
  const size_t first_statement = k.program.inputs.size();
  for (size_t o = 0; o < k.program.outputs.size(); ++o) {
    const int32_t slot = k.program.outputs[o];
    if (const int32_t into = k.program.output_into[o]; into >= 0) {
      outputs.push_back(c.inputs[into]);  // a dense input of the kernel's shape: checked
      continue;
    }
    std::vector<int64_t> out_shape = c.shape;
    if (k.row_values[slot]) {  // one value per row: [..., 1], or [...] for keepdim=False
      if (out_shape.empty()) throw sdk::Error(c.name + "a row kernel needs at least one dimension");
      out_shape.back() = 1;
      const Statement& s = k.program.statements[slot - first_statement];
      if (reduces_to_row(s.op) && s.args.size() > 2 && s.args[2].i == 0) out_shape.pop_back();
    }
    outputs.push_back(sdk::empty(out_shape, k.program.slot_dtype(slot), device));
  }
  return outputs;
}

void return_outputs(const CheckedCall& c, std::vector<sdk::Tensor>& outputs,
                    const LoomKernelCall* call) {
  auto** items =
      static_cast<LoomTensor**>(sdk::host().list_allocate(outputs.size() * sizeof(LoomTensor*)));
  if (items == nullptr)
    throw sdk::Error(c.name + "out of memory returning the outputs",
                     LOOM_STATUS_RESOURCE_EXHAUSTED);
  for (size_t i = 0; i < outputs.size(); ++i) items[i] = outputs[i].release_to_host();
  call->returns[0].tag = LOOM_VALUE_TENSOR_LIST;
  call->returns[0].length = static_cast<uint32_t>(outputs.size());
  call->returns[0].u.tensors = items;
}

// The CPU kernel of one fused program: checks the inputs, allocates the outputs and runs
// the generated function.
LoomError* run_kernel(void* ctx, const LoomKernelCall* call) {
  return sdk::catch_all([&] {
    const Kernel& k = *static_cast<const Kernel*>(ctx);
    CheckedCall c = check_call(k, call);
    const size_t count = c.inputs.size();
    std::vector<const void*> data(count);
    std::vector<const int64_t*> stride_ptrs(count, nullptr);
    for (size_t i = 0; i < count; ++i) {
      data[i] = c.inputs[i].data<const char>();
      if (!c.strides[i].empty()) stride_ptrs[i] = c.strides[i].data();
    }
    std::vector<sdk::Tensor> outputs = make_outputs(k, c, LoomDevice{LOOM_DEVICE_CPU, -1});
    std::vector<void*> out_data;
    for (const sdk::Tensor& t : outputs) out_data.push_back(t.data<char>());
    KernelArgs a{data.data(),     stride_ptrs.data(),
                 out_data.data(), c.shape.data(),
                 c.numel,         static_cast<int32_t>(c.shape.size()),
                 g_threads};
    if (c.numel > 0 && k.fn(&a) != 0)
      throw sdk::Error(c.name + "the kernel failed", LOOM_STATUS_INTERNAL);
    return_outputs(c, outputs, call);
  });
}

// The GPU kernel of one fused program (target cuda or hip): the same checks, every input
// on one GPU, and a launch on the caller's current stream (loaded on each device at its
// first call).
LoomError* run_gpu_kernel(void* ctx, const LoomKernelCall* call) {
  return sdk::catch_all([&] {
    Kernel& k = *static_cast<Kernel*>(ctx);
    CheckedCall c = check_call(k, call);
    const LoomDevice device = c.inputs.empty() ? LoomDevice{} : c.inputs[0].device();
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const LoomDevice d = c.inputs[i].device();
      if (d.type != device.type || d.index != device.index || d.type == LOOM_DEVICE_CPU) {
        throw sdk::Error(c.name + "expected every input on one GPU, found input " +
                         std::to_string(i) + " on another device");
      }
    }
    if (c.shape.size() > static_cast<size_t>(kCudaMaxDims)) {
      throw sdk::Error(c.name + "a GPU kernel takes at most " + std::to_string(kCudaMaxDims) +
                       " dimensions, found " + std::to_string(c.shape.size()));
    }
    std::vector<sdk::Tensor> outputs = make_outputs(k, c, device);
    if (c.numel > 0) {
      void* function = nullptr;
      {
        std::lock_guard<std::mutex> lock(k.load_mutex);
        const size_t index = static_cast<size_t>(std::max<int32_t>(device.index, 0));
        if (k.functions.size() <= index) k.functions.resize(index + 1, nullptr);
        if (k.functions[index] == nullptr) {
          k.functions[index] =
              k.program.target == Target::Hip
                  ? hip_load_function(k.image, static_cast<int>(index), kCudaKernelSymbol)
                  : cuda_load_function(k.image, static_cast<int>(index), kCudaKernelSymbol);
        }
        function = k.functions[index];
      }
      // the parameters in generate_cuda's order, each by address
      std::vector<const void*> pointers;
      for (const sdk::Tensor& t : c.inputs) pointers.push_back(t.data<const char>());
      for (const sdk::Tensor& t : outputs) pointers.push_back(t.data<char>());
      std::vector<CudaDims> dims(1);
      for (size_t d = 0; d < c.shape.size(); ++d) dims[0].v[d] = c.shape[d];
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        if (k.program.inputs[i].layout != Layout::Strided) continue;
        dims.emplace_back();
        for (size_t d = 0; d < c.shape.size(); ++d) dims.back().v[d] = c.strides[i][d];
      }
      int32_t ndim = static_cast<int32_t>(c.shape.size());
      int64_t numel = c.numel;
      std::vector<void*> params;
      for (const void*& p : pointers) params.push_back(&p);
      for (CudaDims& d : dims) params.push_back(&d);
      params.push_back(&ndim);
      params.push_back(&numel);
      void* stream = LOOM_HAS_FIELD(call, LoomKernelCall, stream) ? call->stream : nullptr;
      if (k.program.target == Target::Hip) {
        hip_launch(function, device.index, stream, c.numel, params.data());
      } else {
        cuda_launch(function, device.index, stream, c.numel, params.data());
      }
    }
    return_outputs(c, outputs, call);
  });
}

}  // namespace

void configure_threads() {
  const char* raw = std::getenv("LOOM_NUM_THREADS");
  if (raw != nullptr && *raw != '\0') {
    char* end = nullptr;
    long v = std::strtol(raw, &end, 10);
    if (*end == '\0' && v >= 1 && v <= 1024) {
      g_threads = static_cast<int>(v);
      return;
    }
    throw sdk::Error(
        "[compiler] LOOM_NUM_THREADS must be a positive integer of at most 1024, found '" +
        std::string(raw) + "'");
  }
  cpu_set_t set;
  g_threads = sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
}

LoomError* build_kernel(LoomKernelBuildArgs* args) {
  return sdk::catch_all([&] {
    if (args == nullptr || args->struct_size < sizeof(LoomKernelBuildArgs) ||
        args->program == nullptr) {
      throw sdk::Error(
          "[compiler] build_kernel: the arguments are null, too small or have no program");
    }
    const std::string text = args->program;
    Program program = parse_program(text);
    const std::string key =
        program.target == Target::Cpu ? kernel_key(text) : gpu_kernel_key(program.target, text);
    Kernels& ks = kernels();
    std::lock_guard<std::mutex> lock(ks.mutex);
    if (auto it = ks.by_key.find(key); it != ks.by_key.end()) {
      args->out_op = it->second->op;
      args->out_source = 1;
      args->out_build_ms = 0;
      return;
    }
    const std::string debug_dir = args->debug_dir != nullptr ? args->debug_dir : "";
    const std::string cache_dir =
        args->cache_dir != nullptr ? args->cache_dir : default_cache_dir();
    auto k = std::make_unique<Kernel>();
    k->key = key;
    BuiltKernel built;
    if (program.target != Target::Cpu) {
      built = build_gpu(program.target, key, text, generate_cuda(program, key), cache_dir,
                        debug_dir, &k->image);
    } else {
      built = build_or_load(key, text, generate_cpp(program, key), cache_dir, debug_dir);
    }
    k->program = std::move(program);
    k->row_values = row_values(k->program);
    k->fn = built.fn;
    bool writes = false;
    for (int32_t into : k->program.output_into) writes = writes || into >= 0;
    const std::string schema =
        "compiled::kernel_" + key +
        (writes ? "(Tensor[] inputs, Tensor(a!)[] written)" : "(Tensor[] inputs)") + " -> Tensor[]";
    const LoomOperator* op = nullptr;
    LoomPluginContext* plugin = sdk::plugin_state().context;
    sdk::check(sdk::host().define_op(plugin, schema.c_str(), &op));
    if (k->program.target != Target::Cpu) {
      const LoomDispatchKey backend =
          k->program.target == Target::Hip ? LOOM_KEY_HIP : LOOM_KEY_CUDA;
      sdk::check(
          sdk::host().register_kernel(plugin, op, backend, &run_gpu_kernel, k.get(), nullptr));
    } else {
      sdk::check(
          sdk::host().register_kernel(plugin, op, LOOM_KEY_CPU, &run_kernel, k.get(), nullptr));
    }
    k->op = op;
    args->out_op = op;
    args->out_source = built.source;
    args->out_build_ms = built.ms;
    ks.by_key.emplace(key, std::move(k));
  });
}

}  // namespace loom::compiler
