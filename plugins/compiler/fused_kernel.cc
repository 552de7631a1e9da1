// Building kernels into operators and running them.
#include "fused_kernel.h"

#include <sched.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpp_codegen.h"
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
  KernelFn fn = nullptr;
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

// The kernel of one fused program: checks the inputs against it, allocates the outputs
// and runs the generated function.
LoomError* run_kernel(void* ctx, const LoomKernelCall* call) {
  return sdk::catch_all([&] {
    const Kernel& k = *static_cast<const Kernel*>(ctx);
    const std::string name = "[compiled::kernel_" + k.key + "] ";
    const LoomValue& list = call->args[0];
    const size_t count = k.program.inputs.size();
    if (list.tag != LOOM_VALUE_TENSOR_LIST || list.length != count) {
      throw sdk::Error(name + "expected " + std::to_string(count) + " input tensors, found " +
                       std::to_string(list.tag == LOOM_VALUE_TENSOR_LIST ? list.length : 0));
    }
    std::vector<sdk::Tensor> inputs;
    std::vector<int64_t> shape;
    for (size_t i = 0; i < count; ++i) {
      if (list.u.tensors[i] == nullptr)
        throw sdk::Error(name + "input " + std::to_string(i) + " is None");
      inputs.push_back(sdk::Tensor::borrow(list.u.tensors[i]));
      const sdk::Tensor& t = inputs.back();
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
    int64_t numel = 1;
    for (int64_t s : shape) numel *= s;
    const int32_t ndim = static_cast<int32_t>(shape.size());
    std::vector<const void*> data(count);
    std::vector<std::vector<int64_t>> strides(count);
    std::vector<const int64_t*> stride_ptrs(count, nullptr);
    for (size_t i = 0; i < count; ++i) {
      const sdk::Tensor& t = inputs[i];
      data[i] = t.data<const char>();
      switch (k.program.inputs[i].layout) {
        case Layout::Dense:
          if (!t.is_contiguous() || t.numel() != numel || t.dim() != ndim) {
            throw sdk::Error(name + "input " + std::to_string(i) +
                             " was compiled for a contiguous tensor of the kernel's shape " +
                             shape_text(shape) + ", found shape " + shape_text(t.sizes()) +
                             (t.is_contiguous() ? "" : " (not contiguous)"));
          }
          {  // a strided program reads dense inputs through their strides too
            std::vector<int64_t>& s = strides[i];
            s.assign(shape.size(), 0);
            int64_t step = 1;
            for (size_t d = shape.size(); d-- > 0;) {
              s[d] = shape[d] == 1 ? 0 : step;
              step *= shape[d];
            }
            stride_ptrs[i] = s.data();
          }
          break;
        case Layout::Scalar:
          if (t.numel() != 1) {
            throw sdk::Error(name + "input " + std::to_string(i) +
                             " was compiled for one element, found shape " + shape_text(t.sizes()));
          }
          break;
        case Layout::Strided: {
          std::vector<int64_t>& s = strides[i];
          s.assign(shape.size(), 0);
          auto sz = t.sizes();
          auto st = t.strides();
          for (size_t d = 0; d < sz.size(); ++d) {
            if (sz[d] != 1) s[shape.size() - sz.size() + d] = st[d];
          }
          stride_ptrs[i] = s.data();
          break;
        }
      }
    }
    std::vector<sdk::Tensor> outputs;
    std::vector<void*> out_data;
    const size_t first_statement = k.program.inputs.size();
    for (size_t o = 0; o < k.program.outputs.size(); ++o) {
      const int32_t slot = k.program.outputs[o];
      if (const int32_t into = k.program.output_into[o]; into >= 0) {
        // written in place: a dense input of the kernel's shape, checked above
        outputs.push_back(inputs[into]);
        out_data.push_back(outputs.back().data<char>());
        continue;
      }
      std::vector<int64_t> out_shape = shape;
      if (k.row_values[slot]) {  // one value per row: [..., 1], or [...] for keepdim=False
        if (out_shape.empty()) throw sdk::Error(name + "a row kernel needs at least one dimension");
        out_shape.back() = 1;
        const Statement& s = k.program.statements[slot - first_statement];
        if (reduces_to_row(s.op) && s.args.size() > 2 && s.args[2].i == 0) out_shape.pop_back();
      }
      outputs.push_back(
          sdk::empty(out_shape, k.program.slot_dtype(slot), LoomDevice{LOOM_DEVICE_CPU, -1}));
      out_data.push_back(outputs.back().data<char>());
    }
    KernelArgs a{data.data(), stride_ptrs.data(), out_data.data(), shape.data(), numel,
                 ndim,        g_threads};
    if (numel > 0 && k.fn(&a) != 0)
      throw sdk::Error(name + "the kernel failed", LOOM_STATUS_INTERNAL);
    auto** items =
        static_cast<LoomTensor**>(sdk::host().list_allocate(outputs.size() * sizeof(LoomTensor*)));
    if (items == nullptr)
      throw sdk::Error(name + "out of memory returning the outputs",
                       LOOM_STATUS_RESOURCE_EXHAUSTED);
    for (size_t i = 0; i < outputs.size(); ++i) items[i] = outputs[i].release_to_host();
    call->returns[0].tag = LOOM_VALUE_TENSOR_LIST;
    call->returns[0].length = static_cast<uint32_t>(outputs.size());
    call->returns[0].u.tensors = items;
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
    const std::string key = kernel_key(text);
    Kernels& ks = kernels();
    std::lock_guard<std::mutex> lock(ks.mutex);
    if (auto it = ks.by_key.find(key); it != ks.by_key.end()) {
      args->out_op = it->second->op;
      args->out_source = 1;
      args->out_build_ms = 0;
      return;
    }
    const std::string source = generate_cpp(program, key);
    const std::string cache_dir =
        args->cache_dir != nullptr ? args->cache_dir : default_cache_dir();
    const std::string debug_dir = args->debug_dir != nullptr ? args->debug_dir : "";
    BuiltKernel built = build_or_load(key, text, source, cache_dir, debug_dir);
    auto k = std::make_unique<Kernel>();
    k->key = key;
    k->program = std::move(program);
    k->row_values = row_values(k->program);
    k->fn = built.fn;
    bool writes = false;
    for (int32_t into : k->program.output_into) writes = writes || into >= 0;
    const std::string schema = "compiled::kernel_" + key +
                               (writes ? "(Tensor(a!)[] inputs)" : "(Tensor[] inputs)") +
                               " -> Tensor[]";
    const LoomOperator* op = nullptr;
    LoomPluginContext* plugin = sdk::plugin_state().context;
    sdk::check(sdk::host().define_op(plugin, schema.c_str(), &op));
    sdk::check(
        sdk::host().register_kernel(plugin, op, LOOM_KEY_CPU, &run_kernel, k.get(), nullptr));
    k->op = op;
    args->out_op = op;
    args->out_source = built.source;
    args->out_build_ms = built.ms;
    ks.by_key.emplace(key, std::move(k));
  });
}

}  // namespace loom::compiler
